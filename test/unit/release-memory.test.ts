import { describe, expect, it } from 'vitest';
import { scheduleStartupCollections, startupCollections, type GcOptions } from '../../src/release-memory.js';

const lastResort = { type: 'major', execution: 'sync', flavor: 'last-resort' };

describe('collections after start', () => {
  it.each([
    ['v18.20.0', []],
    ['v20.20.2', [{ atMs: 6000 }, { atMs: 6200 }]],
    ['v21.7.3', [{ atMs: 6000 }, { atMs: 6200 }]],
    ['v22.0.0', [{ atMs: 1000, options: lastResort }]],
    ['v26.10.0', [{ atMs: 1000, options: lastResort }]],
    ['garbage', []],
  ])('on %s: %j', (version, expected) => {
    expect(startupCollections(version)).toEqual(expected);
    const timers: Array<[() => void, number]> = [];
    const calls: Array<GcOptions | undefined> = [];
    let made = 0;
    const gcOf = () => {
      made += 1;
      return (options?: GcOptions) => void calls.push(options);
    };
    scheduleStartupCollections(version, gcOf, (run, ms) => void timers.push([run, ms]));
    expect(timers.map(([, ms]) => ms)).toEqual(expected.map((c) => c.atMs));
    expect(made).toBe(0); // nothing before the first timer
    for (const [run] of timers) run();
    expect(calls).toEqual(expected.map((c) => ('options' in c ? c.options : undefined)));
    expect(made).toBe(expected.length > 0 ? 1 : 0);
  });

  it('collects on this Node without exposing gc on the global object', () => {
    const runs: Array<() => void> = [];
    scheduleStartupCollections(process.version, undefined, (run) => void runs.push(run));
    for (const run of runs) run();
    expect('gc' in globalThis).toBe(false);
  });
});
