/**
 * Wiring of one sidecar instance from a Config: metrics → upstream client → stored snapshots → store → poller
 * → listeners. Used by main.ts and by the tests (which start real instances on port 0). `stop()` is the
 * ordered shutdown: go unready and stop taking requests, drain in-flight requests and forwarded writes (bounded
 * by drainBudgetMs), stop polling, persist, close upstream.
 */
import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { Registry } from './metrics/prom.js';
import { createKeyVerification } from './auth/key-verification.js';
import { parseKeysFile, type StaticKey } from './auth/keys-file.js';
import type { Config } from './config/load.js';
import type { ListenAddress } from './config/parsers.js';
import { listeningFields } from './banner.js';
import { ConfigError, methodNotAllowed } from './errors.js';
import { createAccessLog } from './http/access-log.js';
import { createDrain } from './http/drain.js';
import { createRouter, type Reply, type RequestContext } from './http/router.js';
import { createAccess } from './http/routes/access.js';
import { AnswerCache } from './http/answer-cache.js';
import { apiRoutes } from './http/routes/api.js';
import { captureRoutes } from './http/routes/capture.js';
import type { EventRelay } from './events/relay.js';
import { ofrepWrongMethod } from './http/routes/ofrep.js';
import { opsRoutes } from './http/routes/ops.js';
import { capConnections } from './http/connection-cap.js';
import { capsOverLimit, parseOpenFileLimit } from './http/fd-limit.js';
import { ListenError } from './http/listen-error.js';
import { startHttpServer, type HttpServerDeps, type RunningServer } from './http/server.js';
import type { Logger } from './logger.js';
import { createMetrics, type BuildInfo } from './metrics/metrics.js';
import { createIntegrity } from './integrity.js';
import { createSealer } from './seal.js';
import { wasmSha1x4Unavailable } from './eval/sha1-simd.js';
import { wasmSha1Unavailable } from './eval/sha1-wasm.js';
import { loadInitialSnapshots } from './store/load-snapshots.js';
import { createPersistence } from './store/persist.js';
import { persistChanges } from './store/persist-changes.js';
import { createCompiledDefinitions } from './store/compiled.js';
import { createReadThroughCache } from './store/read-through.js';
import { logStoreChanges } from './store/change-log.js';
import { createStore, type Store } from './store/store.js';
import { createPoller, type Poller } from './upstream/poller.js';
import { resolveProjectTokens } from './upstream/project-token.js';
import { setUpStaticCohorts } from './upstream/static-cohort-setup.js';

/** Things a sidecar takes from its environment, injectable for tests. */
export interface SidecarDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly build: BuildInfo;
  readonly now?: () => number;
  readonly random?: () => number;
}

/** A running sidecar. */
export interface Sidecar {
  readonly apiUrl: string;
  readonly opsUrl: string;
  readonly registry: Registry;
  readonly store: Store;
  readonly poller: Poller | null;
  /** Requests the API listener has taken since start. */
  apiRequests(): number;
  stop(): Promise<void>;
}

/**
 * The part of the shutdown timeout given to draining requests and writes; the rest (a tenth, at most 1 s) is
 * kept for stopping the poller, persisting and closing, so the process is gone by the timeout.
 */
export function drainBudgetMs(shutdownTimeoutMs: number): number {
  return shutdownTimeoutMs - Math.min(1000, Math.floor(shutdownTimeoutMs / 10));
}

/** Start a listener; one that cannot be had is a ListenError naming the address and `setting`. */
function listen(setting: string, address: ListenAddress, deps: HttpServerDeps): Promise<RunningServer> {
  return startHttpServer(deps, address.host, address.port).catch((error: unknown) => {
    throw new ListenError(setting, address, error);
  });
}

/** The keys file's keys; an unreadable or invalid file is a configuration error (exit 2). */
async function loadStaticKeys(file: string | null): Promise<StaticKey[]> {
  if (file === null) return [];
  try {
    return parseKeysFile(await readFile(file, 'utf8'), file);
  } catch (error) {
    throw new ConfigError([`FLAG_SIDECAR_KEYS_FILE: ${(error as Error).message}`]);
  }
}

/**
 * Start a sidecar; throws (before listening) a ConfigError when the keys file is unusable or there is nothing to
 * serve, a ListenError when it cannot listen. Says "listening" (and "ready") only once both listeners are up.
 */
export async function startSidecar(deps: SidecarDeps): Promise<Sidecar> {
  const { config, logger } = deps;
  const now = deps.now ?? Date.now;
  const random = deps.random ?? Math.random;
  const startedAt = now();
  const registry = new Registry();
  const metrics = createMetrics(registry, deps.build);

  const staticKeys = await loadStaticKeys(config.keysFile);
  // Seals what others could write too (Redis, the snapshot volume); offline without a fleet secret nothing is sealed.
  const integrity = config.seal ? createIntegrity({ sealer: createSealer(config.seal.secret, config.seal.source), metrics, logger }) : null;
  // A failed write is retried from 2 s (less when polling is faster) up to one poll interval apart.
  const persistence = config.snapshotDir
    ? createPersistence({ dir: config.snapshotDir, integrity, logger, metrics, now, retryMinMs: 2_000, retryMaxMs: config.pollIntervalMs })
    : null;
  // The upstream client (undici) is loaded only when configured: offline, it is not.
  const upstream = config.upstream
    ? (await import('./upstream/client.js')).createUpstreamClient({
        url: config.upstream.url,
        timeoutMs: config.upstream.timeoutMs,
        connectTimeoutMs: config.upstream.connectTimeoutMs,
        maxBodyBytes: config.upstream.maxBodyBytes,
        userAgent: `flag-sidecar/${deps.build.version}`,
        // Key checks may hold up to their bound of connections: 8 more always stay for polls, writes and read-through.
        connections: config.keyChecks.maxInFlight + 8,
        metrics,
      })
    : null;
  const stored = await loadInitialSnapshots({
    projects: config.projects,
    bootstrapFile: config.bootstrapFile,
    persistence,
    logger,
    metrics,
    polling: upstream !== null,
  });
  // SDK paths find a project by its token: a missing one is learned upstream, else taken from the stored snapshot.
  const initial = await resolveProjectTokens(stored, { configured: config.projects, client: upstream, key: config.upstream?.key ?? null, logger })
    .then((projects) => {
      if (projects.length > 0) return projects;
      throw new ConfigError(['nothing to serve: offline (no FLAG_SIDECAR_UPSTREAM_URL) and no project in the bootstrap file or snapshot dir']);
    })
    .catch(async (error: unknown) => {
      await upstream?.destroy();
      throw error;
    });
  const store = createStore(initial);
  metrics.observeSnapshots(() =>
    store.list().map((p) => ({
      project: String(p.projectId),
      ageSeconds: p.cohorts ? Math.max(0, (now() - p.cohorts.fetchedAt) / 1000) : null,
      flags: p.cohorts?.definitions.flags.length ?? 0,
    })),
  );
  // New content is written at once; a 304's newer fetched-at at most every 10 intervals.
  if (persistence) persistChanges({ store, persistence, metrics, refreshEveryMs: 10 * config.pollIntervalMs });

  // Fleet mode: loaded only when configured, so a sidecar without Redis never loads the client.
  const fleet =
    config.fleet && config.upstream && integrity
      ? (await import('./fleet/fleet.js')).createFleet({ config: config.fleet, upstream: config.upstream.url, integrity, registry, logger, now, random })
      : null;
  fleet?.start();

  // Fleet mode: one upstream poller per project for the whole fleet (the others load its snapshot from Redis).
  const relay =
    fleet && config.upstream
      ? (await import('./fleet/snapshot-relay.js')).createSnapshotRelay({
          fleet,
          store,
          intervalMs: config.pollIntervalMs,
          maxBodyBytes: config.upstream.maxBodyBytes,
          outageBudgetPerMinute: fleet.config.outageBudgetPerMinute,
          fetchBytesPerSecond: fleet.config.fetchBytesPerSecond,
          logger,
          now,
          random,
        })
      : null;
  if (fleet && relay) fleet.onClose(() => relay.close());
  const poller =
    upstream && config.upstream
      ? createPoller({
          store,
          client: upstream,
          key: config.upstream.key,
          intervalMs: config.pollIntervalMs,
          logger,
          metrics,
          now,
          random,
          ...(relay ? { fleet: relay.hooks } : {}),
        })
      : null;

  // What the API routes use for polling: in fleet mode routed by the project's role (a follower asks the leader).
  const polling = relay && poller ? relay.control(poller) : poller;

  // Fleet mode's caches part: invalidations after writes through any sidecar, endpoint runs shared in Redis.
  const fleetCaches = fleet
    ? (await import('./fleet/fleet-caches.js')).createFleetCaches({
        fleet,
        logger,
        now,
        random,
        knownProject: (id) => store.get(id) !== undefined,
        repoll: (id) => (relay ? relay.refresh(id) : (poller?.pollNow(id) ?? Promise.resolve())),
      })
    : null;

  // Fleet mode: key checks are shared through Redis (digests only), so the fleet asks upstream once per key.
  const shared = fleet
    ? (await import('./fleet/shared-keys.js')).createSharedKeys({ redis: fleet.redis, keys: fleet.keys, integrity: fleet.integrity, metrics: fleet.metrics, logger, now, ...config.auth })
    : null;
  const { resolver, introspector, secretKeys, keyRecords } = await createKeyVerification({ config, staticKeys, store, upstream, shared, integrity, metrics, logger, now });
  const access = createAccess({ store, resolver, introspector, secretKeys, metrics, now });
  const readThroughLookups = metrics.cacheLookups.of('read_through');
  const cache = createReadThroughCache({
    maxBytes: config.cache.maxBytes,
    maxEntries: config.cache.maxEntries,
    staleMaxMs: config.cache.staleMaxMs,
    now,
    observe: (result) => void (readThroughLookups[result] += 1),
  });
  metrics.observeCache(cache.size);
  const answers = config.flagsAnswerCacheMaxBytes > 0 ? new AnswerCache(config.flagsAnswerCacheMaxBytes) : null;
  // New definitions can change what upstream says about a project's flags: its cached reads are dropped.
  store.onChange((after, before) => {
    if (after.cohorts?.body !== before.cohorts?.body) cache.invalidate(after.projectId);
  });
  // The events relay: SDK captures queued and forwarded upstream in batches (offline without an events URL: refused).
  const events: EventRelay | null =
    config.events.url === null
      ? null
      : await (await import('./events/relay.js')).eventRelayFor(config, { userAgent: `flag-sidecar/${deps.build.version}`, registry, metrics, logger, now, random });
  const drain = createDrain();
  const servers: RunningServer[] = [];
  try {
    const keyExpiresIn = introspector?.expiresIn ?? null;
    const definitions = createCompiledDefinitions(store);
    const staticCohorts = await setUpStaticCohorts({ config, definitions, upstream, polling, registry, logger, now, random, fleet, relay });
    const routes = apiRoutes({ config, store, access, cache, answers, upstream, poller: polling, logger, metrics, now, drain, fleetCaches, keyExpiresIn, definitions, staticCohorts });
    fleetCaches?.start();
    // A method a route does not map: upstream's refusal of the caller first (none for a legacy key), then the 405.
    // OFREP's paths take no PostHog key by default: their 405 asks for none.
    const refuseMethod = (ctx: RequestContext): Promise<Reply> => {
      const ofrep = ofrepWrongMethod(ctx);
      if (ofrep !== null) return Promise.resolve(ofrep);
      return Promise.resolve(access.authorize('method_not_allowed', 'upstream', ctx, null)).then(() => {
        throw methodNotAllowed(ctx.method);
      });
    };
    const capture = captureRoutes({
      relay: events,
      knownToken: (token) => store.projectIdForToken(token) !== undefined,
      anyToken: config.events.anyToken,
      logger,
    });
    const accessLog = (listener: 'api' | 'ops') => createAccessLog({ logger, ...config.accessLog, listener, now });
    servers.push(
      await listen('FLAG_SIDECAR_LISTEN', config.listen, { match: createRouter([...routes, ...capture]), logger, metrics, refuseMethod, drain, accessLog: accessLog('api') }),
    );
    capConnections(servers[0] as RunningServer, { listener: 'api', max: config.maxConnections.api, logger, metrics, now });
    const ops = opsRoutes({
      store,
      registry,
      pollStatus: poller ? (id) => relay?.pollStatus(id) ?? poller.status(id) : null,
      persistStatus: persistence ? (id) => persistence.status(id) : null,
      pollIntervalMs: config.pollIntervalMs,
      build: deps.build,
      upstream: upstream?.origin ?? null,
      keys: resolver.describe(),
      startedAt,
      now,
      cache: () => ({ ...cache.size(), max_bytes: config.cache.maxBytes, max_entries: config.cache.maxEntries }),
      answers: answers && (() => ({ entries: answers.size, bytes: answers.bytes, max_bytes: answers.maxBytes })),
      draining: () => drain.draining,
      fleet: fleet && { status: () => fleet.status(), project: (id) => relay?.status(id) ?? null },
      events: events ? () => events.status() : null,
      staticCohorts: staticCohorts && ((id) => staticCohorts.status(id)),
      integrity: integrity && (() => integrity.status()),
    });
    servers.push(await listen('FLAG_SIDECAR_OPS_LISTEN', config.opsListen, { match: createRouter(ops), logger, accessLog: accessLog('ops') }));
    capConnections(servers[1] as RunningServer, { listener: 'ops', max: config.maxConnections.ops, logger, metrics, now });
  } catch (error) {
    await Promise.all(servers.map((s) => s.close(0)));
    await upstream?.destroy();
    await events?.stop(0);
    await fleet?.close();
    throw error;
  }
  const limitsText = await readFile('/proc/self/limits', 'utf8').catch(() => '');
  const overLimit = capsOverLimit(parseOpenFileLimit(limitsText), config.maxConnections);
  if (overLimit !== null) logger.warn({ maxConnections: config.maxConnections }, overLimit);
  // Same answers either way; each bucketing hash costs ~40% more instructions in JavaScript (docs/benchmarks.md).
  if (wasmSha1Unavailable !== null) logger.info({ reason: wasmSha1Unavailable }, 'bucketing hash in JavaScript, not WebAssembly');
  else if (wasmSha1x4Unavailable !== null) logger.info({ reason: wasmSha1x4Unavailable }, 'bucketing hash one flag at a time, not four at once (no WebAssembly SIMD)');
  poller?.start();
  if (relay && poller) relay.start(poller);
  const [api, ops] = servers as [RunningServer, RunningServer];
  logger.info(listeningFields(config, { apiUrl: api.url, opsUrl: ops.url, projects: store.projectIds(), ready: store.ready() }), 'flag-sidecar listening');
  // From here on, not before: a sidecar that failed to listen never said it was ready.
  logStoreChanges(store, logger);

  let stopping: Promise<void> | null = null;
  return {
    apiUrl: api.url,
    opsUrl: ops.url,
    registry,
    store,
    poller,
    apiRequests: api.requests,
    stop(): Promise<void> {
      stopping ??= (async () => {
        // Draining: /readyz 503, every answer the connection's last, new requests refused, no write started.
        drain.begin();
        const deadline = performance.now() + drainBudgetMs(config.shutdownTimeoutMs);
        const drained = await api.close(drainBudgetMs(config.shutdownTimeoutMs));
        // A write whose caller went away is still in flight: it is answered upstream and logged before exit.
        await drain.settled(Math.max(0, deadline - performance.now()));
        // Accepted events: forwarded within what is left of the budget.
        await events?.stop(Math.max(0, deadline - performance.now()));
        await poller?.stop();
        await persistence?.close();
        await keyRecords?.flush();
        await fleet?.close();
        await ops.close(0);
        // An upstream call still running for a request the drain's deadline cut short (answered 503) is given up.
        await (drained ? upstream?.close() : upstream?.destroy());
        logger.info('flag-sidecar stopped');
      })();
      return stopping;
    },
  };
}
