/**
 * Parse and validate the whole configuration from an environment map. Every problem is collected and
 * reported at once in one ConfigError naming each variable; nothing starts on a bad configuration.
 */
import { isAbsolute, join, resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { unknownSettingProblems } from './env-names.js';
import { eventsUrlFor } from './events-url.js';
import type { AccessLogMode, ListenAddress, LogLevel, ProjectSpec, RedisMode } from './parsers.js';
import { parseKey, parseRedisUrl, parseSecret } from './parsers.js';
import type { SealSource } from '../seal.js';
import { redactSecrets } from './redact.js';
import { settings, type RawConfig } from './spec.js';

/** How to reach upstream; null in offline mode. */
export interface UpstreamConfig {
  readonly url: URL;
  readonly key: string;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly maxBodyBytes: number;
}

/** The validated configuration the composition root works from. */
export interface Config {
  readonly upstream: UpstreamConfig | null;
  /** Configured projects; null offline when the bootstrap file decides. */
  readonly projects: readonly ProjectSpec[] | null;
  readonly listen: ListenAddress;
  readonly opsListen: ListenAddress;
  /** Most open connections per listener (node's server.maxConnections: past it, new ones are closed at once). */
  readonly maxConnections: { readonly api: number; readonly ops: number };
  readonly pollIntervalMs: number;
  readonly snapshotDir: string | null;
  readonly bootstrapFile: string | null;
  readonly keysFile: string | null;
  readonly logLevel: LogLevel;
  /** The access log (src/http/access-log.ts). */
  readonly accessLog: { readonly mode: AccessLogMode; readonly ratePerSecond: number };
  readonly shutdownTimeoutMs: number;
  /** Principal cache for introspected personal keys. */
  readonly auth: { readonly ttlMs: number; readonly negativeTtlMs: number; readonly graceMs: number; readonly maxEntries: number };
  /** Checks of unknown keys upstream (src/auth/verify-queue.ts): most at once, and the rate capacity aims at. */
  readonly keyChecks: { readonly maxInFlight: number; readonly ratePerSecond: number };
  /** Read-through cache of upstream reads. */
  readonly cache: {
    readonly maxBytes: number;
    readonly maxEntries: number;
    readonly ttlMs: number;
    readonly activityTtlMs: number;
    readonly notFoundTtlMs: number;
    readonly staleMaxMs: number;
  };
  /** Named endpoints (issue 6): run cache and version record lifetimes, metric label allow-list. */
  readonly endpoints: {
    readonly runTtlMs: number;
    readonly runMaxBytes: number;
    readonly versionTtlMs: number;
    /** Names with their own metric label; empty: the first 20 upstream confirmed. */
    readonly metricNames: readonly string[];
  };
  /** Largest request body of a forwarded write. */
  readonly maxRequestBodyBytes: number;
  /** Most persons of a static cohort pulled for local evaluation (0: off). */
  readonly staticCohortMaxPersons: number;
  /** Static cohort checks: record every `refreshMs`, persons again at least every `rereadMs`, a pull within `pullTimeoutMs`. */
  readonly staticCohorts: { readonly refreshMs: number; readonly rereadMs: number; readonly pullTimeoutMs: number };
  /** Bytes of whole /flags answers kept for bodies sent again (0: off). */
  readonly flagsAnswerCacheMaxBytes: number;
  /** How long a successful flag write waits for the snapshot to show it. */
  readonly writeSyncTimeoutMs: number;
  /** Fleet mode (FLAG_SIDECAR_REDIS_URL); null: every sidecar on its own. */
  readonly fleet: FleetConfig | null;
  /** What shared state is sealed with (FLAG_SIDECAR_FLEET_SECRET, else the upstream key); null offline without a secret. */
  readonly seal: { readonly secret: string; readonly source: SealSource } | null;
  /** Projects whose OFREP routes require a key instead of the project token (FLAG_SIDECAR_OFREP_REQUIRE_KEY). */
  readonly ofrepRequireKey: 'all' | ReadonlySet<number>;
  /** The events relay; `url` null offline without FLAG_SIDECAR_EVENTS_URL (captures refused). */
  readonly events: EventsConfig;
}

/** Events relay settings (src/events). */
export interface EventsConfig {
  readonly url: URL | null;
  readonly anyToken: boolean;
  readonly queue: { readonly maxBytes: number; readonly maxEvents: number };
  /** The capture memory budget in bytes; null: derived from the memory limit (intake-budget.ts). */
  readonly intakeMaxBytes: number | null;
  /** The disk spool under the snapshot dir, or null without FLAG_SIDECAR_SNAPSHOT_DIR. */
  readonly spool: { readonly dir: string; readonly maxBytes: number } | null;
  readonly batch: { readonly maxEvents: number; readonly maxBytes: number; readonly lingerMs: number };
}

/** Fleet mode settings. */
export interface FleetConfig {
  readonly redisUrl: URL;
  /** Namespace of every key and channel. */
  readonly prefix: string;
  /** What the URL names: the server, a Cluster node or a Sentinel. */
  readonly mode: RedisMode;
  /** The master's name in sentinel mode, else null. */
  readonly sentinelMaster: string | null;
  /** Longest wait for a Redis command. */
  readonly timeoutMs: number;
  /** Leader lease period per project. */
  readonly leaseMs: number;
  /** Direct upstream polls a minute for the whole fleet while Redis is gone. */
  readonly outageBudgetPerMinute: number;
  /** Redis egress the followers' fetches of a change aim for, bytes a second. */
  readonly fetchBytesPerSecond: number;
}

/** IO the loader needs, passed in so the loader stays testable. */
export interface LoadDeps {
  readonly readFile: (path: string) => string;
  /** Directory that relative default paths (config/…) are resolved against. */
  readonly rootDir: string;
}

/** Parse every variable of the spec; returns the raw values and the problems found. */
export function parseEnv(env: Readonly<Record<string, string | undefined>>): {
  raw: RawConfig;
  problems: string[];
} {
  const problems: string[] = [];
  const raw: Record<string, unknown> = {};
  for (const [name, setting] of settings) {
    const given = env[setting.env];
    const text = given !== undefined && given.trim() !== '' ? given : setting.default;
    if (text === undefined) {
      raw[name] = null;
      continue;
    }
    try {
      raw[name] = setting.parse(text);
    } catch (error) {
      raw[name] = null;
      problems.push(`${setting.env}: ${(error as Error).message}`);
    }
  }
  return { raw: raw as RawConfig, problems };
}

/** Build the Config or throw one ConfigError listing every problem. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>, deps: LoadDeps): Config {
  const { raw, problems } = parseEnv(env);
  const online = raw.upstreamUrl !== null;
  const fromRoot = (path: string): string => (isAbsolute(path) ? path : resolve(deps.rootDir, path));

  let key: string | null = raw.upstreamKey;
  if (raw.upstreamKey !== null && raw.upstreamKeyFile !== null) {
    problems.push('FLAG_SIDECAR_UPSTREAM_KEY and FLAG_SIDECAR_UPSTREAM_KEY_FILE are both set; set one');
  } else if (raw.upstreamKeyFile !== null) {
    try {
      key = parseKey(deps.readFile(raw.upstreamKeyFile));
    } catch (error) {
      problems.push(`FLAG_SIDECAR_UPSTREAM_KEY_FILE: ${(error as Error).message}`);
    }
  }

  let redisUrl: URL | null = raw.redisUrl;
  if (raw.redisUrl !== null && raw.redisUrlFile !== null) {
    problems.push('FLAG_SIDECAR_REDIS_URL and FLAG_SIDECAR_REDIS_URL_FILE are both set; set one');
  } else if (raw.redisUrlFile !== null) {
    try {
      redisUrl = parseRedisUrl(deps.readFile(raw.redisUrlFile));
    } catch (error) {
      problems.push(`FLAG_SIDECAR_REDIS_URL_FILE: ${(error as Error).message}`);
    }
  }
  let fleetSecret: string | null = raw.fleetSecret;
  if (raw.fleetSecret !== null && raw.fleetSecretFile !== null) {
    problems.push('FLAG_SIDECAR_FLEET_SECRET and FLAG_SIDECAR_FLEET_SECRET_FILE are both set; set one');
  } else if (raw.fleetSecretFile !== null) {
    try {
      fleetSecret = parseSecret(deps.readFile(raw.fleetSecretFile));
    } catch (error) {
      problems.push(`FLAG_SIDECAR_FLEET_SECRET_FILE: ${(error as Error).message}`);
    }
  }
  if (raw.redisMode === 'sentinel' && raw.redisSentinelMaster === null && redisUrl !== null) {
    problems.push('FLAG_SIDECAR_REDIS_SENTINEL_MASTER: required when FLAG_SIDECAR_REDIS_MODE is sentinel');
  }
  if (raw.redisSentinelMaster !== null && raw.redisMode !== 'sentinel') {
    problems.push('FLAG_SIDECAR_REDIS_SENTINEL_MASTER: set only with FLAG_SIDECAR_REDIS_MODE=sentinel');
  }
  if (redisUrl !== null && !online) problems.push('FLAG_SIDECAR_REDIS_URL: fleet mode needs FLAG_SIDECAR_UPSTREAM_URL (offline sidecars have nothing to share)');

  if (online) {
    if (key === null && raw.upstreamKeyFile === null && raw.upstreamKey === null) {
      problems.push('FLAG_SIDECAR_UPSTREAM_KEY: required when FLAG_SIDECAR_UPSTREAM_URL is set (or use FLAG_SIDECAR_UPSTREAM_KEY_FILE)');
    }
    if (raw.projects === null && !problems.some((problem) => problem.startsWith('FLAG_SIDECAR_PROJECTS'))) {
      problems.push('FLAG_SIDECAR_PROJECTS: required when FLAG_SIDECAR_UPSTREAM_URL is set');
    }
  }
  if (raw.listen !== null && raw.opsListen !== null && raw.listen.port !== 0 && raw.listen.port === raw.opsListen.port) {
    problems.push('FLAG_SIDECAR_OPS_LISTEN: must use a different port from FLAG_SIDECAR_LISTEN');
  }
  problems.push(...unknownSettingProblems(env, settings.map(([, s]) => s.env)));
  if (problems.length > 0) {
    // A secret put in the wrong variable is quoted by no message.
    const secrets = [...settings.filter(([, s]) => s.secret).map(([, s]) => env[s.env] ?? ''), key ?? '', redisUrl?.href ?? '', fleetSecret ?? ''];
    throw new ConfigError(problems.map((problem) => redactSecrets(problem, secrets)));
  }

  // The example files go together: the example key (published in the README) unlocks only the example snapshot,
  // never a snapshot of the user's own.
  const bootstrap = raw.bootstrapFile ?? (online ? null : 'config/snapshot.example.json');
  const keysFile = raw.keysFile ?? (!online && raw.bootstrapFile === null ? 'config/keys.example.json' : null);
  return {
    upstream:
      online && raw.upstreamUrl !== null && key !== null
        ? {
            url: raw.upstreamUrl,
            key,
            timeoutMs: raw.upstreamTimeout,
            connectTimeoutMs: raw.upstreamConnectTimeout,
            maxBodyBytes: raw.upstreamMaxBody,
          }
        : null,
    projects: raw.projects,
    listen: raw.listen,
    opsListen: raw.opsListen,
    maxConnections: { api: raw.maxConnections, ops: raw.opsMaxConnections },
    pollIntervalMs: raw.pollInterval,
    snapshotDir: raw.snapshotDir === null ? null : fromRoot(raw.snapshotDir),
    bootstrapFile: bootstrap === null ? null : fromRoot(bootstrap),
    keysFile: keysFile === null ? null : fromRoot(keysFile),
    logLevel: raw.logLevel,
    accessLog: { mode: raw.accessLog, ratePerSecond: raw.accessLogRate },
    shutdownTimeoutMs: raw.shutdownTimeout,
    auth: { ttlMs: raw.authCacheTtl, negativeTtlMs: raw.authNegativeTtl, graceMs: raw.authGrace, maxEntries: raw.authCacheMax },
    keyChecks: { maxInFlight: raw.keyChecksMaxInFlight, ratePerSecond: raw.keyChecksRate },
    cache: {
      maxBytes: raw.cacheMaxBytes,
      maxEntries: raw.cacheMaxEntries,
      ttlMs: raw.cacheTtl,
      activityTtlMs: raw.cacheActivityTtl,
      notFoundTtlMs: raw.cacheNotFoundTtl,
      staleMaxMs: raw.cacheStaleMax,
    },
    endpoints: {
      runTtlMs: raw.endpointRunTtl,
      runMaxBytes: raw.endpointRunMaxBytes,
      versionTtlMs: raw.endpointVersionTtl,
      metricNames: raw.endpointMetricNames,
    },
    maxRequestBodyBytes: raw.maxRequestBody,
    staticCohortMaxPersons: raw.staticCohortMaxPersons,
    staticCohorts: { refreshMs: raw.staticCohortRefresh, rereadMs: raw.staticCohortReread, pullTimeoutMs: raw.staticCohortPullTimeout },
    flagsAnswerCacheMaxBytes: raw.flagsAnswerCacheMaxBytes,
    writeSyncTimeoutMs: raw.writeSyncTimeout,
    fleet: redisUrl === null ? null : { redisUrl, prefix: raw.redisPrefix, mode: raw.redisMode, sentinelMaster: raw.redisSentinelMaster, timeoutMs: raw.redisTimeout, leaseMs: raw.fleetLease, outageBudgetPerMinute: raw.fleetOutageBudget, fetchBytesPerSecond: raw.fleetFetchRate },
    seal: fleetSecret !== null ? { secret: fleetSecret, source: 'fleet_secret' } : online && key !== null ? { secret: key, source: 'upstream_key' } : null,
    ofrepRequireKey: raw.ofrepRequireKey ?? new Set<number>(),
    events: {
      url: eventsUrlFor(raw.eventsUrl, online ? raw.upstreamUrl : null),
      anyToken: raw.eventsAnyToken,
      queue: { maxBytes: raw.eventsQueueMaxBytes, maxEvents: raw.eventsQueueMaxEvents },
      intakeMaxBytes: raw.eventsIntakeMaxBytes,
      spool: raw.snapshotDir === null ? null : { dir: join(fromRoot(raw.snapshotDir), 'events-spool'), maxBytes: raw.eventsSpoolMax },
      batch: { maxEvents: raw.eventsBatchSize, maxBytes: raw.eventsBatchMaxBytes, lingerMs: raw.eventsLinger },
    },
  };
}
