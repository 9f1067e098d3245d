/**
 * The fleet's size as a leader counts it: the sidecars subscribed to the snapshot channel, which every sidecar of
 * this prefix and upstream subscribes to (PUBSUB NUMSUB). Only leaders count, at most once per `refreshMs`, so the
 * count costs followers nothing and the fleet one command per interval per leader. Followers learn it from the
 * head and keep the last one seen for a Redis outage (fleet-budget.ts).
 *
 * In a Redis Cluster a subscriber is counted by the node it is connected to only, and NUMSUB answers for the node
 * asked, so the count there is about the fleet's size divided by the number of nodes (docs/operations.md).
 * Never rejects: a failed count keeps the last one.
 */
import type { FleetRedis } from './redis.js';

/** Dependencies of createFleetSizeCounter. */
export interface FleetSizeDeps {
  readonly redis: FleetRedis;
  readonly channel: string;
  readonly refreshMs: number;
  readonly now: () => number;
}

/** The subscriber count of `channel` in a NUMSUB reply, or null when the reply is not one. Pure. */
export function parseNumsub(reply: unknown, channel: string): number | null {
  if (!Array.isArray(reply) || reply.length !== 2 || String(reply[0]) !== channel) return null;
  const count = Number(reply[1]);
  return Number.isSafeInteger(count) && count >= 0 ? count : null;
}

/** Create the counter. */
export function createFleetSizeCounter(deps: FleetSizeDeps) {
  let last: { readonly size: number; readonly at: number } | null = null;

  return {
    /** The fleet's size, counted again when the last count is older than `refreshMs`; null when never counted. */
    async count(): Promise<number | null> {
      if (last !== null && deps.now() - last.at < deps.refreshMs) return last.size;
      try {
        const size = parseNumsub(await deps.redis.command('fleet_size', ['PUBSUB', 'NUMSUB', deps.channel]), deps.channel);
        if (size !== null) last = { size, at: deps.now() };
      } catch {
        // counted and logged by the client; the last count stands
      }
      return last?.size ?? null;
    },
  };
}
