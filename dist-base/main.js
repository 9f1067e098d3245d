#!/usr/bin/env node
import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);
import {
  http,
  parseKeysFile
} from "./chunk-NK6ITCOZ.js";
import {
  ConfigError,
  parseSnapshotFile,
  redactSecrets,
  serializeSnapshotFile,
  upstreamAnswered,
  writeFileAtomic
} from "./chunk-NKODD5P7.js";
import {
  formatDuration,
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
  redactRedisUrl
} from "./chunk-SETGV34Z.js";
import {
  createVariant,
  emptyProject,
  parseDefinitions,
  withChanges
} from "./chunk-YXIUFDAM.js";
import "./chunk-64F6AQPD.js";

// src/main.ts
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

// src/cli.ts
import { randomBytes } from "node:crypto";
import { readFile, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";

// src/config/spec.ts
var second = 1e3;
var hour = 36e5;
var spec = {
  upstreamUrl: {
    env: "FLAG_SIDECAR_UPSTREAM_URL",
    defaultText: "unset \u2192 offline mode",
    description: "Upstream base URL, e.g. `https://us.posthog.com`. Unset: serve the bootstrap snapshot offline, poll nothing.",
    parse: parseBaseUrl
  },
  upstreamKey: {
    env: "FLAG_SIDECAR_UPSTREAM_KEY",
    description: "The sidecar's own key for polling: a project secret key (`phs_\u2026`) or a personal key (`phx_\u2026`) with `feature_flag:read`. Callers presenting it are trusted for the configured projects.",
    parse: parseKey,
    secret: true
  },
  upstreamKeyFile: {
    env: "FLAG_SIDECAR_UPSTREAM_KEY_FILE",
    description: "File holding the upstream key (e.g. a mounted Secret); use instead of `FLAG_SIDECAR_UPSTREAM_KEY`.",
    parse: parsePath
  },
  projects: {
    env: "FLAG_SIDECAR_PROJECTS",
    defaultText: "offline: the projects in the bootstrap file",
    description: "Comma list of `id` or `id:phc_token`. The token lets SDKs find the project (`?token=`). Left out, it is learned from upstream at start (`GET /api/projects/:id/`; a personal key with `project:read`), else taken from the stored snapshot, else the start is refused (exit 2).",
    parse: parseProjects
  },
  listen: {
    env: "FLAG_SIDECAR_LISTEN",
    default: "127.0.0.1:8010",
    description: "API listener (`host:port`); the app and its SDKs talk to this.",
    parse: parseListen
  },
  opsListen: {
    env: "FLAG_SIDECAR_OPS_LISTEN",
    default: "0.0.0.0:8011",
    description: "Operations listener: `/healthz`, `/readyz`, `/metrics`, `/status`.",
    parse: parseListen
  },
  maxConnections: {
    env: "FLAG_SIDECAR_MAX_CONNECTIONS",
    default: "1024",
    description: "Most connections the API listener holds open at once (keep-alive ones included), so that clients cannot use up the process's file handles (keep `ulimit -n` above this + `FLAG_SIDECAR_OPS_MAX_CONNECTIONS` + 100). A connection past it is closed at once, without an answer (counted in `flag_sidecar_http_connections_dropped_total`).",
    parse: parseCount(1, 1e6)
  },
  opsMaxConnections: {
    env: "FLAG_SIDECAR_OPS_MAX_CONNECTIONS",
    default: "64",
    description: "Most connections the operations listener holds open at once; its own cap, so probes and scrapes get through while the API listener is full.",
    parse: parseCount(1, 1e5)
  },
  pollInterval: {
    env: "FLAG_SIDECAR_POLL_INTERVAL",
    default: "30s",
    description: "Poll period per project, jittered \xB110%. Backoff after failures is capped at 8\xD7 this.",
    parse: parseDurationWithin(100, hour)
  },
  snapshotDir: {
    env: "FLAG_SIDECAR_SNAPSHOT_DIR",
    description: "Directory where the last good snapshot of each project, and the keys upstream verified (SHA-256 digests only), are persisted and read back at start.",
    parse: parsePath
  },
  bootstrapFile: {
    env: "FLAG_SIDECAR_BOOTSTRAP_FILE",
    defaultText: "`config/snapshot.example.json` when offline",
    description: "Snapshot file served before the first poll (and offline). Format: docs/snapshot-format.md.",
    parse: parsePath
  },
  keysFile: {
    env: "FLAG_SIDECAR_KEYS_FILE",
    defaultText: "`config/keys.example.json` when offline on the example snapshot",
    description: "Static keys: SHA-256 digests of keys \u2192 label, scopes, projects. Format: docs/keys-file.md.",
    parse: parsePath
  },
  authCacheTtl: {
    env: "FLAG_SIDECAR_AUTH_CACHE_TTL",
    default: "5m",
    description: "How long a personal key introspected upstream (`/api/personal_api_keys/@current/`) is trusted before it is asked again.",
    parse: parseDurationWithin(1e3, 24 * hour)
  },
  authNegativeTtl: {
    env: "FLAG_SIDECAR_AUTH_NEGATIVE_TTL",
    default: "30s",
    description: "How long a key upstream rejected (401) is answered 401 without asking again.",
    parse: parseDurationWithin(100, hour)
  },
  authGrace: {
    env: "FLAG_SIDECAR_AUTH_GRACE",
    default: "1h",
    description: "While upstream is unreachable, how long past its TTL a cached principal keeps working (across a restart too, with a snapshot dir). Unknown keys get 503 meanwhile.",
    parse: parseDurationWithin(0, 7 * 24 * hour)
  },
  authCacheMax: {
    env: "FLAG_SIDECAR_AUTH_CACHE_MAX",
    default: "10000",
    description: "Most keys (by SHA-256, never the key) remembered by the principal cache.",
    parse: parseCount(10, 1e6)
  },
  cacheMaxBytes: {
    env: "FLAG_SIDECAR_CACHE_MAX_BYTES",
    default: "64MiB",
    description: "Read-through cache bound: total bytes of cached upstream responses (least recently used go first).",
    parse: parseBytes
  },
  cacheMaxEntries: {
    env: "FLAG_SIDECAR_CACHE_MAX_ENTRIES",
    default: "10000",
    description: "Read-through cache bound: most cached responses.",
    parse: parseCount(10, 1e6)
  },
  cacheTtl: {
    env: "FLAG_SIDECAR_CACHE_TTL",
    default: "10s",
    description: "How long a cached upstream read (flag list, retrieve, status, remote_config, my_flags \u2026) is served before upstream is asked again.",
    parse: parseDurationWithin(0, hour)
  },
  cacheActivityTtl: {
    env: "FLAG_SIDECAR_CACHE_ACTIVITY_TTL",
    default: "30s",
    description: "Cache lifetime of the activity logs (per flag and per project).",
    parse: parseDurationWithin(0, hour)
  },
  cacheNotFoundTtl: {
    env: "FLAG_SIDECAR_CACHE_NOT_FOUND_TTL",
    default: "2s",
    description: "Cache lifetime of an upstream 404, so a storm of lookups for a missing id stays cheap.",
    parse: parseDurationWithin(0, hour)
  },
  cacheStaleMax: {
    env: "FLAG_SIDECAR_CACHE_STALE_MAX",
    default: "1h",
    description: "When upstream fails or times out, a cached response up to this age is served (marked stale) instead of an error. `0s`: never.",
    parse: parseDurationWithin(0, 7 * 24 * hour)
  },
  endpointRunTtl: {
    env: "FLAG_SIDECAR_ENDPOINT_RUN_TTL",
    default: "60s",
    description: "Longest a named endpoint's latest-version run result is served from memory (edits made outside the sidecar show within this time); within upstream's own `cache_target_age` when it gives one. Runs of a pinned version use upstream's `cache_target_age` (at most a day), this when it gives none.",
    parse: parseDurationWithin(0, 24 * hour)
  },
  endpointRunMaxBytes: {
    env: "FLAG_SIDECAR_ENDPOINT_RUN_MAX_BYTES",
    default: "32MiB",
    description: "Bound of the endpoint run cache: total bytes of cached run results (least recently used go first).",
    parse: parseBytes
  },
  endpointVersionTtl: {
    env: "FLAG_SIDECAR_ENDPOINT_VERSION_TTL",
    default: "1h",
    description: "Cache lifetime of a named endpoint's specific version record (`versions/:n`), which never changes until the endpoint is deleted.",
    parse: parseDurationWithin(0, 7 * 24 * hour)
  },
  endpointMetricNames: {
    env: "FLAG_SIDECAR_ENDPOINT_METRIC_NAMES",
    default: "",
    description: "Comma-separated endpoint names given their own `endpoint` label in the run metrics. Empty: the first 20 names upstream confirmed exist (a run answered 2xx; a misspelt name answered 404 never takes a label); every other name is counted as `other`.",
    parse: (text) => text.split(",").map((name) => name.trim()).filter((name) => name !== "")
  },
  maxRequestBody: {
    env: "FLAG_SIDECAR_MAX_REQUEST_BODY",
    default: "1MiB",
    description: "Largest request body accepted for a forwarded write; larger ones get 413.",
    parse: parseBytes
  },
  writeSyncTimeout: {
    env: "FLAG_SIDECAR_WRITE_SYNC_TIMEOUT",
    default: "3s",
    description: "After a successful flag create/update, how long the reply waits while the project is re-polled until the snapshot shows the write (read-your-writes). `0s`: do not wait.",
    parse: parseDurationWithin(0, 60 * second)
  },
  flagsAnswerCacheMaxBytes: {
    env: "FLAG_SIDECAR_FLAGS_ANSWER_CACHE_MAX_BYTES",
    default: "8MiB",
    description: "Whole `/flags` answers decided entirely from the snapshot are kept for requests sent again byte for byte (an SDK asking again for the same person), and reused with a fresh `requestId` and `evaluatedAt` while the definitions and static cohorts are unchanged (an answer that checked a date filter relative to now, such as `-30d`, only until that filter could decide otherwise). Bound: total bytes (least recently used go first; one answer at most a quarter of it); a body is kept from its second request on. `0`: off.",
    parse: parseBytesOrOff
  },
  staticCohortMaxPersons: {
    env: "FLAG_SIDECAR_STATIC_COHORT_MAX_PERSONS",
    default: "10000",
    description: "Static cohorts referenced by flags (upstream leaves them out of local_evaluation) are pulled with the upstream key \u2014 when it has `cohort:read` and `person:read`, else this is off \u2014 and refreshed after every poll, so `/flags` decides their flags locally. A cohort with more persons than this is not pulled (its flags go upstream); memory is about 100 bytes per distinct_id. `0`: off.",
    parse: parseCount(0, 1e6)
  },
  redisUrl: {
    env: "FLAG_SIDECAR_REDIS_URL",
    defaultText: "unset \u2192 no fleet mode",
    description: "Turns fleet mode on: `redis://[user:password@]host:port[/db]`, or `rediss://\u2026` for TLS (extra CAs: `NODE_EXTRA_CA_CERTS`). Sidecars sharing it poll upstream once per project for the whole fleet and share key checks and endpoint runs (docs/operations.md).",
    parse: parseRedisUrl,
    secret: true
  },
  redisUrlFile: {
    env: "FLAG_SIDECAR_REDIS_URL_FILE",
    description: "File holding the Redis URL (e.g. a mounted Secret, as it carries the password); use instead of `FLAG_SIDECAR_REDIS_URL`.",
    parse: parsePath
  },
  redisMode: {
    env: "FLAG_SIDECAR_REDIS_MODE",
    default: "standalone",
    description: "`standalone`: the URL names the server. `cluster`: the URL names one node of a Redis Cluster (the others are discovered). `sentinel`: the URL names one Sentinel (port 26379 by default) and `FLAG_SIDECAR_REDIS_SENTINEL_MASTER` the master; failovers are followed. The URL's user, password and TLS apply to every node.",
    parse: parseRedisMode
  },
  redisSentinelMaster: {
    env: "FLAG_SIDECAR_REDIS_SENTINEL_MASTER",
    description: "Sentinel mode: the name of the monitored master (as in `sentinel monitor <name> \u2026`).",
    parse: (text) => {
      const name = text.trim();
      if (!/^[A-Za-z0-9_.-]{1,128}$/.test(name)) throw new Error(`"${name.slice(0, 80)}" is not a master name`);
      return name;
    }
  },
  redisPrefix: {
    env: "FLAG_SIDECAR_REDIS_PREFIX",
    default: "flag-sidecar",
    description: "Namespace of every Redis key and channel, so several fleets can share one Redis (or Valkey). Letters, digits and `-_.:`, at most 64.",
    parse: parseRedisPrefix
  },
  redisTimeout: {
    env: "FLAG_SIDECAR_REDIS_TIMEOUT",
    default: "250ms",
    description: "Longest wait for any Redis command; past it the command counts as failed (Redis unavailable) and the sidecar carries on without it.",
    parse: parseDurationWithin(10, 10 * second)
  },
  fleetLease: {
    env: "FLAG_SIDECAR_FLEET_LEASE",
    default: "10s",
    description: "Fleet mode: the leader lease per project. The leader renews it every third of this; when a leader dies another sidecar takes over within this time.",
    parse: parseDurationWithin(1e3, 10 * 60 * second)
  },
  eventsUrl: {
    env: "FLAG_SIDECAR_EVENTS_URL",
    defaultText: "`https://us.i.posthog.com` / `https://eu.i.posthog.com` for PostHog Cloud, else the upstream URL; offline: no relay",
    description: "Where the events relay forwards the SDKs' captures (`/batch/`, `/e/`, `/i/v0/e/`, `/capture/`, `/track/`, `/engage/`), as batches to its `/batch/`. Offline with this unset, capture paths answer 503.",
    parse: parseBaseUrl
  },
  eventsAnyToken: {
    env: "FLAG_SIDECAR_EVENTS_ANY_TOKEN",
    default: "false",
    description: "Relay events of any project token. By default only the tokens of `FLAG_SIDECAR_PROJECTS` (and the snapshots served) are relayed, others get 401, so a relay reachable in the cluster is not an open relay into PostHog.",
    parse: parseBool
  },
  eventsQueueMaxBytes: {
    env: "FLAG_SIDECAR_EVENTS_QUEUE_MAX_BYTES",
    default: "64MiB",
    description: "Bound of the events queue (events accepted, not yet forwarded). A request that does not fit gets 503 with Retry-After and nothing of it is kept; the SDK sends it again.",
    parse: parseBytes
  },
  eventsSpoolMax: {
    env: "FLAG_SIDECAR_EVENTS_SPOOL_MAX",
    default: "256MiB",
    description: "Bound of the events spool on the snapshot volume (`<FLAG_SIDECAR_SNAPSHOT_DIR>/events-spool`, used only when `FLAG_SIDECAR_SNAPSHOT_DIR` is set): accepted events are fsync'ed there before the 200 and replayed after a restart. A request that does not fit gets 503 with Retry-After.",
    parse: parseBytes
  },
  eventsQueueMaxEvents: {
    env: "FLAG_SIDECAR_EVENTS_QUEUE_MAX_EVENTS",
    default: "100000",
    description: "Most events in the events queue (see `FLAG_SIDECAR_EVENTS_QUEUE_MAX_BYTES`).",
    parse: parseCount(1, 1e7)
  },
  eventsBatchSize: {
    env: "FLAG_SIDECAR_EVENTS_BATCH_SIZE",
    default: "500",
    description: "Most events per batch forwarded upstream.",
    parse: parseCount(1, 1e4)
  },
  eventsBatchMaxBytes: {
    env: "FLAG_SIDECAR_EVENTS_BATCH_MAX_BYTES",
    default: "4MiB",
    description: "Most bytes per batch forwarded upstream (upstream takes 20 MB); a single larger event is sent alone.",
    parse: parseBytes
  },
  eventsLinger: {
    env: "FLAG_SIDECAR_EVENTS_LINGER",
    default: "200ms",
    description: "How long the relay waits for a batch to fill before forwarding what it has.",
    parse: parseDurationWithin(0, 10 * second)
  },
  ofrepRequireKey: {
    env: "FLAG_SIDECAR_OFREP_REQUIRE_KEY",
    defaultText: "none: the project token (or nothing, with one project) selects the project",
    description: "Projects (comma list of ids, or `*` for all) whose OpenFeature (OFREP) routes require a key of the normal kinds (`Authorization: Bearer phx_\u2026`/`phs_\u2026`, a keys-file key, or `X-API-Key`) with `feature_flag:read`, instead of the public project token. Use it when the API listener is reachable beyond the pod and flag values are not public (docs/evaluation.md#openfeature-ofrep).",
    parse: parseProjectSelection
  },
  logLevel: {
    env: "FLAG_SIDECAR_LOG_LEVEL",
    default: "info",
    description: "pino level: fatal, error, warn, info, debug, trace, silent.",
    parse: parseLogLevel
  },
  accessLog: {
    env: "FLAG_SIDECAR_ACCESS_LOG",
    default: "refusals",
    description: "Access log, one line per answered request (route, method, status, duration, key kind and the first 8 hex digits of its SHA-256, refusal reason; never a key, token or raw URL). `refusals`: refusals (4xx/5xx) at info, successes at debug. `all`: successes at info too. `off`: none. The operations listener logs at debug only.",
    parse: parseAccessLogMode
  },
  accessLogRate: {
    env: "FLAG_SIDECAR_ACCESS_LOG_RATE",
    default: "50",
    description: "Most access log lines per second (a token bucket with a burst of as many); the lines suppressed beyond are counted in one warning a second later.",
    parse: parseCount(1, 1e5)
  },
  upstreamTimeout: {
    env: "FLAG_SIDECAR_UPSTREAM_TIMEOUT",
    default: "10s",
    description: "Upstream response headers timeout, and the longest pause while reading a body; a whole request gets at most the connect timeout + 2\xD7 this.",
    parse: parseDurationWithin(100, 5 * 60 * second)
  },
  upstreamConnectTimeout: {
    env: "FLAG_SIDECAR_UPSTREAM_CONNECT_TIMEOUT",
    default: "5s",
    description: "Upstream TCP/TLS connect timeout.",
    parse: parseDurationWithin(100, 60 * second)
  },
  upstreamMaxBody: {
    env: "FLAG_SIDECAR_UPSTREAM_MAX_BODY",
    default: "64MiB",
    description: "Largest upstream response body accepted; a larger one is a failed poll, never a partial snapshot.",
    parse: parseBytes
  },
  shutdownTimeout: {
    env: "FLAG_SIDECAR_SHUTDOWN_TIMEOUT",
    default: "10s",
    description: "On SIGTERM: the hard deadline. In-flight requests and writes get all but a tenth (at most 1 s) of it; the process has exited by then.",
    parse: parseDurationWithin(0, 5 * 60 * second)
  }
};
var settings = Object.entries(spec);

// src/health.ts
var bodyLimit = 1024;
var healthTimeout = { defaultMs: 3e3, parse: parseDurationWithin(100, 6e4) };
function parseHealthOptions(args) {
  let timeoutMs = healthTimeout.defaultMs;
  for (let i = 0; i < args.length; i++) {
    const option = args[i];
    const value = option === "--timeout" ? args[++i] : option.startsWith("--timeout=") ? option.slice("--timeout=".length) : null;
    if (value === null) return { error: `unexpected argument "${option}"` };
    try {
      timeoutMs = healthTimeout.parse(value ?? "");
    } catch (error) {
      return { error: `health --timeout: ${error.message}` };
    }
  }
  return { timeoutMs };
}
function opsListenOf(env) {
  const { env: name, parse } = spec.opsListen;
  const given = env[name];
  try {
    return parse(given !== void 0 && given.trim() !== "" ? given : spec.opsListen.default);
  } catch (error) {
    return { code: 2, message: redactSecrets(`${name}: ${error.message}`, []) };
  }
}
function readyzUrl(ops) {
  if (ops.port === 0) {
    return { code: 2, message: "FLAG_SIDECAR_OPS_LISTEN has port 0 (any free port): health cannot know it; set a fixed port" };
  }
  const host = ops.host === "0.0.0.0" || ops.host === "" ? "127.0.0.1" : ops.host === "::" ? "::1" : ops.host;
  return `http://${host.includes(":") ? `[${host}]` : host}:${ops.port}/readyz`;
}
function probeReadyz(url, timeoutMs) {
  return new Promise((resolve2) => {
    let settled = false;
    const finish = (outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve2(outcome);
    };
    const req = http.request(url, { method: "GET", agent: false, headers: { accept: "application/json", connection: "close" } }, (res) => {
      const chunks = [];
      let size = 0;
      const judge = () => {
        const body = Buffer.concat(chunks).toString("utf8").trim().slice(0, 200);
        const status = res.statusCode ?? 0;
        finish(status === 200 ? { code: 0, message: `ready: ${url}` } : { code: 1, message: `not ready: ${url} answered ${status}${body ? ` ${body}` : ""}` });
      };
      res.on("data", (chunk) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= bodyLimit) judge();
      });
      res.on("end", judge);
      res.on("error", (error) => finish({ code: 1, message: `not ready: ${url}: answer cut off (${error.message})` }));
    });
    const timer = setTimeout(() => finish({ code: 1, message: `not ready: ${url} gave no answer within ${formatDuration(timeoutMs)}` }), timeoutMs);
    req.on("error", (error) => finish({ code: 1, message: `unreachable: ${url}: ${error.code ?? error.message}` }));
    req.end();
  });
}
async function checkHealth(env, timeoutMs) {
  const ops = opsListenOf(env);
  if ("code" in ops) return ops;
  const url = readyzUrl(ops);
  return typeof url === "string" ? probeReadyz(url, timeoutMs) : url;
}

// src/cli.ts
var helpText = `Usage: flag-sidecar [command] [options]

Commands:
  serve                       run the sidecar (the default)
  check-config                validate the FLAG_SIDECAR_* environment and the files it names; print the
                              effective configuration (secrets masked); exit 2 on a problem
  snapshot pull --out FILE    fetch the configured projects' flag definitions from upstream into FILE, a
                              snapshot file usable as FLAG_SIDECAR_BOOTSTRAP_FILE (offline, air-gapped runs)
  health [--timeout 3s]       ask the running sidecar's ops listener (FLAG_SIDECAR_OPS_LISTEN) for /readyz:
                              exit 0 when ready, 1 when not ready or unreachable (a container HEALTHCHECK)

Options:
  -h, --help                  show this help
  -v, --version               print the version

Configuration is read from the environment only (FLAG_SIDECAR_*; see README.md).
Exit codes: 0 done (serve: after a clean SIGTERM/SIGINT), 1 failed, 2 bad configuration or usage.
`;
function parseCommand(args) {
  if (args.includes("-h") || args.includes("--help") || args[0] === "help") return { kind: "help" };
  if (args.includes("-v") || args.includes("--version") || args[0] === "version") return { kind: "version" };
  const [command2, ...rest] = args;
  const extra = (list) => ({ kind: "usage-error", message: `unexpected argument "${list[0]}"` });
  if (command2 === void 0 || command2 === "serve") return rest.length > 0 ? extra(rest) : { kind: "serve" };
  if (command2 === "check-config") return rest.length > 0 ? extra(rest) : { kind: "check-config" };
  if (command2 === "health") {
    const options = parseHealthOptions(rest);
    return "error" in options ? { kind: "usage-error", message: options.error } : { kind: "health", timeoutMs: options.timeoutMs };
  }
  if (command2 === "snapshot") {
    const [sub, ...options] = rest;
    if (sub !== "pull") return { kind: "usage-error", message: sub === void 0 ? 'snapshot: say "pull"' : `snapshot: unknown subcommand "${sub}"` };
    let out;
    for (let i = 0; i < options.length; i++) {
      const option = options[i];
      if (option === "--out" || option === "-o") {
        out = options[i + 1];
        i++;
      } else if (option.startsWith("--out=")) out = option.slice("--out=".length);
      else return extra([option]);
    }
    if (out === void 0 || out === "") return { kind: "usage-error", message: "snapshot pull: --out FILE is required" };
    return { kind: "snapshot-pull", out };
  }
  return { kind: "usage-error", message: `unknown command "${command2}"` };
}
var maskSecret = (secret) => `${secret.slice(0, 4)}\u2026 (${secret.length} characters, masked)`;
function describeConfig(config2) {
  const address = (a) => a.host.includes(":") ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
  return {
    mode: config2.upstream ? "online" : "offline",
    upstream: config2.upstream ? {
      url: config2.upstream.url.href,
      key: maskSecret(config2.upstream.key),
      timeout_ms: config2.upstream.timeoutMs,
      connect_timeout_ms: config2.upstream.connectTimeoutMs,
      max_body_bytes: config2.upstream.maxBodyBytes
    } : null,
    projects: config2.projects?.map((p) => ({ id: p.id, token: p.token })) ?? "from the bootstrap file",
    listen: address(config2.listen),
    ops_listen: address(config2.opsListen),
    max_connections: config2.maxConnections,
    poll_interval_ms: config2.pollIntervalMs,
    snapshot_dir: config2.snapshotDir,
    bootstrap_file: config2.bootstrapFile,
    keys_file: config2.keysFile,
    log_level: config2.logLevel,
    access_log: config2.accessLog,
    shutdown_timeout_ms: config2.shutdownTimeoutMs,
    auth: config2.auth,
    cache: config2.cache,
    endpoints: config2.endpoints,
    max_request_body_bytes: config2.maxRequestBodyBytes,
    write_sync_timeout_ms: config2.writeSyncTimeoutMs,
    fleet: config2.fleet ? { redis_url: redactRedisUrl(config2.fleet.redisUrl), prefix: config2.fleet.prefix, timeout_ms: config2.fleet.timeoutMs, lease_ms: config2.fleet.leaseMs } : null
  };
}
async function checkFiles(config2) {
  const problems = [];
  if (config2.keysFile !== null) {
    try {
      parseKeysFile(await readFile(config2.keysFile, "utf8"), config2.keysFile);
    } catch (error) {
      problems.push(`FLAG_SIDECAR_KEYS_FILE: ${error.message}`);
    }
  }
  if (config2.bootstrapFile !== null) {
    try {
      const text = await readFile(config2.bootstrapFile, "utf8");
      const single = config2.projects?.length === 1 ? config2.projects[0]?.id ?? null : null;
      parseSnapshotFile(text, { file: config2.bootstrapFile, source: "bootstrap", bareProjectId: single, mtimeMs: Date.now() });
    } catch (error) {
      problems.push(`FLAG_SIDECAR_BOOTSTRAP_FILE: ${error.message}`);
    }
  }
  if (config2.snapshotDir !== null) {
    const problem = await snapshotDirProblem(config2.snapshotDir);
    if (problem !== null) problems.push(`FLAG_SIDECAR_SNAPSHOT_DIR: ${problem}`);
  }
  const { projectTokenProblems } = await import("./check-tokens-RN5KDF2K.js");
  problems.push(...await projectTokenProblems(config2));
  if (config2.upstream === null && config2.bootstrapFile === null && config2.snapshotDir === null) {
    problems.push("nothing to serve: offline (no FLAG_SIDECAR_UPSTREAM_URL) and no FLAG_SIDECAR_BOOTSTRAP_FILE or FLAG_SIDECAR_SNAPSHOT_DIR");
  }
  return problems;
}
async function snapshotDirProblem(dir) {
  let target = dir;
  for (; ; ) {
    try {
      if (!(await stat(target)).isDirectory()) return `${target} is not a directory`;
      break;
    } catch {
      const parent = dirname(target);
      if (parent === target) return `${dir}: no existing parent directory`;
      target = parent;
    }
  }
  const probe = join(target, `.flag-sidecar-check-${process.pid}-${randomBytes(4).toString("hex")}`);
  try {
    await writeFile(probe, "", { flag: "wx" });
  } catch (error) {
    return `${target} is not writable (${error.code ?? error.message})`;
  }
  await rm(probe, { force: true });
  return null;
}
var PullError = class extends Error {
};
async function pullSnapshot(config2, out, build2, now = Date.now) {
  if (config2.upstream === null || config2.projects === null) {
    throw new PullError("snapshot pull needs FLAG_SIDECAR_UPSTREAM_URL, FLAG_SIDECAR_UPSTREAM_KEY and FLAG_SIDECAR_PROJECTS");
  }
  const { upstream } = config2;
  const [{ Registry }, { createMetrics }, { createUpstreamClient }] = await Promise.all([
    import("./prom-SAYKW7YQ.js"),
    import("./metrics-MADTSDIR.js"),
    import("./client-VEJER4OG.js")
  ]);
  const client = createUpstreamClient({
    url: upstream.url,
    timeoutMs: upstream.timeoutMs,
    connectTimeoutMs: upstream.connectTimeoutMs,
    maxBodyBytes: upstream.maxBodyBytes,
    userAgent: `flag-sidecar/${build2.version}`,
    metrics: createMetrics(new Registry(), build2)
  });
  try {
    const projects = await Promise.all(
      config2.projects.map(async (project) => {
        const result = await client.request({
          operation: "local_evaluation",
          method: "GET",
          path: `/api/projects/${project.id}/feature_flags/local_evaluation/?send_cohorts`,
          headers: { authorization: `Bearer ${upstream.key}`, accept: "application/json" }
        });
        if (result.kind === "failure") throw new PullError(`project ${project.id}: no answer from upstream (${result.cause}: ${result.message})`);
        if (result.status !== 200) throw new PullError(`project ${project.id}: ${upstreamAnswered(result.status, result.body)}`);
        const parsed = parseDefinitions(result.body);
        if (!parsed.ok) throw new PullError(`project ${project.id}: unusable body: ${parsed.error}`);
        const etag = result.headers.etag;
        const cohorts = createVariant({
          body: result.body,
          definitions: parsed.value,
          upstreamEtag: typeof etag === "string" ? etag : null,
          fetchedAt: now(),
          source: "upstream"
        });
        return withChanges(emptyProject(project.id, project.token), { cohorts });
      })
    );
    await writeFileAtomic(out, serializeSnapshotFile(projects, now()));
    return projects.map((p) => ({ id: p.projectId, flags: p.cohorts?.definitions.flags.length ?? 0 }));
  } finally {
    await client.close();
  }
}

// src/config/load.ts
import { isAbsolute, join as join2, resolve } from "node:path";

// src/config/env-names.ts
import { isIP } from "node:net";
var otherNames = [
  "FLAG_SIDECAR_BUILD_VERSION",
  // set by the image's build arguments, read by main.ts
  "FLAG_SIDECAR_BUILD_COMMIT",
  "FLAG_SIDECAR_URL"
  // the app container's address of its sidecar (Helm `flag-sidecar.appEnv`)
];
function editDistance(a, b) {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current.push(Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost));
    }
    previous = current;
  }
  return previous[b.length];
}
function closestName(name, known) {
  let best = known[0] ?? "";
  let bestDistance = Infinity;
  for (const candidate of known) {
    const distance = editDistance(name, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}
var serviceLinkSuffix = /^(?:SERVICE_PORT(?:_[A-Z0-9_]+)?|PORT(?:_[0-9]+_(?:TCP|UDP|SCTP)(?:_(?:PROTO|PORT|ADDR))?)?)$/;
function kubernetesServiceLinks(env) {
  const names = /* @__PURE__ */ new Set();
  const ours = Object.keys(env).filter((name) => name.startsWith("FLAG_SIDECAR_"));
  const services = ours.filter((name) => name.endsWith("_SERVICE_HOST") && isIP(env[name] ?? "") !== 0);
  for (const host of services) {
    const service = host.slice(0, -"SERVICE_HOST".length);
    names.add(host);
    for (const name of ours) if (name.startsWith(service) && serviceLinkSuffix.test(name.slice(service.length))) names.add(name);
  }
  return names;
}
function unknownSettingProblems(env, known) {
  const allowed = /* @__PURE__ */ new Set([...known, ...otherNames, ...kubernetesServiceLinks(env)]);
  return Object.keys(env).filter((name) => name.startsWith("FLAG_SIDECAR_") && env[name] !== void 0 && !allowed.has(name)).sort().map((name) => name.slice(0, 100)).map((name) => `${name}: not a setting; did you mean ${closestName(name, known)}? (see the configuration table in README.md)`);
}

// src/config/events-url.ts
var cloudIngestion = {
  "us.posthog.com": "https://us.i.posthog.com",
  "app.posthog.com": "https://us.i.posthog.com",
  "eu.posthog.com": "https://eu.i.posthog.com"
};
function eventsUrlFor(given, upstream) {
  if (given !== null) return given;
  if (upstream === null) return null;
  const cloud = cloudIngestion[upstream.hostname.toLowerCase()];
  return cloud !== void 0 && upstream.protocol === "https:" ? new URL(cloud) : upstream;
}

// src/config/load.ts
function parseEnv(env) {
  const problems = [];
  const raw = {};
  for (const [name, setting] of settings) {
    const given = env[setting.env];
    const text = given !== void 0 && given.trim() !== "" ? given : setting.default;
    if (text === void 0) {
      raw[name] = null;
      continue;
    }
    try {
      raw[name] = setting.parse(text);
    } catch (error) {
      raw[name] = null;
      problems.push(`${setting.env}: ${error.message}`);
    }
  }
  return { raw, problems };
}
function loadConfig(env, deps) {
  const { raw, problems } = parseEnv(env);
  const online = raw.upstreamUrl !== null;
  const fromRoot = (path) => isAbsolute(path) ? path : resolve(deps.rootDir, path);
  let key = raw.upstreamKey;
  if (raw.upstreamKey !== null && raw.upstreamKeyFile !== null) {
    problems.push("FLAG_SIDECAR_UPSTREAM_KEY and FLAG_SIDECAR_UPSTREAM_KEY_FILE are both set; set one");
  } else if (raw.upstreamKeyFile !== null) {
    try {
      key = parseKey(deps.readFile(raw.upstreamKeyFile));
    } catch (error) {
      problems.push(`FLAG_SIDECAR_UPSTREAM_KEY_FILE: ${error.message}`);
    }
  }
  let redisUrl = raw.redisUrl;
  if (raw.redisUrl !== null && raw.redisUrlFile !== null) {
    problems.push("FLAG_SIDECAR_REDIS_URL and FLAG_SIDECAR_REDIS_URL_FILE are both set; set one");
  } else if (raw.redisUrlFile !== null) {
    try {
      redisUrl = parseRedisUrl(deps.readFile(raw.redisUrlFile));
    } catch (error) {
      problems.push(`FLAG_SIDECAR_REDIS_URL_FILE: ${error.message}`);
    }
  }
  if (raw.redisMode === "sentinel" && raw.redisSentinelMaster === null && redisUrl !== null) {
    problems.push("FLAG_SIDECAR_REDIS_SENTINEL_MASTER: required when FLAG_SIDECAR_REDIS_MODE is sentinel");
  }
  if (raw.redisSentinelMaster !== null && raw.redisMode !== "sentinel") {
    problems.push("FLAG_SIDECAR_REDIS_SENTINEL_MASTER: set only with FLAG_SIDECAR_REDIS_MODE=sentinel");
  }
  if (redisUrl !== null && !online) problems.push("FLAG_SIDECAR_REDIS_URL: fleet mode needs FLAG_SIDECAR_UPSTREAM_URL (offline sidecars have nothing to share)");
  if (online) {
    if (key === null && raw.upstreamKeyFile === null && raw.upstreamKey === null) {
      problems.push("FLAG_SIDECAR_UPSTREAM_KEY: required when FLAG_SIDECAR_UPSTREAM_URL is set (or use FLAG_SIDECAR_UPSTREAM_KEY_FILE)");
    }
    if (raw.projects === null && !problems.some((problem) => problem.startsWith("FLAG_SIDECAR_PROJECTS"))) {
      problems.push("FLAG_SIDECAR_PROJECTS: required when FLAG_SIDECAR_UPSTREAM_URL is set");
    }
  }
  if (raw.listen !== null && raw.opsListen !== null && raw.listen.port !== 0 && raw.listen.port === raw.opsListen.port) {
    problems.push("FLAG_SIDECAR_OPS_LISTEN: must use a different port from FLAG_SIDECAR_LISTEN");
  }
  problems.push(...unknownSettingProblems(env, settings.map(([, s]) => s.env)));
  if (problems.length > 0) {
    const secrets = [...settings.filter(([, s]) => s.secret).map(([, s]) => env[s.env] ?? ""), key ?? "", redisUrl?.href ?? ""];
    throw new ConfigError(problems.map((problem) => redactSecrets(problem, secrets)));
  }
  const bootstrap = raw.bootstrapFile ?? (online ? null : "config/snapshot.example.json");
  const keysFile = raw.keysFile ?? (!online && raw.bootstrapFile === null ? "config/keys.example.json" : null);
  return {
    upstream: online && raw.upstreamUrl !== null && key !== null ? {
      url: raw.upstreamUrl,
      key,
      timeoutMs: raw.upstreamTimeout,
      connectTimeoutMs: raw.upstreamConnectTimeout,
      maxBodyBytes: raw.upstreamMaxBody
    } : null,
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
    cache: {
      maxBytes: raw.cacheMaxBytes,
      maxEntries: raw.cacheMaxEntries,
      ttlMs: raw.cacheTtl,
      activityTtlMs: raw.cacheActivityTtl,
      notFoundTtlMs: raw.cacheNotFoundTtl,
      staleMaxMs: raw.cacheStaleMax
    },
    endpoints: {
      runTtlMs: raw.endpointRunTtl,
      runMaxBytes: raw.endpointRunMaxBytes,
      versionTtlMs: raw.endpointVersionTtl,
      metricNames: raw.endpointMetricNames
    },
    maxRequestBodyBytes: raw.maxRequestBody,
    staticCohortMaxPersons: raw.staticCohortMaxPersons,
    flagsAnswerCacheMaxBytes: raw.flagsAnswerCacheMaxBytes,
    writeSyncTimeoutMs: raw.writeSyncTimeout,
    fleet: redisUrl === null ? null : { redisUrl, prefix: raw.redisPrefix, mode: raw.redisMode, sentinelMaster: raw.redisSentinelMaster, timeoutMs: raw.redisTimeout, leaseMs: raw.fleetLease },
    ofrepRequireKey: raw.ofrepRequireKey ?? /* @__PURE__ */ new Set(),
    events: {
      url: eventsUrlFor(raw.eventsUrl, online ? raw.upstreamUrl : null),
      anyToken: raw.eventsAnyToken,
      queue: { maxBytes: raw.eventsQueueMaxBytes, maxEvents: raw.eventsQueueMaxEvents },
      spool: raw.snapshotDir === null ? null : { dir: join2(fromRoot(raw.snapshotDir), "events-spool"), maxBytes: raw.eventsSpoolMax },
      batch: { maxEvents: raw.eventsBatchSize, maxBytes: raw.eventsBatchMaxBytes, lingerMs: raw.eventsLinger }
    }
  };
}

// src/banner.ts
import { basename } from "node:path";
var exampleKey = "phx_flag_sidecar_example_key";
function startupBanner(config2, state) {
  const local = (url) => url.replace("//0.0.0.0:", "//127.0.0.1:").replace("//[::]:", "//[::1]:");
  const api = local(state.apiUrl);
  const ops = local(state.opsUrl);
  const key = config2.keysFile !== null && basename(config2.keysFile) === "keys.example.json" ? exampleKey : "$YOUR_KEY";
  const curl = `curl -H "Authorization: Bearer ${key}" '${api}/api/projects/${state.projects[0] ?? 1}/feature_flags/local_evaluation/?send_cohorts'`;
  const mode = config2.upstream ? `polling ${config2.upstream.url.origin}` : `offline, serving ${config2.bootstrapFile ?? "the snapshot dir"}`;
  const readiness = state.ready ? "ready" : `not ready yet: waiting for a first snapshot of every project (${ops}/status says which)`;
  if (!state.tty) {
    const line = { level: "info", time: state.now.toISOString(), service: "flag-sidecar", msg: "flag-sidecar listening", api, ops, mode, ready: state.ready, try: curl };
    return `${JSON.stringify(line)}
`;
  }
  return ["", `flag-sidecar listening (${mode}); ${readiness}`, `  API: ${api}    ops: ${ops}/status`, "  try:", `    ${curl}`, "", ""].join("\n");
}

// src/release-memory.ts
import { createHook } from "node:async_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
var lastResort = { type: "major", execution: "sync", flavor: "last-resort" };
function startupCollections(nodeVersion) {
  const major = Number(/^v?(\d+)\./.exec(nodeVersion)?.[1] ?? 0);
  if (major >= 22) return [{ atMs: 1e3, options: lastResort }];
  if (major >= 20) return [{ atMs: 6e3 }, { atMs: 6200 }];
  return [];
}
function exposedGc() {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc");
}
var heldTick = null;
function holdTickShape() {
  if (heldTick !== null) return;
  const hook = createHook({
    init(_asyncId, type, _triggerAsyncId, resource) {
      if (type === "TickObject" && heldTick === null) heldTick = resource;
    }
  });
  hook.enable();
  try {
    process.nextTick(noop);
  } finally {
    hook.disable();
  }
}
var noop = () => {
};
var busyRequestsPerSecond = 10;
function scheduleStartupCollections(nodeVersion = process.version, gcOf = exposedGc, setTimer = (run, ms) => void setTimeout(run, ms).unref(), requests = () => 0) {
  const plan = startupCollections(nodeVersion);
  if (plan.length === 0) return;
  holdTickShape();
  let gc = null;
  const collect = (options) => {
    gc ??= gcOf();
    if (options === void 0) gc();
    else gc(options);
  };
  const firstAt = plan[0].atMs;
  let counted = 0;
  const check = () => {
    const now = requests();
    if (now - counted > busyRequestsPerSecond) {
      counted = now;
      setTimer(check, 1e3);
      return;
    }
    collect(plan[0]?.options);
    for (let i = 1; i < plan.length; i++) {
      const { atMs, options } = plan[i];
      setTimer(() => collect(options), atMs - firstAt);
    }
  };
  const sample = () => {
    counted = requests();
    setTimer(check, Math.min(1e3, firstAt));
  };
  if (firstAt > 1e3) setTimer(sample, firstAt - 1e3);
  else sample();
}

// src/main.ts
holdTickShape();
var rootDir = fileURLToPath(new URL("..", import.meta.url));
var pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
var build = { version: process.env.FLAG_SIDECAR_BUILD_VERSION || pkg.version, commit: process.env.FLAG_SIDECAR_BUILD_COMMIT || "unknown" };
var command = parseCommand(process.argv.slice(2));
if (command.kind === "help") {
  process.stdout.write(helpText);
  process.exit(0);
}
if (command.kind === "version") {
  process.stdout.write(`flag-sidecar ${build.version} (commit ${build.commit}, node ${process.version})
`);
  process.exit(0);
}
if (command.kind === "usage-error") {
  process.stderr.write(`flag-sidecar: ${command.message}

${helpText}`);
  process.exit(2);
}
if (command.kind === "health") {
  const outcome = await checkHealth(process.env, command.timeoutMs);
  (outcome.code === 0 ? process.stdout : process.stderr).write(`flag-sidecar: ${outcome.message}
`);
  process.exit(outcome.code);
}
var config;
try {
  config = loadConfig(process.env, { readFile: (path) => readFileSync(path, "utf8"), rootDir });
} catch (error) {
  process.stderr.write(`flag-sidecar: ${error instanceof ConfigError ? error.message : String(error)}
`);
  process.exit(2);
}
if (command.kind === "check-config") {
  const problems = await checkFiles(config);
  process.stdout.write(`${JSON.stringify(describeConfig(config), null, 2)}
`);
  if (problems.length > 0) {
    process.stderr.write(`flag-sidecar: configuration problems:
${problems.map((p) => `  - ${p}`).join("\n")}
`);
    process.exit(2);
  }
  process.stderr.write("flag-sidecar: configuration OK\n");
  process.exit(0);
}
if (command.kind === "snapshot-pull") {
  try {
    const pulled = await pullSnapshot(config, command.out, build);
    process.stderr.write(`flag-sidecar: wrote ${command.out}: ${pulled.map((p) => `project ${p.id} (${p.flags} flags)`).join(", ")}
`);
    process.exit(0);
  } catch (error) {
    process.stderr.write(`flag-sidecar: snapshot pull failed: ${error.message}
`);
    process.exit(1);
  }
}
var [{ startSidecar }, { createLogOutput, createLogger }] = await Promise.all([import("./app-2JUUVNFM.js"), import("./logger-K27K3DEC.js")]);
var output = createLogOutput();
var logger = createLogger(config.logLevel, output.stream);
var shutdownTimeoutMs = config.shutdownTimeoutMs;
var exitNow = (code) => {
  output.abandon();
  process.exit(code);
};
var exitAfterFlush = (code, waitMs) => {
  setTimeout(() => exitNow(code), waitMs).unref();
  logger.flush(() => exitNow(code));
};
var stopRequested = null;
var stopSidecar = null;
var onSignal = (signal) => {
  if (stopSidecar) stopSidecar(signal);
  else stopRequested ??= signal;
};
process.once("SIGTERM", onSignal);
process.once("SIGINT", onSignal);
try {
  const sidecar = await startSidecar({ config, logger, build });
  const { apiUrl, opsUrl, store } = sidecar;
  process.stderr.write(startupBanner(config, { apiUrl, opsUrl, projects: store.projectIds(), ready: store.ready(), tty: process.stderr.isTTY === true, now: /* @__PURE__ */ new Date() }));
  stopSidecar = (signal) => {
    logger.info({ signal, timeoutMs: shutdownTimeoutMs }, "shutting down");
    const deadline = setTimeout(() => {
      logger.error({ timeoutMs: shutdownTimeoutMs }, "shutdown deadline reached; exiting");
      exitNow(1);
    }, shutdownTimeoutMs);
    const started = Date.now();
    const leftMs = () => Math.max(0, shutdownTimeoutMs - (Date.now() - started));
    sidecar.stop().then(
      () => {
        clearTimeout(deadline);
        exitAfterFlush(0, Math.min(1e3, leftMs()));
      },
      (error) => {
        clearTimeout(deadline);
        logger.error({ err: String(error) }, "shutdown failed");
        exitAfterFlush(1, Math.min(1e3, leftMs()));
      }
    );
  };
  if (stopRequested !== null) stopSidecar(stopRequested);
  else scheduleStartupCollections(process.version, void 0, void 0, sidecar.apiRequests);
} catch (error) {
  const badConfig = error instanceof ConfigError;
  logger.fatal({ err: error instanceof Error ? error.message : String(error) }, badConfig ? "flag-sidecar cannot start: bad configuration" : "flag-sidecar failed to start");
  exitAfterFlush(badConfig ? 2 : 1, 1e3);
}
//# sourceMappingURL=main.js.map
