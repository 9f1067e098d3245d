/**
 * Every setting, declared once: environment name, parser, default and description. The loader parses from
 * this table and the README's configuration table is rendered from it (`npm run docs:config`).
 */
import {
  parseAccessLogMode,
  parseBaseUrl,
  parseBool,
  parseBytes,
  parseBytesOrOff,
  parseCount,
  parseDurationWithin,
  parseKey,
  parseListen,
  parseLogLevel,
  parsePath,
  parseProjectSelection,
  parseProjects,
  parseRedisMode,
  parseRedisPrefix,
  parseRedisUrl,
  parseSecret,
} from './parsers.js';

/** One environment setting. `default` is parsed like a user value; `defaultText` documents a derived default. */
export interface Setting<T> {
  readonly env: string;
  readonly description: string;
  readonly parse: (text: string) => T;
  readonly default?: string;
  readonly defaultText?: string;
  readonly secret?: boolean;
}

const second = 1000;
const hour = 3_600_000;

/** The settings table. Keys are the names used in code. */
export const spec = {
  upstreamUrl: {
    env: 'FLAG_SIDECAR_UPSTREAM_URL',
    defaultText: 'unset → offline mode',
    description: 'Upstream base URL, e.g. `https://us.posthog.com`. Unset: serve the bootstrap snapshot offline, poll nothing.',
    parse: parseBaseUrl,
  },
  upstreamKey: {
    env: 'FLAG_SIDECAR_UPSTREAM_KEY',
    description:
      "The sidecar's own key for polling: a project secret key (`phs_…`) or a personal key (`phx_…`) with `feature_flag:read`. Callers presenting it are trusted for the configured projects.",
    parse: parseKey,
    secret: true,
  },
  upstreamKeyFile: {
    env: 'FLAG_SIDECAR_UPSTREAM_KEY_FILE',
    description: 'File holding the upstream key (e.g. a mounted Secret); use instead of `FLAG_SIDECAR_UPSTREAM_KEY`.',
    parse: parsePath,
  },
  projects: {
    env: 'FLAG_SIDECAR_PROJECTS',
    defaultText: 'offline: the projects in the bootstrap file',
    description:
      'Comma list of `id` or `id:phc_token`. The token lets SDKs find the project (`?token=`). Left out, it is learned from upstream at start (`GET /api/projects/:id/`; a personal key with `project:read`), else taken from the stored snapshot, else the start is refused (exit 2).',
    parse: parseProjects,
  },
  listen: {
    env: 'FLAG_SIDECAR_LISTEN',
    default: '127.0.0.1:8010',
    description: 'API listener (`host:port`); the app and its SDKs talk to this.',
    parse: parseListen,
  },
  opsListen: {
    env: 'FLAG_SIDECAR_OPS_LISTEN',
    default: '0.0.0.0:8011',
    description: 'Operations listener: `/healthz`, `/readyz`, `/metrics`, `/status`.',
    parse: parseListen,
  },
  maxConnections: {
    env: 'FLAG_SIDECAR_MAX_CONNECTIONS',
    default: '1024',
    description:
      'Most connections the API listener holds open at once (keep-alive ones included), so that clients cannot use up the process\'s file handles (keep `ulimit -n` above this + `FLAG_SIDECAR_OPS_MAX_CONNECTIONS` + 100). At the cap a new connection makes room: the longest-idle keep-alive connection is closed, else the one waiting longest for its request head, else a request whose body is still arriving (answered 408); counted in `flag_sidecar_http_connections_evicted_total`. Only when every connection has a request being worked on is the new one closed unanswered (`flag_sidecar_http_connections_dropped_total`).',
    parse: parseCount(1, 1_000_000),
  },
  opsMaxConnections: {
    env: 'FLAG_SIDECAR_OPS_MAX_CONNECTIONS',
    default: '64',
    description:
      'Most connections the operations listener holds open at once; its own cap, so probes and scrapes get through while the API listener is full. At the cap a new connection makes room as on the API listener, so idle or trickling connections never keep a probe out.',
    parse: parseCount(1, 100_000),
  },
  pollInterval: {
    env: 'FLAG_SIDECAR_POLL_INTERVAL',
    default: '30s',
    description: 'Poll period per project, jittered ±10%. Backoff after failures is capped at 8× this.',
    parse: parseDurationWithin(100, hour),
  },
  snapshotDir: {
    env: 'FLAG_SIDECAR_SNAPSHOT_DIR',
    description:
      'Directory where the last good snapshot of each project, and the keys upstream verified (SHA-256 digests only), are persisted and read back at start.',
    parse: parsePath,
  },
  bootstrapFile: {
    env: 'FLAG_SIDECAR_BOOTSTRAP_FILE',
    defaultText: '`config/snapshot.example.json` when offline',
    description: 'Snapshot file served before the first poll (and offline). Format: docs/snapshot-format.md.',
    parse: parsePath,
  },
  keysFile: {
    env: 'FLAG_SIDECAR_KEYS_FILE',
    defaultText: '`config/keys.example.json` when offline on the example snapshot',
    description: 'Static keys: SHA-256 digests of keys → label, scopes, projects. Format: docs/keys-file.md.',
    parse: parsePath,
  },
  authCacheTtl: {
    env: 'FLAG_SIDECAR_AUTH_CACHE_TTL',
    default: '5m',
    description: 'How long a personal key introspected upstream (`/api/personal_api_keys/@current/`) is trusted before it is asked again.',
    parse: parseDurationWithin(1000, 24 * hour),
  },
  authNegativeTtl: {
    env: 'FLAG_SIDECAR_AUTH_NEGATIVE_TTL',
    default: '30s',
    description: 'How long a key upstream rejected (401) is answered 401 without asking again.',
    parse: parseDurationWithin(100, hour),
  },
  authGrace: {
    env: 'FLAG_SIDECAR_AUTH_GRACE',
    default: '1h',
    description:
      'While upstream is unreachable, how long past its TTL a cached principal keeps working (across a restart too, with a snapshot dir). Unknown keys get 503 meanwhile.',
    parse: parseDurationWithin(0, 7 * 24 * hour),
  },
  authCacheMax: {
    env: 'FLAG_SIDECAR_AUTH_CACHE_MAX',
    default: '10000',
    description: 'Most keys (by SHA-256, never the key) remembered by the principal cache.',
    parse: parseCount(10, 1_000_000),
  },
  keyChecksMaxInFlight: {
    env: 'FLAG_SIDECAR_KEY_CHECKS_MAX_IN_FLIGHT',
    default: '64',
    description:
      'Most checks of unknown keys upstream at once (introspections and per-project grants). Between 8 (or this, if lower) and this bound, the sidecar keeps as many going as `FLAG_SIDECAR_KEY_CHECKS_RATE` needs at the latency upstream answers with, so a slow upstream gets more at once but no more a second. The upstream connection pool is 8 larger. Keys waiting their turn are served fairly per caller address, then per connection (docs/reliability.md).',
    parse: parseCount(1, 64),
  },
  keyChecksRate: {
    env: 'FLAG_SIDECAR_KEY_CHECKS_RATE',
    default: '250',
    description: 'Checks of unknown keys a second that capacity aims at when keys wait (see `FLAG_SIDECAR_KEY_CHECKS_MAX_IN_FLIGHT`).',
    parse: parseCount(1, 100_000),
  },
  cacheMaxBytes: {
    env: 'FLAG_SIDECAR_CACHE_MAX_BYTES',
    default: '64MiB',
    description: 'Read-through cache bound: total bytes of cached upstream responses (least recently used go first).',
    parse: parseBytes,
  },
  cacheMaxEntries: {
    env: 'FLAG_SIDECAR_CACHE_MAX_ENTRIES',
    default: '10000',
    description: 'Read-through cache bound: most cached responses.',
    parse: parseCount(10, 1_000_000),
  },
  cacheTtl: {
    env: 'FLAG_SIDECAR_CACHE_TTL',
    default: '10s',
    description: 'How long a cached upstream read (flag list, retrieve, status, remote_config, my_flags …) is served before upstream is asked again.',
    parse: parseDurationWithin(0, hour),
  },
  cacheActivityTtl: {
    env: 'FLAG_SIDECAR_CACHE_ACTIVITY_TTL',
    default: '30s',
    description: 'Cache lifetime of the activity logs (per flag and per project).',
    parse: parseDurationWithin(0, hour),
  },
  cacheNotFoundTtl: {
    env: 'FLAG_SIDECAR_CACHE_NOT_FOUND_TTL',
    default: '2s',
    description: 'Cache lifetime of an upstream 404, so a storm of lookups for a missing id stays cheap.',
    parse: parseDurationWithin(0, hour),
  },
  cacheStaleMax: {
    env: 'FLAG_SIDECAR_CACHE_STALE_MAX',
    default: '1h',
    description: 'When upstream fails or times out, a cached response up to this age is served (marked stale) instead of an error. `0s`: never.',
    parse: parseDurationWithin(0, 7 * 24 * hour),
  },
  endpointRunTtl: {
    env: 'FLAG_SIDECAR_ENDPOINT_RUN_TTL',
    default: '60s',
    description: "Longest a named endpoint's latest-version run result is served from memory (edits made outside the sidecar show within this time); within upstream's own `cache_target_age` when it gives one. Runs of a pinned version use upstream's `cache_target_age` (at most a day), this when it gives none.",
    parse: parseDurationWithin(0, 24 * hour),
  },
  endpointRunMaxBytes: {
    env: 'FLAG_SIDECAR_ENDPOINT_RUN_MAX_BYTES',
    default: '32MiB',
    description: 'Bound of the endpoint run cache: total bytes of cached run results (least recently used go first).',
    parse: parseBytes,
  },
  endpointVersionTtl: {
    env: 'FLAG_SIDECAR_ENDPOINT_VERSION_TTL',
    default: '1h',
    description: "Cache lifetime of a named endpoint's specific version record (`versions/:n`), which never changes until the endpoint is deleted.",
    parse: parseDurationWithin(0, 7 * 24 * hour),
  },
  endpointMetricNames: {
    env: 'FLAG_SIDECAR_ENDPOINT_METRIC_NAMES',
    default: '',
    description: 'Comma-separated endpoint names given their own `endpoint` label in the run metrics. Empty: the first 20 names upstream confirmed exist (a run answered 2xx; a misspelt name answered 404 never takes a label); every other name is counted as `other`.',
    parse: (text: string): string[] => text.split(',').map((name) => name.trim()).filter((name) => name !== ''),
  },
  maxRequestBody: {
    env: 'FLAG_SIDECAR_MAX_REQUEST_BODY',
    default: '1MiB',
    description: 'Largest request body accepted for a forwarded write; larger ones get 413.',
    parse: parseBytes,
  },
  writeSyncTimeout: {
    env: 'FLAG_SIDECAR_WRITE_SYNC_TIMEOUT',
    default: '3s',
    description:
      'After a successful flag create/update, how long the reply waits while the project is re-polled until the snapshot shows the write (read-your-writes). `0s`: do not wait.',
    parse: parseDurationWithin(0, 60 * second),
  },
  flagsAnswerCacheMaxBytes: {
    env: 'FLAG_SIDECAR_FLAGS_ANSWER_CACHE_MAX_BYTES',
    default: '8MiB',
    description:
      'Whole `/flags` answers decided entirely from the snapshot are kept for requests sent again byte for byte (an SDK asking again for the same person), and reused with a fresh `requestId` and `evaluatedAt` while the definitions and static cohorts are unchanged (an answer that checked a date filter relative to now, such as `-30d`, only until that filter could decide otherwise). Bound: total bytes (least recently used go first; one answer at most a quarter of it); a body is kept from its second request on. `0`: off.',
    parse: parseBytesOrOff,
  },
  staticCohortMaxPersons: {
    env: 'FLAG_SIDECAR_STATIC_COHORT_MAX_PERSONS',
    default: '10000',
    description:
      'Static cohorts referenced by flags (upstream leaves them out of local_evaluation) are pulled with the upstream key — when it has `cohort:read` and `person:read`, else their flags go upstream — so `/flags` decides their flags locally (docs/evaluation.md#static-cohorts). A cohort with more persons than this is not pulled (its flags go upstream); upstream lists at most 10 distinct_ids per person, so memory is at most this × 10 distinct_ids per cohort, about 100 bytes each. `0`: off.',
    parse: parseCount(0, 1_000_000),
  },
  staticCohortRefresh: {
    env: 'FLAG_SIDECAR_STATIC_COHORT_REFRESH',
    default: '5m',
    description:
      "How often each static cohort is checked: its record only (one request), its persons only when the record changed. Also checked when the definitions change. Failures back off from this (401/403/404/429 exponentially, a 429's Retry-After honoured) up to 8×. In fleet mode only the project's leader checks; the others read its lists from Redis.",
    parse: parseDurationWithin(second, 24 * hour),
  },
  staticCohortReread: {
    env: 'FLAG_SIDECAR_STATIC_COHORT_REREAD',
    default: '1h',
    description:
      "A static cohort's persons are read again after this long even when its record did not change: a member's new distinct_ids (a merge, a new device) do not change the record, so until then such an id is answered as not in the cohort.",
    parse: parseDurationWithin(second, 7 * 24 * hour),
  },
  staticCohortPullTimeout: {
    env: 'FLAG_SIDECAR_STATIC_COHORT_PULL_TIMEOUT',
    default: '60s',
    description: "Deadline of one static cohort's pull (its record and every page of persons, bodies included); a pull past it fails and the last complete list is kept.",
    parse: parseDurationWithin(1000, hour),
  },
  redisUrl: {
    env: 'FLAG_SIDECAR_REDIS_URL',
    defaultText: 'unset → no fleet mode',
    description:
      'Turns fleet mode on: `redis://[user:password@]host:port[/db]`, or `rediss://…` for TLS (extra CAs: `NODE_EXTRA_CA_CERTS`). Sidecars sharing it poll upstream once per project for the whole fleet and share key checks and endpoint runs (docs/operations.md).',
    parse: parseRedisUrl,
    secret: true,
  },
  redisUrlFile: {
    env: 'FLAG_SIDECAR_REDIS_URL_FILE',
    description: 'File holding the Redis URL (e.g. a mounted Secret, as it carries the password); use instead of `FLAG_SIDECAR_REDIS_URL`.',
    parse: parsePath,
  },
  redisMode: {
    env: 'FLAG_SIDECAR_REDIS_MODE',
    default: 'standalone',
    description:
      '`standalone`: the URL names the server. `cluster`: the URL names one node of a Redis Cluster (the others are discovered). `sentinel`: the URL names one Sentinel (port 26379 by default) and `FLAG_SIDECAR_REDIS_SENTINEL_MASTER` the master; failovers are followed. The URL\'s user, password and TLS apply to every node.',
    parse: parseRedisMode,
  },
  redisSentinelMaster: {
    env: 'FLAG_SIDECAR_REDIS_SENTINEL_MASTER',
    description: 'Sentinel mode: the name of the monitored master (as in `sentinel monitor <name> …`).',
    parse: (text: string): string => {
      const name = text.trim();
      if (!/^[A-Za-z0-9_.-]{1,128}$/.test(name)) throw new Error(`"${name.slice(0, 80)}" is not a master name`);
      return name;
    },
  },
  redisPrefix: {
    env: 'FLAG_SIDECAR_REDIS_PREFIX',
    default: 'flag-sidecar',
    description: 'Namespace of every Redis key and channel, so several fleets can share one Redis (or Valkey). Letters, digits and `-_.:`, at most 64.',
    parse: parseRedisPrefix,
  },
  redisTimeout: {
    env: 'FLAG_SIDECAR_REDIS_TIMEOUT',
    default: '250ms',
    description: 'Longest wait for any Redis command; past it the command counts as failed (Redis unavailable) and the sidecar carries on without it.',
    parse: parseDurationWithin(10, 10 * second),
  },
  fleetLease: {
    env: 'FLAG_SIDECAR_FLEET_LEASE',
    default: '10s',
    description:
      "Fleet mode: the leader lease per project. The leader renews it every third of this; when a leader dies another sidecar takes over within this time.",
    parse: parseDurationWithin(1000, 10 * 60 * second),
  },
  fleetOutageBudget: {
    env: 'FLAG_SIDECAR_FLEET_OUTAGE_BUDGET',
    default: '120',
    description:
      "Fleet mode: upstream polls a minute per project that the whole fleet may make while Redis is unavailable. Each sidecar then polls upstream itself, but only every `fleet size × 60 s / budget` (at least the poll interval, jittered), the fleet size being the last one its leader counted in Redis; so a fleet of 1,000 stays at 120 a minute where PostHog throttles at 600. Not applied behind a relay (the relay absorbs the polls), nor to a sidecar that has never seen the fleet's size or has nothing to serve.",
    parse: parseCount(1, 100_000),
  },
  fleetFetchRate: {
    env: 'FLAG_SIDECAR_FLEET_FETCH_RATE',
    default: '64MiB',
    description:
      "Fleet mode: the bytes a second that followers' fetches of a changed snapshot aim to take out of Redis. On a change each follower waits a random part of `fleet size × stored body size / rate` (at most one poll interval) before reading the new body, so a large fleet does not read it from Redis all at once.",
    parse: parseBytes,
  },
  fleetSecret: {
    env: 'FLAG_SIDECAR_FLEET_SECRET',
    defaultText: 'derived from the upstream key',
    description:
      'Secret (at least 32 characters) from which the key sealing shared state is derived (HKDF-SHA-256): snapshots, key checks and endpoint runs in Redis, `key-records.json` and the persisted snapshots. Every sidecar of a fleet needs the same one; what does not verify is ignored, counted and fetched again (docs/operations.md). Unset: derived from the upstream key, so sidecars with different upstream keys do not share (each polls itself); offline without it nothing is sealed.',
    parse: parseSecret,
    secret: true,
  },
  fleetSecretFile: {
    env: 'FLAG_SIDECAR_FLEET_SECRET_FILE',
    description: 'File holding the fleet secret (e.g. a mounted Secret); use instead of `FLAG_SIDECAR_FLEET_SECRET`.',
    parse: parsePath,
  },
  eventsUrl: {
    env: 'FLAG_SIDECAR_EVENTS_URL',
    defaultText: '`https://us.i.posthog.com` / `https://eu.i.posthog.com` for PostHog Cloud, else the upstream URL; offline: no relay',
    description:
      "Where the events relay forwards the SDKs' captures (`/batch/`, `/e/`, `/i/v0/e/`, `/capture/`, `/track/`, `/engage/`), as batches to its `/batch/`. Offline with this unset, capture paths answer 503.",
    parse: parseBaseUrl,
  },
  eventsAnyToken: {
    env: 'FLAG_SIDECAR_EVENTS_ANY_TOKEN',
    default: 'false',
    description:
      "Relay events of any project token. By default only the tokens of `FLAG_SIDECAR_PROJECTS` (and the snapshots served) are relayed, others get 401, so a relay reachable in the cluster is not an open relay into PostHog.",
    parse: parseBool,
  },
  eventsQueueMaxBytes: {
    env: 'FLAG_SIDECAR_EVENTS_QUEUE_MAX_BYTES',
    default: '64MiB',
    description: 'Bound of the events queue (events accepted, not yet forwarded). A request that does not fit gets 503 with Retry-After and nothing of it is kept; the SDK sends it again. A capture body is never decoded past the room left, nor past 32 MiB (upstream takes 100 MB decoded; docs/operations.md#events-relay); a request larger than this bound is never accepted.',
    parse: parseBytes,
  },
  eventsSpoolMax: {
    env: 'FLAG_SIDECAR_EVENTS_SPOOL_MAX',
    default: '256MiB',
    description: 'Bound of the events spool on the snapshot volume (`<FLAG_SIDECAR_SNAPSHOT_DIR>/events-spool`, used only when `FLAG_SIDECAR_SNAPSHOT_DIR` is set): accepted events are fsync\'ed there before the 200 and replayed after a restart. A request that does not fit gets 503 with Retry-After.',
    parse: parseBytes,
  },
  eventsIntakeMaxBytes: {
    env: 'FLAG_SIDECAR_EVENTS_INTAKE_MAX_BYTES',
    defaultText: 'an eighth of the container\'s memory limit (cgroup), 32MiB without one',
    description:
      'Memory budget of the capture requests being read, decoded and parsed at once (each holds its body, and its decoded text when compressed; accepted events are then counted by `FLAG_SIDECAR_EVENTS_QUEUE_MAX_BYTES`). A request that finds it taken waits up to 1 s, then gets 503 with Retry-After and the SDK sends it again; one request larger than the whole budget is taken alone. With the chart\'s 256Mi limit: 32MiB (docs/reliability.md).',
    parse: parseBytes,
  },
  eventsQueueMaxEvents: {
    env: 'FLAG_SIDECAR_EVENTS_QUEUE_MAX_EVENTS',
    default: '100000',
    description: 'Most events in the events queue (see `FLAG_SIDECAR_EVENTS_QUEUE_MAX_BYTES`).',
    parse: parseCount(1, 10_000_000),
  },
  eventsBatchSize: {
    env: 'FLAG_SIDECAR_EVENTS_BATCH_SIZE',
    default: '500',
    description: 'Most events per batch forwarded upstream.',
    parse: parseCount(1, 10_000),
  },
  eventsBatchMaxBytes: {
    env: 'FLAG_SIDECAR_EVENTS_BATCH_MAX_BYTES',
    default: '4MiB',
    description: "Most bytes per batch forwarded upstream (upstream takes 20 MB); a single larger event is sent alone.",
    parse: parseBytes,
  },
  eventsLinger: {
    env: 'FLAG_SIDECAR_EVENTS_LINGER',
    default: '200ms',
    description: 'How long the relay waits for a batch to fill before forwarding what it has.',
    parse: parseDurationWithin(0, 10 * second),
  },
  ofrepRequireKey: {
    env: 'FLAG_SIDECAR_OFREP_REQUIRE_KEY',
    defaultText: 'none: the project token (or nothing, with one project) selects the project',
    description:
      "Projects (comma list of ids, or `*` for all) whose OpenFeature (OFREP) routes require a key of the normal kinds (`Authorization: Bearer phx_…`/`phs_…`, a keys-file key, or `X-API-Key`) with `feature_flag:read`, instead of the public project token. Use it when the API listener is reachable beyond the pod and flag values are not public (docs/evaluation.md#openfeature-ofrep).",
    parse: parseProjectSelection,
  },
  logLevel: {
    env: 'FLAG_SIDECAR_LOG_LEVEL',
    default: 'info',
    description: 'pino level: fatal, error, warn, info, debug, trace, silent.',
    parse: parseLogLevel,
  },
  accessLog: {
    env: 'FLAG_SIDECAR_ACCESS_LOG',
    default: 'refusals',
    description:
      'Access log, one line per answered request (route, method, status, duration, key kind and the first 8 hex digits of its SHA-256, refusal reason; never a key, token or raw URL). `refusals`: refusals (4xx/5xx) at info, successes at debug. `all`: successes at info too. `off`: none. The operations listener logs at debug only.',
    parse: parseAccessLogMode,
  },
  accessLogRate: {
    env: 'FLAG_SIDECAR_ACCESS_LOG_RATE',
    default: '50',
    description: 'Most access log lines per second (a token bucket with a burst of as many); the lines suppressed beyond are counted in one warning a second later.',
    parse: parseCount(1, 100_000),
  },
  upstreamTimeout: {
    env: 'FLAG_SIDECAR_UPSTREAM_TIMEOUT',
    default: '10s',
    description: 'Upstream response headers timeout, and the longest pause while reading a body; a whole request gets at most the connect timeout + 2× this.',
    parse: parseDurationWithin(100, 5 * 60 * second),
  },
  upstreamConnectTimeout: {
    env: 'FLAG_SIDECAR_UPSTREAM_CONNECT_TIMEOUT',
    default: '5s',
    description: 'Upstream TCP/TLS connect timeout.',
    parse: parseDurationWithin(100, 60 * second),
  },
  upstreamMaxBody: {
    env: 'FLAG_SIDECAR_UPSTREAM_MAX_BODY',
    default: '64MiB',
    description: 'Largest upstream response body accepted; a larger one is a failed poll, never a partial snapshot.',
    parse: parseBytes,
  },
  shutdownTimeout: {
    env: 'FLAG_SIDECAR_SHUTDOWN_TIMEOUT',
    default: '10s',
    description: 'On SIGTERM: the hard deadline. In-flight requests and writes get all but a tenth (at most 1 s) of it; the process has exited by then.',
    parse: parseDurationWithin(0, 5 * 60 * second),
  },
} as const satisfies Record<string, Setting<unknown>>;

type Spec = typeof spec;

/** A setting with a default always has a value; one without may be null (unset). */
type Value<S> = S extends { default: string; parse: (text: string) => infer T }
  ? T
  : S extends { parse: (text: string) => infer T }
    ? T | null
    : never;

/** The parsed settings, before cross-setting rules are applied. */
export type RawConfig = { readonly [K in keyof Spec]: Value<Spec[K]> };

/** The settings as a list, in table order. */
export const settings: ReadonlyArray<readonly [keyof Spec, Setting<unknown>]> = Object.entries(spec) as Array<
  [keyof Spec, Setting<unknown>]
>;
