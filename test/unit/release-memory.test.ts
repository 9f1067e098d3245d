import { describe, expect, it, vi } from 'vitest';
import { keepTickShape, scheduleStartupCollections, startupCollections, type GcOptions } from '../../src/release-memory.js';

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

  // A collection made with the tick queue empty cleared Node 20's tick-object classes, and process.nextTick's
  // literal then paid V8's runtime on every tick (docs/benchmarks.md, issue 19): a tick stays queued across each.
  it.each(['v20.20.2', 'v22.0.0'])('on %s, a tick is queued when each collection runs', (version) => {
    const timers: Array<() => void> = [];
    const queuedAtCollection: number[] = [];
    let queued = 0;
    const spy = vi.spyOn(process, 'nextTick').mockImplementation(((callback: () => void) => {
      if (callback === keepTickShape) queued += 1;
    }) as typeof process.nextTick);
    try {
      scheduleStartupCollections(version, () => () => void queuedAtCollection.push(queued), (run) => void timers.push(run));
      for (const run of timers) run();
    } finally {
      spy.mockRestore();
    }
    expect(queuedAtCollection).toEqual(startupCollections(version).map((_, i) => i + 1));
  });
});
