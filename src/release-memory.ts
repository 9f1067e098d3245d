/**
 * Hands back, once the sidecar is up, the young generation that loading and compiling the snapshots grew. They
 * leave megabytes of surviving objects, and V8 grows its new space with what survives (1 → 8 MiB committed at
 * 1,000 flags, ~7 MiB of RSS). V8 itself gives it back only in a collection made while the allocation rate is low:
 * - Node 22+ (V8 12+): never while the process idles (Node 26: 8 MiB committed 15 s after start and later). One
 *   memory-reducing full collection (the "last resort" flavor: what V8's memory reducer runs), 1 s after start,
 *   gives it back at once: ~25 ms, once.
 * - Node 20 (V8 11.3, no such flavor; a full collection made while the rate is high grows the new space instead):
 *   its memory reducer does, 9 to 18 s after start, depending on when its rate check falls. Two plain full
 *   collections 6 s after start (5 s with nothing allocated: the rate V8 looks at is over the last 5 s; the second
 *   sees the first's quiet sample) do it then.
 * Measured in docs/benchmarks.md as of c3f48ec, "Footprint and start-up". They wait for a quiet second: a collection made while
 * traffic flows gives back nothing traffic does not take again at once, pauses requests, and on Node 20 made V8
 * drop the optimized code of the whole request path (~72 functions, node's HTTP and streams code and the
 * sidecar's listener: "weak objects"), re-optimized only after some hundreds of requests.
 */
import { createHook } from 'node:async_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** The options V8's gc() of `--expose-gc` takes on Node 22+. */
export interface GcOptions {
  readonly type: 'major';
  readonly execution: 'sync';
  readonly flavor: 'last-resort';
}

/** V8's gc() of `--expose-gc`. */
export type GcFunction = (options?: GcOptions) => void;

/** One collection: when (ms after start) and with which options (none: a plain full collection). */
export interface StartupCollection {
  readonly atMs: number;
  readonly options?: GcOptions;
}

const lastResort: GcOptions = { type: 'major', execution: 'sync', flavor: 'last-resort' };

/** The collections made after start on this Node (its major version from `nodeVersion`, e.g. `v20.20.2`). */
export function startupCollections(nodeVersion: string): readonly StartupCollection[] {
  const major = Number(/^v?(\d+)\./.exec(nodeVersion)?.[1] ?? 0);
  if (major >= 22) return [{ atMs: 1000, options: lastResort }];
  if (major >= 20) return [{ atMs: 6000 }, { atMs: 6200 }];
  return [];
}

/**
 * V8's cumulative inlining budget for one optimized function, in bytecode bytes (V8's default: 920). Doubled, node's
 * HTTP path inlines into its callers in the sidecar as it does in a bare server (the IncomingMessage constructor into
 * parserOnHeadersComplete, writeHead, EventEmitter.init): 3.3–4.0% less CPU per snapshot 304 and cached
 * read-through hit, side by side with the build before it (docs/benchmarks.md as of c3f48ec, "V8's inlining budget raised at
 * start"). Node refuses the flag in NODE_OPTIONS, so it is set here, at start (this module: V8's state set once at
 * start, for the life of the process).
 */
export const inliningBudget = 1840;

/**
 * Set V8's inlining budget (inliningBudget) unless node was started with one (`execArgv`, the operator's choice).
 * Call it before the request path is optimized: the budget applies to functions optimized after it.
 */
export function raiseInliningBudget(execArgv: readonly string[]): boolean {
  if (execArgv.some((arg) => arg.startsWith('--max-inlined-bytecode-size-cumulative') || arg.startsWith('--max_inlined_bytecode_size_cumulative'))) return false;
  setFlagsFromString(`--max-inlined-bytecode-size-cumulative=${inliningBudget}`);
  return true;
}

/** V8's gc function, from a fresh context: the process's own global gets none. */
export function exposedGc(): GcFunction {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as GcFunction;
}

/**
 * One of Node's tick objects (what `process.nextTick` queues: an object literal with symbol keys), held for
 * the life of the process so that its hidden classes never die. A full collection made while no tick object is
 * alive (the tick queue is empty whenever the process waits for I/O) clears them: V8's own collections do it
 * (the one that loading the snapshots triggers ~1.5 s after start, the memory reducer's while the process idles,
 * and the startup collections below). The next tick then makes new ones, the literal's inline caches go
 * polymorphic, then megamorphic for good, and every tick after defines its symbol keys in V8's runtime: ~8% of
 * a cached read-through hit's CPU on Node 20 (a node:http request takes ~5 ticks; docs/benchmarks.md as of c3f48ec, issue 19).
 */
let heldTick: object | null = null;

/** The tick object holdTickShape holds (null before it runs), for tests. */
export const heldTickObject = (): object | null => heldTick;

/**
 * Capture one tick object and hold it (once; later calls do nothing). Call it first thing, before loading makes
 * V8 collect: the object comes from an async hook's `init`, enabled only around one `process.nextTick`.
 */
export function holdTickShape(): void {
  if (heldTick !== null) return;
  const hook = createHook({
    init(_asyncId, type, _triggerAsyncId, resource) {
      if (type === 'TickObject' && heldTick === null) heldTick = resource as object;
    },
  });
  hook.enable();
  try {
    process.nextTick(noop);
  } finally {
    hook.disable();
  }
}

const noop = (): void => {};

/** A second with more requests than this is not quiet: the collections wait for the next one. */
export const busyRequestsPerSecond = 10;

/**
 * Schedule this Node's collections (timers that never keep the process up). `requests`: how many requests the
 * sidecar has taken so far. The collections run as planned when the second before the first one took at most
 * busyRequestsPerSecond requests; else they move on by a second, checked again, for as long as it takes (a
 * sidecar busy for good never makes them: traffic keeps the young generation in use anyway).
 */
export function scheduleStartupCollections(
  nodeVersion: string = process.version,
  gcOf: () => GcFunction = exposedGc,
  setTimer: (run: () => void, ms: number) => void = (run, ms) => void setTimeout(run, ms).unref(),
  requests: () => number = () => 0,
): void {
  const plan = startupCollections(nodeVersion);
  if (plan.length === 0) return;
  // Its collections run with the tick queue empty (see holdTickShape).
  holdTickShape();
  let gc: GcFunction | null = null;
  const collect = (options: GcOptions | undefined): void => {
    gc ??= gcOf();
    if (options === undefined) gc();
    else gc(options);
  };
  const firstAt = (plan[0] as StartupCollection).atMs;
  let counted = 0;
  const check = (): void => {
    const now = requests();
    if (now - counted > busyRequestsPerSecond) {
      counted = now;
      setTimer(check, 1000);
      return;
    }
    collect(plan[0]?.options);
    for (let i = 1; i < plan.length; i++) {
      const { atMs, options } = plan[i] as StartupCollection;
      setTimer(() => collect(options), atMs - firstAt);
    }
  };
  // The count a second before the first collection (at once if that is sooner).
  const sample = (): void => {
    counted = requests();
    setTimer(check, Math.min(1000, firstAt));
  };
  if (firstAt > 1000) setTimer(sample, firstAt - 1000);
  else sample();
}
