/**
 * node:http is required (src/http/node-http.ts), never imported as a value: on Node 26 an ES import of node:http
 * reads every export to build the namespace, and its lazy getters load node's bundled undici (~5 MiB of idle RSS
 * at 1,000 flags: docs/benchmarks.md as of c3f48ec, "Footprint and start-up", third pass). `import type` is erased and fine.
 */
import { createRequire } from 'node:module';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { http } from '../../src/http/node-http.js';
import { rootDir } from '../support/start-sidecar.js';

/** Whether a source text imports a value (not only types) from node:http or http. */
export function importsHttpValue(source: string): boolean {
  for (const match of source.matchAll(/\bimport\s+(type\s+)?([^;]*?)\s*from\s*['"](?:node:)?http['"]/g)) {
    if (match[1] !== undefined) continue;
    const names = /\{([^}]*)\}/.exec(match[2] as string);
    // `import { type A, type B } from` imports no value either.
    if (names && (names[1] as string).split(',').every((n) => n.trim() === '' || n.trim().startsWith('type '))) continue;
    return true;
  }
  return /\bimport\s*\(\s*['"](?:node:)?http['"]|\bimport\s+['"](?:node:)?http['"]/.test(source);
}

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );

describe('node:http without an ES import', () => {
  it.each([
    ["import { createServer } from 'node:http';", true],
    ["import { request } from 'http';", true],
    ["import * as http from 'node:http';", true],
    ["import http from 'node:http';", true],
    ["import { createServer, type Server } from 'node:http';", true],
    ["const http = await import('node:http');", true],
    ["import 'node:http';", true],
    ["import type { IncomingMessage } from 'node:http';", false],
    ["import type * as Http from 'node:http';", false],
    ["import { type IncomingMessage, type Server } from 'node:http';", false],
    ["import { request } from 'node:https';", false],
    ["import { http } from './node-http.js';", false],
  ])('%s → %s', (source, expected) => {
    expect(importsHttpValue(source)).toBe(expected);
  });

  it('src/ imports node:http only as types', () => {
    const offenders = sourceFiles(join(rootDir, 'src')).filter((file) => importsHttpValue(readFileSync(file, 'utf8')));
    expect(offenders.map((file) => file.slice(rootDir.length))).toEqual([]);
  });

  it('src/http/node-http.ts is node:http itself', () => {
    expect(http).toBe(createRequire(import.meta.url)('node:http'));
  });
});
