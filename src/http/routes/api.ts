/**
 * The API listener's route table: the public evaluation endpoints (/flags, /decide: a project token, no key; the
 * OpenFeature OFREP routes, routes/ofrep.ts),
 * the SDK paths (snapshot-served local_evaluation), then the flag API, whose `:id` routes must come after the
 * literal local_evaluation path, and the key introspection that a sidecar behind this one asks. Every other
 * route name here has an access rule in auth/scopes.ts (a test builds this table and checks).
 */
import type { Config } from '../../config/load.js';
import { createAbsentKeys } from '../../eval/absent-keys.js';
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics/metrics.js';
import { createReadThroughCache, type ReadThroughCache } from '../../store/read-through.js';
import type { Store } from '../../store/store.js';
import type { UpstreamClient } from '../../upstream/client.js';
import type { PollControl } from '../../upstream/poller.js';
import { definitionMark } from '../../upstream/definition-mark.js';
import { createRemoteConfigWarmer } from '../../upstream/remote-config-warmer.js';
import { createWriteSync } from '../../upstream/write-sync.js';
import type { StaticCohorts } from '../../upstream/static-cohorts.js';
import type { Route } from '../router.js';
import type { Access } from './access.js';
import { createCompiledDefinitions, type CompiledDefinitionsOf } from '../../store/compiled.js';
import { endpointRoutes } from './endpoints.js';
import { keyIntrospectionRoute } from './key-introspection.js';
import type { AnswerCache } from '../answer-cache.js';
import { createLeftOutOffline } from '../offline-left-out.js';
import { createEvaluationRoutes } from './evaluate.js';
import { createWriteRoutes } from './flag-writes.js';
import { flagRoutes } from './flags.js';
import { ofrepRoutes } from './ofrep.js';
import { createReadThroughRoutes } from './read-through.js';
import { remoteConfigHandler } from './remote-config.js';
import { sdkRoutes } from './sdk.js';
import type { Drain } from '../drain.js';
import type { FleetCaches } from '../../fleet/fleet-caches.js';
import { endpointOf } from './write-resource.js';

/** Most flag keys remembered as answered absent by upstream, per snapshot (eval/absent-keys.ts). */
const absentKeysPerSnapshot = 10_000;

/** What the API routes are built from. */
export interface ApiRouteDeps {
  readonly config: Config;
  readonly store: Store;
  readonly access: Access;
  readonly cache: ReadThroughCache;
  /** Whole /flags answers kept for bodies sent again; null: off (FLAG_SIDECAR_FLAGS_ANSWER_CACHE_MAX_BYTES=0). */
  readonly answers?: AnswerCache | null;
  /** null offline. */
  readonly upstream: UpstreamClient | null;
  /** Polling as the routes see it (pollNow after a write, ensurePlain, healthy cycles); null offline. */
  readonly poller: PollControl | null;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly now: () => number;
  /** Shutdown state: no write starts while draining, and one started is waited for. */
  readonly drain?: Drain;
  /** Fleet mode: invalidations to and from the other sidecars, shared endpoint runs. */
  readonly fleetCaches?: FleetCaches | null;
  /** The projects' compiled definitions (store/compiled.ts); made here when absent. */
  readonly definitions?: CompiledDefinitionsOf;
  /** Static cohort members pulled from upstream (upstream/static-cohorts.ts); null or absent: none. */
  readonly staticCohorts?: StaticCohorts | null;
  /** Milliseconds until the remembered upstream answer about a key (by digest) expires (auth/introspect.ts); null offline. */
  readonly keyExpiresIn?: ((digest: string) => number | null) | null;
}

/** Every API route, in matching order. */
export function apiRoutes(deps: ApiRouteDeps): Route[] {
  const { config, store, access, cache, upstream, poller, logger, metrics, now } = deps;
  const reads = createReadThroughRoutes({
    access,
    cache,
    client: upstream,
    upstreamPath: config.upstream ? config.upstream.url.pathname.replace(/\/$/, '') : '',
    selfAddress: `${config.listen.host.includes(':') ? `[${config.listen.host}]` : config.listen.host}:${config.listen.port}`,
  });
  const sync = poller
    ? createWriteSync({ store, pollNow: (id) => poller.pollNow(id), timeoutMs: config.writeSyncTimeoutMs, now })
    : null;
  const warmer =
    upstream && poller && config.upstream
      ? createRemoteConfigWarmer({
          client: upstream,
          ownKey: config.upstream.key,
          now,
          logger,
          maxEntries: 256,
          idleMs: 10 * config.pollIntervalMs,
          staleMaxMs: config.cache.staleMaxMs,
          mark: (id, flag) => definitionMark(store.get(id), flag),
        })
      : null;
  if (warmer && poller) poller.onHealthyCycle((id) => void warmer.refresh(id));
  const invalidate = (id: number): void => {
    cache.invalidate(id);
    warmer?.drop(id);
  };
  const fleetCaches = deps.fleetCaches ?? null;
  const writes = createWriteRoutes({
    access,
    invalidate,
    announce: fleetCaches ? (ids, resource) => fleetCaches.announce(ids, resource) : undefined,
    store,
    client: upstream,
    sync,
    maxBodyBytes: config.maxRequestBodyBytes,
    logger,
    metrics,
    drain: deps.drain,
  });
  const ttl = { okMs: config.cache.ttlMs, notFoundMs: config.cache.notFoundTtlMs };
  const definitions = deps.definitions ?? createCompiledDefinitions(store);
  const staticCohorts = deps.staticCohorts ?? null;
  const evaluation = createEvaluationRoutes({
    store,
    definitions,
    access,
    upstream,
    upstreamTimeoutMs: Math.min(config.upstream?.timeoutMs ?? 3000, 3000),
    maxBodyBytes: config.maxRequestBodyBytes,
    metrics,
    now,
    readThroughReasons: reads.handler('flag_evaluation_reasons', ttl),
    absentKeys: createAbsentKeys({ maxKeys: absentKeysPerSnapshot, ttlMs: config.pollIntervalMs }),
    staticCohorts,
    answers: deps.answers ?? null,
    ...(upstream === null ? { leftOutOffline: createLeftOutOffline({ store, logger }) } : {}),
  });
  const runLookups = metrics.cacheLookups.of('endpoint_run');
  const runs = createReadThroughCache({
    maxBytes: config.endpoints.runMaxBytes,
    maxEntries: config.cache.maxEntries,
    staleMaxMs: config.cache.staleMaxMs,
    now,
    observe: (result) => void (runLookups[result] += 1),
  });
  const endpoints = endpointRoutes(
    {
      access,
      store,
      reads,
      writes,
      cache,
      runs,
      client: upstream,
      ttl,
      versionTtlMs: config.endpoints.versionTtlMs,
      runTtlMs: config.endpoints.runTtlMs,
      grantTtlMs: config.auth.ttlMs,
      maxBodyBytes: config.maxRequestBodyBytes,
      metrics,
      now,
      shared: fleetCaches?.runs ?? null,
    },
    config.endpoints.metricNames,
  );
  // Another sidecar's write: drop what this one cached of it (its re-poll is asked for by the fleet part).
  fleetCaches?.listen({
    invalidate(projectId, resource) {
      invalidate(projectId);
      const endpoint = endpointOf(resource);
      if (endpoint !== null) endpoints.retire(projectId, endpoint);
    },
    dropAll() {
      for (const id of store.projectIds()) {
        invalidate(id);
        runs.invalidate(id);
      }
    },
  });
  return [
    ...evaluation.routes,
    ...ofrepRoutes({
      store,
      access,
      definitions,
      evaluate: evaluation.evaluate,
      requireKey: config.ofrepRequireKey,
      online: upstream !== null,
      maxBodyBytes: config.maxRequestBodyBytes,
      pollIntervalMs: config.pollIntervalMs,
    }),
    ...sdkRoutes({
      store,
      access,
      now,
      ensurePlain: poller ? (id) => poller.ensurePlain(id) : null,
      plainWaitMs: Math.min(config.upstream?.timeoutMs ?? 0, 5000),
    }),
    ...flagRoutes({
      access,
      store,
      reads,
      writes,
      ttl,
      activityTtl: { okMs: config.cache.activityTtlMs, notFoundMs: config.cache.notFoundTtlMs },
      maxBodyBytes: config.maxRequestBodyBytes,
      online: upstream !== null,
      remoteConfig: remoteConfigHandler({ access, reads, warmer, ttl, metrics, now }),
      evaluationReasons: evaluation.evaluationReasons,
    }),
    ...endpoints.routes,
    keyIntrospectionRoute({
      access,
      reads,
      expiresIn: deps.keyExpiresIn ?? null,
      ttl: { okMs: config.auth.ttlMs, notFoundMs: config.cache.notFoundTtlMs },
    }),
  ];
}
