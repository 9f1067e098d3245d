import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { busyRequestsPerSecond, heldTickObject, holdTickShape, inliningBudget, raiseInliningBudget, scheduleStartupCollections, startupCollections, type GcOptions } from '../../src/release-memory.js';

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

  it('holds one of process.nextTick\'s tick objects, the same one on every call', () => {
    holdTickShape();
    const held = heldTickObject();
    expect(held).not.toBeNull();
    // Node's tick object: the callback and its arguments beside symbol-keyed ids (Node 26 adds a third symbol, its
    // async context frame).
    expect(typeof (held as { callback?: unknown }).callback).toBe('function');
    expect(Object.getOwnPropertySymbols(held).map((symbol) => symbol.description)).toEqual(expect.arrayContaining(['async_id_symbol', 'trigger_async_id_symbol']));
    holdTickShape();
    expect(heldTickObject()).toBe(held);
  });

  // A full collection made with the tick queue empty cleared Node 20's tick-object classes, and process.nextTick's
  // literal then paid V8's runtime on every tick for good (docs/benchmarks.md as of c3f48ec, issue 19). The held tick keeps them:
  // a tick made after such collections (from timers, the queue empty) still has the held one's class.
  it('keeps the tick objects\' hidden class across full collections made with the tick queue empty', () => {
    const script = `
      const { createHook } = await import('node:async_hooks');
      const { holdTickShape, heldTickObject } = await import('./src/release-memory.ts');
      holdTickShape();
      const collectAfter = (ms) => new Promise((resolve) => setTimeout(() => { gc(); resolve(); }, ms));
      for (let i = 0; i < 3; i++) await collectAfter(5);
      let fresh = null;
      const hook = createHook({ init(_id, type, _trigger, resource) { if (type === 'TickObject') fresh ??= resource; } }).enable();
      process.nextTick(() => {});
      hook.disable();
      console.log(JSON.stringify({ captured: fresh !== null, sameClass: %HaveSameMap(heldTickObject(), fresh) }));`;
    const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: process.cwd(),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(JSON.parse(out)).toEqual({ captured: true, sameClass: true });
  });
});

describe("V8's inlining budget", () => {
  // V8's cachedDataVersionTag is derived from its flags: it changes exactly when a flag is set to a new value.
  it('is left alone when node was started with one (the operator chose it)', async () => {
    const { cachedDataVersionTag } = await import('node:v8');
    const before = cachedDataVersionTag();
    expect(raiseInliningBudget(['--max-inlined-bytecode-size-cumulative=500'])).toBe(false);
    expect(raiseInliningBudget(['--max_inlined_bytecode_size_cumulative=500'])).toBe(false);
    expect(cachedDataVersionTag()).toBe(before);
  });

  it(`is set to ${inliningBudget} otherwise, and V8 takes it`, () => {
    // In a fresh process: this one's flags stay as the test runner set them.
    const script = `import { cachedDataVersionTag } from 'node:v8';
      import { raiseInliningBudget } from './src/release-memory.ts';
      const before = cachedDataVersionTag();
      const set = raiseInliningBudget(['--inspect-brk=0']);
      console.log(JSON.stringify({ set, changed: cachedDataVersionTag() !== before }));`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('../..', import.meta.url)), encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ set: true, changed: true });
    expect(inliningBudget).toBeGreaterThan(920); // V8's default: the point is to raise it
  });
});
