/**
 * Fleet-wide read-your-writes: a sidecar that forwarded a write tells the others which project and resource it
 * changed (keys.invalidationChannel), and every other sidecar drops what it cached of it and re-polls.
 *
 * - `announce` publishes one message per project; it never rejects and never waits on Redis beyond the command
 *   timeout (a write's reply is never failed or held up by Redis). While Redis is down nothing is sent: the other
 *   sidecars then see the write after their own TTLs, as without fleet mode.
 * - Received messages are validated (invalidation-message.ts); refused ones are counted
 *   (`flag_sidecar_fleet_invalidations_total{direction="ignored"}`) and logged once per reason. A sidecar's own
 *   messages are skipped by instance id.
 * - After every (re)connection to Redis this sidecar may have missed messages, so the `onReconnect` listeners
 *   run (they drop every project's cached reads and runs). The subscription is made again after a connection if
 *   an earlier attempt failed.
 */
import type { WrittenResource } from '../http/routes/write-resource.js';
import type { Logger } from '../logger.js';
import type { FleetMetrics } from '../metrics/fleet-metrics.js';
import { decodeInvalidation, encodeInvalidation, type InvalidationMessage, type RefusedReason } from './invalidation-message.js';
import type { FleetRedis } from './redis.js';

/** Dependencies of createInvalidation. */
export interface InvalidationDeps {
  readonly redis: FleetRedis;
  readonly channel: string;
  readonly metrics: FleetMetrics;
  readonly instanceId: string;
  readonly logger: Logger;
  /** Whether this sidecar serves a project (messages about others are refused). */
  readonly knownProject: (projectId: number) => boolean;
}

/** Create the invalidation channel's sender and receiver; call `start()` once. */
export function createInvalidation(deps: InvalidationDeps) {
  const { redis, metrics, logger } = deps;
  const listeners: Array<(message: InvalidationMessage) => void> = [];
  const reconnectListeners: Array<() => void> = [];
  const logged = new Set<RefusedReason | 'publish'>();
  let subscription: 'none' | 'pending' | 'active' = 'none';

  function receive(raw: Buffer): void {
    const decoded = decodeInvalidation(raw, deps.knownProject);
    if (!decoded.ok) {
      metrics.invalidations.inc({ direction: 'ignored' });
      if (!logged.has(decoded.reason)) {
        logged.add(decoded.reason);
        logger.warn({ reason: decoded.reason, bytes: raw.length }, 'ignored an invalid fleet invalidation message (logged once per reason)');
      }
      return;
    }
    if (decoded.message.origin === deps.instanceId) return;
    metrics.invalidations.inc({ direction: 'received' });
    for (const listener of listeners) listener(decoded.message);
  }

  function subscribe(): void {
    if (subscription !== 'none') return;
    subscription = 'pending';
    redis.subscribe(deps.channel, receive).then(
      () => void (subscription = 'active'),
      (error: Error) => {
        subscription = 'none';
        logger.debug({ err: error.message }, 'invalidation subscription failed; retried at the next connection');
      },
    );
  }

  return {
    /** Subscribe (now, and again after a connection if that failed) and watch for reconnections. */
    start(): void {
      redis.onReady(() => {
        subscribe();
        for (const listener of reconnectListeners) listener();
      });
      subscribe();
    },

    /** Tell the other sidecars that `resource` of each of `projectIds` changed. Never rejects. */
    async announce(projectIds: readonly number[], resource: WrittenResource): Promise<void> {
      if (!redis.up()) return;
      await Promise.all(
        projectIds.map(async (project) => {
          try {
            await redis.publish(deps.channel, encodeInvalidation({ project, resource, origin: deps.instanceId }));
            metrics.invalidations.inc({ direction: 'sent' });
            logged.delete('publish');
          } catch (error) {
            if (!logged.has('publish')) logger.warn({ err: (error as Error).message }, 'could not publish a fleet invalidation; other sidecars see the write after their TTLs');
            logged.add('publish');
          }
        }),
      );
    },

    /** Call `listener` for each valid message from another sidecar. */
    onMessage(listener: (message: InvalidationMessage) => void): void {
      listeners.push(listener);
    },

    /** Call `listener` after every (re)connection to Redis, when messages may have been missed. */
    onReconnect(listener: () => void): void {
      reconnectListeners.push(listener);
    },
  };
}

/** The invalidation handle. */
export type Invalidation = ReturnType<typeof createInvalidation>;
