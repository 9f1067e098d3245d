/**
 * The memory of keys upstream answered absent (src/eval/absent-keys.ts): per definitions, per runtime and
 * evaluation contexts, for a bounded time, and bounded in size.
 */
import { describe, expect, it } from 'vitest';
import { createAbsentKeys, type AbsentScope } from '../../src/eval/absent-keys.js';
import { compileDefinitions } from '../../src/eval/compile.js';

const server: AbsentScope = { runtime: 'server', contexts: null };
const defs = compileDefinitions({ flags: [] });
const later = compileDefinitions({ flags: [] });

// [name, what is asked after remembering 'gone' under `server` at t=0 with a 1,000 ms lifetime, expected]
const cases: Array<[string, { defs?: typeof defs; scope?: AbsentScope; key?: string; at?: number }, boolean]> = [
  ['the same key, scope and definitions', {}, true],
  ['just before the lifetime ends', { at: 999 }, true],
  ['once the lifetime has passed', { at: 1000 }, false],
  ['another key', { key: 'other' }, false],
  ['another runtime', { scope: { runtime: 'client', contexts: null } }, false],
  ['an unknown runtime', { scope: { runtime: null, contexts: null } }, false],
  ['with evaluation contexts', { scope: { runtime: 'server', contexts: ['web'] } }, false],
  ['newer definitions', { defs: later }, false],
];

describe('keys upstream answered absent', () => {
  it.each(cases)('%s', (_name, asked, expected) => {
    const absent = createAbsentKeys({ maxKeys: 10, ttlMs: 1000 });
    absent.remember(defs, server, ['gone'], 0);
    expect(absent.has(asked.defs ?? defs, asked.scope ?? server, asked.key ?? 'gone', asked.at ?? 1)).toBe(expected);
  });

  it('contexts are one scope whatever their order', () => {
    const absent = createAbsentKeys({ maxKeys: 10, ttlMs: 1000 });
    absent.remember(defs, { runtime: 'all', contexts: ['a', 'b'] }, ['gone'], 0);
    expect(absent.has(defs, { runtime: 'all', contexts: ['b', 'a'] }, 'gone', 1)).toBe(true);
  });

  it('keeps at most maxKeys per definitions, forgetting the oldest first', () => {
    const absent = createAbsentKeys({ maxKeys: 3, ttlMs: 1000 });
    absent.remember(defs, server, ['a', 'b', 'c'], 0);
    absent.remember(defs, server, ['a'], 0); // asked again: now the newest
    absent.remember(defs, server, ['d'], 0);
    expect(['a', 'b', 'c', 'd'].map((key) => absent.has(defs, server, key, 1))).toEqual([true, false, true, true]);
  });

  it('remembers nothing with maxKeys 0', () => {
    const absent = createAbsentKeys({ maxKeys: 0, ttlMs: 1000 });
    absent.remember(defs, server, ['a'], 0);
    expect(absent.has(defs, server, 'a', 1)).toBe(false);
  });
});
