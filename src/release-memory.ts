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
 * Measured in docs/benchmarks.md, "Footprint and start-up". They wait for a quiet second: a collection made while
 * traffic flows gives back nothing traffic does not take again at once, pauses requests, and on Node 20 made V8
 * drop the optimized code of the whole request path (~72 functions, node's HTTP and streams code and the
 * sidecar's listener: "weak objects"), re-optimized only after some hundreds of requests.
 */
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

/** V8's gc function, from a fresh context: the process's own global gets none. */
export function exposedGc(): GcFunction {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as GcFunction;
}

/**
 * Queued (a no-op) just before each collection, so that one of Node's tick objects is alive while it runs. Made
 * from a timer with the tick queue empty, a full collection on Node 20 cleared the hidden classes of Node's tick
 * objects (nothing held them), and the next `process.nextTick` made new ones: its object literal's inline cache
 * went megamorphic for good, and every tick after paid V8's runtime for each of its two symbol-keyed properties
 * (~35k instructions more per `POST /flags` at 30 flags, docs/benchmarks.md issue 19; a node:http request takes
 * ~5 ticks).
 */
export function keepTickShape(): void {}

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
  let gc: GcFunction | null = null;
  const collect = (options: GcOptions | undefined): void => {
    gc ??= gcOf();
    // A tick queued across the collection keeps a tick object alive (see keepTickShape).
    process.nextTick(keepTickShape);
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
