/**
 * src/http/node-http.ts raises V8's polymorphic limit before node:http loads: node:events' EventEmitter.init (and
 * _addListener), inlined into node:http's per-request code, meet more emitter classes in the sidecar's process than
 * V8's default of 4, and past it every request ran megamorphic lookups there (docs/benchmarks.md as of c3f48ec, "Read paths").
 * A child process (V8's natives syntax to read the inline caches) loads the module, then builds emitters of seven
 * classes, as many as the sidecar's start gives EventEmitter.init; its receiver loads must stay polymorphic. The
 * module is transpiled by esbuild for the child (it imports only node builtins): under `--import tsx` the child's
 * exit loses part of what V8 printed.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { transformSync } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { rootDir } from '../support/start-sidecar.js';

const dir = mkdtempSync(join(tmpdir(), 'node-http-polymorphic-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The IC states of EventEmitter.init's property loads after emitters of seven classes, `module` loaded first. */
function initLoadStates(module: string): string[] {
  const script = `
import { EventEmitter } from 'node:events';
await import(${JSON.stringify(module)});
%EnsureFeedbackVectorForFunction(EventEmitter.init);
const classes = [class A extends EventEmitter {}, class B extends EventEmitter {}, class C extends EventEmitter {},
  class D extends EventEmitter {}, class E extends EventEmitter {}, class F extends EventEmitter {}, class G extends EventEmitter {}];
for (const K of classes) new K();
%DebugPrint(EventEmitter.init);
`;
  const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], { cwd: rootDir, encoding: 'utf8' });
  return [...out.matchAll(/slot #\d+ LoadProperty (\w+)/g)].map((m) => m[1] as string).filter((state) => state !== 'UNINITIALIZED');
}

describe('node:http loaded with a raised polymorphic limit', () => {
  const module = (): string => {
    const source = readFileSync(join(rootDir, 'src/http/node-http.ts'), 'utf8');
    const file = join(dir, 'node-http.mjs');
    writeFileSync(file, transformSync(source, { loader: 'ts', format: 'esm' }).code);
    return pathToFileURL(file).href;
  };
  const node20 = process.versions.node.startsWith('20.');

  it('raises the limit on Node 20 (EventEmitter.init polymorphic with seven classes) and nowhere else', () => {
    // Elsewhere V8 keeps its default: changing a flag at run time costs node its built-in code cache.
    const states = initLoadStates(module());
    if (node20) {
      expect(states).toContain('POLYMORPHIC');
      expect(states).not.toContain('MEGAMORPHIC');
    } else {
      expect(states).toContain('MEGAMORPHIC');
    }
  });

  it('(without it, V8 goes megamorphic past four classes)', () => {
    expect(initLoadStates('node:http')).toContain('MEGAMORPHIC');
  });
});
