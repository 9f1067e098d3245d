/**
 * The built entry point — `scripts/build.mjs`'s dist/main.js, what the image runs — compiled from the current
 * src/ into a scratch directory (so never a stale build), for tests that start sidecar processes by the dozen. A
 * start of the bundle costs ~0.2 s of CPU against ~0.75 s for src/main.ts under tsx (its loader resolving and
 * transforming ~150 modules), which on a 2-core CI machine is most of such a test's time. Tests about the command
 * as `npm start` runs it keep src/main.ts under tsx (spawn-sidecar.ts).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { rootDir } from './start-sidecar.js';

/**
 * Build dist/ into a scratch directory before the file's tests (removed after them); returns the node arguments
 * that start it, filled in by the time the tests run. Call at the top level of a test file.
 */
export function builtEntry(): string[] {
  const args: string[] = [];
  let scratch: string | null = null;
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'flag-sidecar-built-'));
    execFileSync(process.execPath, [join(rootDir, 'scripts/build.mjs'), join(scratch, 'dist')], { cwd: rootDir, stdio: 'inherit' });
    // As the image holds it (cli.test.ts): package.json (the version), config/ (the examples), and node_modules for
    // undici and @redis/client, which stay outside the bundle.
    cpSync(join(rootDir, 'package.json'), join(scratch, 'package.json'));
    cpSync(join(rootDir, 'config'), join(scratch, 'config'), { recursive: true });
    symlinkSync(join(rootDir, 'node_modules'), join(scratch, 'node_modules'));
    args.push(join(scratch, 'dist/main.js'));
  }, 60_000);
  afterAll(() => {
    if (scratch !== null) rmSync(scratch, { recursive: true, force: true });
  });
  return args;
}
