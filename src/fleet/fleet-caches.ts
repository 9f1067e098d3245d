/**
 * Fleet mode's part for the caches (issue 16 items 4 and 5): fleet-wide invalidation after writes and shared
 * endpoint runs, on the fleet context. Created by app.ts only in fleet mode.
 *
 * - `announce` (called by a sidecar that forwarded a write, before its reply) first retires the endpoint's
 *   shared runs when the write was to an endpoint, then tells the other sidecars; it never rejects, and waits on
 *   Redis at most about one command timeout (when the retire fails, nothing is published).
 * - `listen` applies the other sidecars' messages to this sidecar's caches, and asks for a re-poll of the
 *   project (`repoll`) after a flag write; after every (re)connection to Redis it drops every project's cached
 *   reads and runs (messages may have been missed meanwhile).
 */
import type { WrittenResource } from '../http/routes/write-resource.js';
import { endpointOf } from '../http/routes/write-resource.js';
import type { Logger } from '../logger.js';
import type { Fleet } from './fleet.js';
import { createInvalidation } from './invalidation.js';
import { createSharedRuns } from './shared-runs.js';

/** Dependencies of createFleetCaches. */
export interface FleetCachesDeps {
  readonly fleet: Fleet;
  readonly logger: Logger;
  readonly now: () => number;
  readonly random: () => number;
  /** Whether this sidecar serves a project. */
  readonly knownProject: (projectId: number) => boolean;
  /** Re-poll a project's definitions (the poller's pollNow; in fleet mode the leader polls). */
  readonly repoll: (projectId: number) => Promise<void>;
}

/** What a sidecar's caches do when another sidecar's write arrives, or messages may have been missed. */
export interface CacheInvalidator {
  /** Drop what is cached of `resource` of `projectId`. */
  invalidate(projectId: number, resource: WrittenResource): void;
  /** Drop every project's cached reads and runs. */
  dropAll(): void;
}

/** Create the fleet's cache part; call `listen` once, then `start`. */
export function createFleetCaches(deps: FleetCachesDeps) {
  const { fleet, logger } = deps;
  const invalidation = createInvalidation({
    redis: fleet.redis,
    channel: fleet.keys.invalidationChannel,
    metrics: fleet.metrics,
    instanceId: fleet.instanceId,
    logger,
    knownProject: deps.knownProject,
  });
  const runs = createSharedRuns({ redis: fleet.redis, keys: fleet.keys, integrity: fleet.integrity, metrics: fleet.metrics, logger, now: deps.now, random: deps.random });
  return {
    /** The shared endpoint runs and grants. */
    runs,
    /** After a write that may have applied: retire shared runs it changed, then tell the other sidecars. Never rejects. */
    async announce(projectIds: readonly number[], resource: WrittenResource): Promise<void> {
      const endpoint = endpointOf(resource);
      // Retired first, so that no sidecar told of the write finds the old result in Redis. When Redis did not take
      // it (down or hung), it is not waited on a second time.
      if (endpoint !== null && !(await Promise.all(projectIds.map((id) => runs.retire(id, endpoint)))).every(Boolean)) return;
      await invalidation.announce(projectIds, resource);
    },
    /** Apply other sidecars' invalidations to `caches` (and re-poll after flag writes). */
    listen(caches: CacheInvalidator): void {
      invalidation.onMessage(({ project, resource }) => {
        caches.invalidate(project, resource);
        if (resource === 'flags') deps.repoll(project).catch((error: Error) => logger.warn({ project, err: error.message }, 're-poll after a fleet invalidation failed'));
      });
      invalidation.onReconnect(() => caches.dropAll());
    },
    /** Subscribe to the channel (in the background; never waits for Redis). */
    start(): void {
      invalidation.start();
    },
  };
}

/** The fleet's cache part. */
export type FleetCaches = ReturnType<typeof createFleetCaches>;
