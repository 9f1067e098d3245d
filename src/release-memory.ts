/**
 * Hands back, once the sidecar is up, the young generation that loading the snapshots grew. Parsing and compiling
 * a project's definitions leaves megabytes of surviving objects, and V8 grows its new space with what survives
 * (1 → 8 MiB at 1,000 flags); on Node 22+ nothing shrinks it again while the process idles (measured on Node 26:
 * 8 MiB committed 15 s after start and later, ~9 MiB of RSS). One memory-reducing full collection right after start
 * (V8's "last resort" flavor: what its memory reducer runs, done at once) gives it back: about 25 ms, once, before
 * the first request is likely. Node 20's V8 has no such flavor (there a plain full collection grows the new space
 * instead), and its own memory reducer shrinks the new space some seconds after start-up: nothing is done there.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** V8's gc() of `--expose-gc`, with the options it takes on Node 22+. */
export type GcFunction = (options?: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/** Whether this Node's V8 takes the "last-resort" flavor (Node 22+). */
export const supportsMemoryReducingGc = (nodeVersion: string): boolean => Number(/^v?(\d+)\./.exec(nodeVersion)?.[1] ?? 0) >= 22;

/** V8's gc function, from a fresh context: the process's own global gets none. */
export function exposedGc(): GcFunction {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as GcFunction;
}

/** Run one memory-reducing full collection where the Node supports it; whether it ran. */
export function releaseStartupMemory(nodeVersion: string = process.version, gc: () => GcFunction = exposedGc): boolean {
  if (!supportsMemoryReducingGc(nodeVersion)) return false;
  gc()({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  return true;
}
