import { describe, expect, it, vi } from 'vitest';
import { busyRequestsPerSecond, keepTickShape, scheduleStartupCollections, startupCollections, type GcOptions } from '../../src/release-memory.js';

const lastResort = { type: 'major', execution: 'sync', flavor: 'last-resort' };

/** Timers on a virtual clock: `run()` fires them in time order (later ones they set included) until none is left or `until`. */
function virtualTimers() {
  let now = 0;
  const pending: Array<{ at: number; run: () => void }> = [];
  return {
    now: () => now,
    set: (run: () => void, ms: number): void => void pending.push({ at: now + ms, run }),
    run(until = Number.POSITIVE_INFINITY): void {
      for (;;) {
        pending.sort((a, b) => a.at - b.at);
        const next = pending[0];
        if (next === undefined || next.at > until) return;
        pending.shift();
        now = next.at;
        next.run();
      }
    },
  };
}

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
    const calls: Array<GcOptions | undefined> = [];
    let made = 0;
    const gcOf = () => {
      made += 1;
      return (options?: GcOptions) => void calls.push(options);
    };
    const clock = virtualTimers();
    scheduleStartupCollections(version, gcOf, clock.set);
    expect(made).toBe(0); // nothing before the first timer
    clock.run();
    expect(calls).toEqual(expected.map((c) => ('options' in c ? c.options : undefined)));
    expect(made).toBe(expected.length > 0 ? 1 : 0);
  });

  it.each(['v20.20.2', 'v26.10.0'])('on %s, with no traffic: each collection at its planned time', (version) => {
    const clock = virtualTimers();
    const at: number[] = [];
    scheduleStartupCollections(version, () => () => void at.push(clock.now()), clock.set, () => 0);
    clock.run();
    expect(at).toEqual(startupCollections(version).map((c) => c.atMs));
  });

  it.each(['v20.20.2', 'v26.10.0'])('on %s, waits for a quiet second, then collects as planned', (version) => {
    const clock = virtualTimers();
    const at: number[] = [];
    // 50 requests a second until 20 s after start, then a trickle of one a second.
    const requests = (): number => (clock.now() <= 20_000 ? Math.floor(clock.now() / 20) : 1000 + Math.floor((clock.now() - 20_000) / 1000));
    scheduleStartupCollections(version, () => () => void at.push(clock.now()), clock.set, requests);
    clock.run(19_999);
    expect(at).toEqual([]);
    clock.run();
    const plan = startupCollections(version);
    const first = at[0] as number;
    expect(first).toBeGreaterThan(20_000);
    expect(first).toBeLessThanOrEqual(22_000);
    expect(at).toEqual(plan.map((c) => first + c.atMs - (plan[0] as { atMs: number }).atMs));
  });

  it('a second with exactly the busy threshold of requests counts as quiet', () => {
    const clock = virtualTimers();
    const at: number[] = [];
    const requests = (): number => Math.floor((clock.now() / 1000) * busyRequestsPerSecond);
    scheduleStartupCollections('v26.10.0', () => () => void at.push(clock.now()), clock.set, requests);
    clock.run();
    expect(at).toEqual([1000]);
  });

  it('a sidecar busy for good never collects', () => {
    const clock = virtualTimers();
    const at: number[] = [];
    const requests = (): number => Math.floor(clock.now() / 10); // 100 a second
    scheduleStartupCollections('v20.20.2', () => () => void at.push(clock.now()), clock.set, requests);
    clock.run(600_000);
    expect(at).toEqual([]);
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
