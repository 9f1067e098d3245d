import { describe, expect, it } from 'vitest';
import { releaseStartupMemory, supportsMemoryReducingGc, type GcFunction } from '../../src/release-memory.js';

describe('releaseStartupMemory', () => {
  it.each([
    ['v20.20.2', false],
    ['v21.7.3', false],
    ['v22.0.0', true],
    ['v26.10.0', true],
    ['garbage', false],
  ])('on %s: a memory-reducing collection is %s', (version, runs) => {
    expect(supportsMemoryReducingGc(version)).toBe(runs);
    const calls: unknown[] = [];
    const gc: GcFunction = (options) => void calls.push(options);
    expect(releaseStartupMemory(version, () => gc)).toBe(runs);
    expect(calls).toEqual(runs ? [{ type: 'major', execution: 'sync', flavor: 'last-resort' }] : []);
  });

  it('runs on this Node without exposing gc on the global object', () => {
    expect(releaseStartupMemory()).toBe(supportsMemoryReducingGc(process.version));
    expect('gc' in globalThis).toBe(false);
  });
});
