/**
 * Static cohorts as app.ts builds them: on when there is an upstream and FLAG_SIDECAR_STATIC_COHORT_MAX_PERSONS is
 * not 0; their metrics; refreshed after each healthy cycle of a project (a follower's loaded snapshot included);
 * and in fleet mode shared through Redis by the project's leader (fleet/static-cohort-share.ts, loaded only then).
 */
import type { Config } from '../config/load.js';
import type { Fleet } from '../fleet/fleet.js';
import type { SnapshotRelay } from '../fleet/snapshot-relay.js';
import type { Logger } from '../logger.js';
import type { Registry } from '../metrics/prom.js';
import { createStaticCohortMetrics } from '../metrics/static-cohort-metrics.js';
import type { CompiledDefinitionsOf } from '../store/compiled.js';
import type { UpstreamClient } from './client.js';
import type { PollControl } from './poller.js';
import { createStaticCohorts, type StaticCohortFleet, type StaticCohorts } from './static-cohorts.js';

/** What the static cohorts are built from. */
export interface StaticCohortSetup {
  readonly config: Config;
  readonly definitions: CompiledDefinitionsOf;
  readonly upstream: UpstreamClient | null;
  readonly polling: PollControl | null;
  readonly registry: Registry;
  readonly logger: Logger;
  readonly now: () => number;
  readonly random: () => number;
  readonly fleet: Fleet | null;
  readonly relay: SnapshotRelay | null;
}

/** The static cohorts, refreshed after each healthy cycle; null when off. */
export async function setUpStaticCohorts(input: StaticCohortSetup): Promise<StaticCohorts | null> {
  const { config, upstream, fleet, relay } = input;
  if (upstream === null || config.upstream === null || config.staticCohortMaxPersons <= 0) return null;
  const metrics = createStaticCohortMetrics(input.registry);
  let shared: StaticCohortFleet | null = null;
  if (fleet !== null && relay !== null) {
    const share = (await import('../fleet/static-cohort-share.js')).createStaticCohortShare({
      redis: fleet.redis,
      keys: fleet.keys,
      maxPersons: config.staticCohortMaxPersons,
      logger: input.logger,
      integrity: fleet.integrity,
    });
    shared = {
      role: (projectId) => relay.status(projectId).role,
      async publish(projectId, cohorts) {
        const lease = relay.leaseValue(projectId);
        if (lease !== null) await share.publish(projectId, lease, cohorts);
      },
      load: (projectId) => share.load(projectId),
    };
  }
  const cohorts = createStaticCohorts({
    client: upstream,
    ownKey: config.upstream.key,
    definitions: input.definitions,
    logger: input.logger,
    maxPersons: config.staticCohortMaxPersons,
    upstreamPath: config.upstream.url.pathname.replace(/\/$/, ''),
    refreshMs: config.staticCohorts.refreshMs,
    rereadMs: config.staticCohorts.rereadMs,
    deadlineMs: config.staticCohorts.pullTimeoutMs,
    now: input.now,
    random: input.random,
    metrics,
    fleet: shared,
  });
  metrics.observe(() => cohorts.gauges());
  input.polling?.onHealthyCycle((projectId) => void cohorts.refresh(projectId));
  return cohorts;
}
