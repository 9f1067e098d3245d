import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);
import {
  redactRedisUrl
} from "./chunk-SETGV34Z.js";
import {
  Counter,
  Gauge,
  Histogram
} from "./chunk-STRLSS22.js";
import "./chunk-64F6AQPD.js";

// src/fleet/fleet.ts
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";

// src/metrics/fleet-metrics.ts
var redisBuckets = [1e-4, 25e-5, 5e-4, 1e-3, 25e-4, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
function createFleetMetrics(registry) {
  const registers = [registry];
  let roles = () => [];
  let redisUp = () => false;
  const metrics = {
    redisErrors: new Counter({
      name: "flag_sidecar_redis_errors_total",
      help: "Redis commands that failed or timed out (FLAG_SIDECAR_REDIS_TIMEOUT), and connection errors (operation connection_command / connection_subscriber), by operation.",
      labelNames: ["operation"],
      registers
    }),
    redisDuration: new Histogram({
      name: "flag_sidecar_redis_command_duration_seconds",
      help: "Latency of Redis commands answered, by operation.",
      labelNames: ["operation"],
      buckets: redisBuckets,
      registers
    }),
    leaseChanges: new Counter({
      name: "flag_sidecar_fleet_lease_changes_total",
      help: "Changes of this sidecar's role per project: acquired (became leader), lost (another leader or Redis gone), released (at shutdown).",
      labelNames: ["project", "change"],
      registers
    }),
    snapshotsReceived: new Counter({
      name: "flag_sidecar_fleet_snapshots_total",
      help: "Snapshot variants taken into the store, by project and source: upstream (this sidecar polled) or redis (published by the leader); rejected: a Redis copy that failed validation.",
      labelNames: ["project", "source"],
      registers
    }),
    snapshotsPublished: new Counter({
      name: "flag_sidecar_fleet_snapshots_published_total",
      help: "Snapshot variants this sidecar published to Redis as leader, by project.",
      labelNames: ["project"],
      registers
    }),
    invalidations: new Counter({
      name: "flag_sidecar_fleet_invalidations_total",
      help: "Fleet-wide invalidations (a write through some sidecar), by direction: sent, received (from another sidecar and applied), or ignored (invalid or about a project not served here).",
      labelNames: ["direction"],
      registers
    }),
    sharedCache: new Counter({
      name: "flag_sidecar_fleet_shared_cache_total",
      help: "Lookups and writes of the caches shared in Redis, by cache (principal, grant, endpoint_run, endpoint_grant) and result (hit, miss, write, error: Redis unavailable or failed; invalid: an entry that failed validation and was ignored; skipped: not stored, too large or retired meanwhile).",
      labelNames: ["cache", "result"],
      registers
    }),
    /** Read the per-project roles for flag_sidecar_fleet_role. */
    observeRoles(source) {
      roles = source;
    },
    /** Read Redis health for flag_sidecar_redis_up. */
    observeRedis(source) {
      redisUp = source;
    }
  };
  new Gauge({
    name: "flag_sidecar_fleet_role",
    help: "1 for this sidecar's current role per project: leader (polls upstream, publishes), follower (loads from Redis), direct (Redis unavailable: polls upstream itself).",
    labelNames: ["project", "role"],
    registers,
    collect() {
      this.reset();
      for (const r of roles()) for (const role of ["leader", "follower", "direct"]) this.set({ project: r.project, role }, r.role === role ? 1 : 0);
    }
  });
  new Gauge({
    name: "flag_sidecar_fleet_snapshot_generation",
    help: "Generation of the fleet's snapshot this sidecar serves per project (the leader's fencing generation).",
    labelNames: ["project"],
    registers,
    collect() {
      this.reset();
      for (const r of roles()) if (r.generation !== null) this.set({ project: r.project }, r.generation);
    }
  });
  new Gauge({
    name: "flag_sidecar_redis_up",
    help: "1 while Redis is connected and answering pings, else 0.",
    registers,
    collect() {
      this.set(redisUp() ? 1 : 0);
    }
  });
  return metrics;
}

// src/fleet/keys.ts
import { createHash } from "node:crypto";
var upstreamId = (upstream) => createHash("sha256").update(upstream.href.replace(/\/+$/, "")).digest("hex").slice(0, 16);
function fleetKeys(prefix, upstream) {
  const root = `${prefix}:${upstreamId(upstream)}`;
  const project = (projectId) => `${prefix}:{${upstreamId(upstream)}:${projectId}}`;
  return {
    /** Everything of this fleet and upstream starts with this. */
    root,
    /** The leader lease of a project: holder id, with a TTL. */
    lease: (projectId) => `${project(projectId)}:lease`,
    /** The fencing generation of a project, incremented by each new leader. */
    generation: (projectId) => `${project(projectId)}:generation`,
    /** A project's published snapshot variant (`cohorts` or `plain`): the raw body bytes. */
    snapshot: (projectId, variant) => `${project(projectId)}:snapshot:${variant}`,
    /** A project's published snapshot without the bodies (JSON: digests, ETags, fetched-at, quota state). */
    snapshotHead: (projectId) => `${project(projectId)}:snapshot-head`,
    /** Set by a follower that was asked for a project's plain variant, so that every leader polls it too. */
    plainWanted: (projectId) => `${project(projectId)}:plain-wanted`,
    /** Notices of new snapshots and released leases (JSON: kind, project, generation). */
    snapshotChannel: `${root}:snapshots`,
    /** Requests to a project's leader to poll now (after a write through another sidecar; JSON: project, plain). */
    pollChannel: `${root}:poll`,
    /** Fleet-wide invalidations (project, resource). */
    invalidationChannel: `${root}:invalidate`,
    /** What upstream said about a key (principal, refused, invalid). */
    keyRecord: (digest) => `${root}:key:${digest}`,
    /** Upstream's answer for a key on one project (grant or refusal). */
    grant: (digest, projectId) => `${root}:grant:${digest}:${projectId}`,
    /** A shared endpoint run result of a project (`id`: a digest of what the run's local cache key is built from). */
    endpointRun: (projectId, id) => `${project(projectId)}:run:${id}`,
    /** The generation token of a named endpoint's shared runs (`id`: digest of its name), replaced by each write. */
    endpointGeneration: (projectId, id) => `${project(projectId)}:rungen:${id}`,
    /** A key's grant to a named endpoint's shared runs (`id`: digest of the key's digest and the endpoint name). */
    endpointGrant: (projectId, id) => `${project(projectId)}:rungrant:${id}`
  };
}

// src/fleet/redis-connect.ts
import { createClient, createCluster, createSentinel, RESP_TYPES } from "@redis/client";
var bufferOptions = { typeMapping: { [RESP_TYPES.BLOB_STRING]: Buffer } };
function firstKey(args) {
  const name = String(args[0]).toUpperCase();
  if (name === "EVAL" || name === "EVALSHA" || name === "FCALL") return Number(String(args[2])) > 0 ? args[3] : void 0;
  if (name === "PUBLISH" || name === "PING" || name === "SCRIPT" || name === "INFO") return void 0;
  return args[1];
}
function nodeOptions(options) {
  const { url } = options;
  return {
    ...url.username ? { username: decodeURIComponent(url.username) } : {},
    ...url.password ? { password: decodeURIComponent(url.password) } : {},
    disableOfflineQueue: true,
    commandsQueueMaxLength: 1e4,
    socket: {
      connectTimeout: options.connectTimeoutMs,
      reconnectStrategy: options.reconnectDelay,
      ...url.protocol === "rediss:" ? { tls: true, servername: url.hostname } : {}
    }
  };
}
function standalone(options) {
  const client = createClient({ url: options.url.href, ...nodeOptions(options) });
  const subscriber = client.duplicate();
  return {
    connect: async () => void await Promise.all([client.connect(), subscriber.connect()]),
    send: (args, buffers) => client.sendCommand(args, buffers ? bufferOptions : void 0),
    subscribe: (channel, listener) => subscriber.subscribe(channel, (message) => listener(message), true),
    // Both: a subscriber that reconnected alone may have missed messages, and readiness listeners re-read state.
    ready: () => client.isReady && subscriber.isReady,
    onError(listener) {
      client.on("error", (error) => listener(error.message));
      subscriber.on("error", (error) => listener(error.message));
    },
    onReady(listener) {
      client.on("ready", listener);
      subscriber.on("ready", listener);
    },
    async close() {
      await Promise.allSettled([client.isOpen ? client.close() : void 0, subscriber.isOpen ? subscriber.close() : void 0]);
    },
    destroy() {
      for (const c of [client, subscriber]) if (c.isOpen) c.destroy();
    }
  };
}
function coversAllSlots(slots) {
  if (slots.length !== 16384) return false;
  for (let i = 0; i < slots.length; i++) if (slots[i]?.master === void 0) return false;
  return true;
}
function cluster(options) {
  const defaults = nodeOptions(options);
  const root = new URL(options.url.href);
  root.username = "";
  root.password = "";
  const create = () => createCluster({ rootNodes: [{ url: root.href, ...defaults }], defaults });
  let client = create();
  const errorListeners = [];
  const subscriptions = /* @__PURE__ */ new Map();
  const report = (message) => {
    for (const listener of errorListeners) listener(message);
  };
  client.on("error", (error) => report(error.message));
  let closed = false;
  let covered = false;
  return {
    // A cluster client gives up when no root node answers, and never learns slots it did not see at start: a
    // fresh client is made until one connects to a cluster serving every slot.
    async connect() {
      for (let retries = 0; !closed; retries++) {
        try {
          await client.connect();
          if (coversAllSlots(client.slots)) {
            covered = true;
            for (const [channel, listener] of subscriptions) await client.subscribe(channel, listener, true);
            return;
          }
          report("the cluster does not serve every slot yet");
        } catch (error) {
          report(error.message);
        }
        client.destroy();
        client = create();
        client.on("error", (error) => report(error.message));
        await new Promise((resolve) => setTimeout(resolve, options.reconnectDelay(retries)).unref());
      }
    },
    send: (args, buffers) => client.sendCommand(firstKey(args), false, [...args], buffers ? bufferOptions : void 0),
    async subscribe(channel, listener) {
      const dispatch = (message) => listener(message);
      await client.subscribe(channel, dispatch, true);
      subscriptions.set(channel, dispatch);
    },
    ready: () => covered && client.isReady,
    onError: (listener) => void errorListeners.push(listener),
    onReady: () => void 0,
    async close() {
      closed = true;
      if (client.isOpen) await client.close().catch(() => client.destroy());
    },
    destroy() {
      closed = true;
      if (client.isOpen) client.destroy();
    }
  };
}
function sentinel(options) {
  const node = nodeOptions(options);
  const client = createSentinel({
    name: options.sentinelMaster ?? "mymaster",
    sentinelRootNodes: [{ host: options.url.hostname, port: Number(options.url.port || 26379) }],
    nodeClientOptions: node,
    sentinelClientOptions: node
  });
  return {
    connect: async () => void await client.connect(),
    send: (args, buffers) => client.sendCommand(false, [...args], buffers ? bufferOptions : void 0),
    subscribe: async (channel, listener) => void await client.subscribe(channel, (message) => listener(message), true),
    ready: () => client.isReady,
    onError: (listener) => void client.on("error", (error) => listener(error instanceof Error ? error.message : String(error))),
    onReady: () => void 0,
    async close() {
      if (client.isOpen) await client.close().catch(() => client.destroy());
    },
    destroy() {
      if (client.isOpen) client.destroy();
    }
  };
}
function connectRedis(options) {
  if (options.mode === "cluster") return cluster(options);
  if (options.mode === "sentinel") return sentinel(options);
  return standalone(options);
}

// src/fleet/redis.ts
var RedisUnavailableError = class extends Error {
  name = "RedisUnavailableError";
};
function reconnectDelay(retries, random) {
  const base = Math.min(5e3, 100 * 2 ** Math.min(retries, 10));
  return Math.round(base / 2 + random() * base / 2);
}
function createFleetRedis(deps) {
  const { logger, metrics, timeoutMs } = deps;
  const connection = connectRedis({
    url: deps.url,
    mode: deps.mode ?? "standalone",
    sentinelMaster: deps.sentinelMaster ?? null,
    connectTimeoutMs: Math.max(timeoutMs, 1e3),
    reconnectDelay: (retries) => reconnectDelay(retries, deps.random)
  });
  const readyListeners = [];
  let wasUp = false;
  let missedPings = 0;
  let lastError = null;
  let pingMs = null;
  let pingTimer = null;
  let closed = false;
  const where = redactRedisUrl(deps.url);
  const up = () => connection.ready() && missedPings < 2;
  const channels = /* @__PURE__ */ new Map();
  const subscribed = /* @__PURE__ */ new Map();
  function subscribeAll() {
    for (const channel of channels.keys()) {
      if (subscribed.has(channel)) continue;
      const dispatch = (message) => {
        for (const listener of channels.get(channel) ?? []) listener(message);
      };
      const done = connection.subscribe(channel, dispatch).catch((error) => {
        subscribed.delete(channel);
        noteError(`subscribe ${channel}: ${error.message}`);
      });
      subscribed.set(channel, done);
    }
  }
  function observe() {
    const now = up();
    if (now) subscribeAll();
    if (now && !wasUp) {
      logger.info({ redis: where }, "redis connected");
      for (const listener of readyListeners) listener();
    }
    wasUp = now;
  }
  function noteError(message) {
    const first = lastError === null || lastError.message !== message;
    lastError = { message, at: (deps.now ?? Date.now)() };
    if (first) logger.warn({ redis: where, err: message }, "redis unavailable");
  }
  connection.onError((message) => {
    metrics.redisErrors.inc({ operation: "connection" });
    noteError(message);
    observe();
  });
  connection.onReady(() => {
    missedPings = 0;
    observe();
  });
  async function timed(operation, promise) {
    const started = performance.now();
    let timer = null;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new RedisUnavailableError(`redis did not answer ${operation} within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      const result = await Promise.race([promise, timeout]);
      metrics.redisDuration.observe({ operation }, (performance.now() - started) / 1e3);
      return result;
    } catch (error) {
      metrics.redisErrors.inc({ operation });
      const message = error.message;
      if (!(error instanceof RedisUnavailableError)) noteError(message);
      throw error instanceof RedisUnavailableError ? error : new RedisUnavailableError(`redis ${operation} failed: ${message}`);
    } finally {
      if (timer !== null) clearTimeout(timer);
      promise.catch(() => void 0);
    }
  }
  async function ping() {
    const started = performance.now();
    try {
      await timed("ping", connection.send(["PING"], false));
      pingMs = performance.now() - started;
      missedPings = 0;
    } catch (error) {
      missedPings += 1;
      if (missedPings === 2) noteError(error.message);
    }
    observe();
  }
  return {
    /** Connect both connections in the background (retried forever) and start the health ping. */
    start() {
      void connection.connect().catch((error) => noteError(error.message));
      pingTimer = setInterval(() => void (connection.ready() ? ping() : observe()), deps.pingIntervalMs ?? 1e3);
      pingTimer.unref();
    },
    /** Whether Redis is connected and answering. A caller may skip a command while it is not. */
    up,
    /**
     * Send one command (`args[0]` is its name), answered within the timeout or rejected with
     * RedisUnavailableError. `buffers`: bulk strings come back as Buffers (binary-safe), else as strings.
     */
    command(operation, args, buffers = false) {
      if (closed || !connection.ready()) {
        metrics.redisErrors.inc({ operation });
        return Promise.reject(new RedisUnavailableError(`redis is not connected (${operation})`));
      }
      return timed(operation, connection.send(args, buffers));
    },
    /** Publish `message` on `channel`; rejects like `command`. */
    async publish(channel, message) {
      await this.command("publish", ["PUBLISH", channel, message]);
    },
    /**
     * Listen to `channel` (binary-safe), from now on and across reconnections: subscribed as soon as Redis is up.
     * Resolves once subscribed, or at once while Redis is down (messages sent meanwhile are missed: re-read state
     * in an `onReady` listener). Never rejects.
     */
    subscribe(channel, listener) {
      channels.set(channel, [...channels.get(channel) ?? [], listener]);
      if (up()) subscribeAll();
      return subscribed.get(channel) ?? Promise.resolve();
    },
    /** Call `listener` after every (re)connection of the command connection. */
    onReady(listener) {
      readyListeners.push(listener);
    },
    /** Redis as /status shows it. */
    status() {
      return {
        up: up(),
        url: where,
        last_error: lastError?.message ?? null,
        last_error_at: lastError === null ? null : new Date(lastError.at).toISOString(),
        ping_ms: pingMs === null ? null : Math.round(pingMs * 100) / 100
      };
    },
    /** Close the connections; waits at most the timeout for a hung server (then drops them). Never rejects. */
    async close() {
      closed = true;
      if (pingTimer !== null) clearInterval(pingTimer);
      let timer = null;
      const waited = new Promise((resolve) => timer = setTimeout(resolve, timeoutMs));
      await Promise.race([connection.close().catch(() => void 0), waited]);
      if (timer !== null) clearTimeout(timer);
      connection.destroy();
    }
  };
}

// src/fleet/fleet.ts
var newInstanceId = () => `${hostname()}/${process.pid}/${randomBytes(4).toString("hex")}`;
function createFleet(deps) {
  const { config, logger } = deps;
  const metrics = createFleetMetrics(deps.registry);
  const redis = createFleetRedis({
    url: config.redisUrl,
    mode: config.mode,
    sentinelMaster: config.sentinelMaster,
    timeoutMs: config.timeoutMs,
    logger,
    metrics,
    random: deps.random,
    now: deps.now
  });
  metrics.observeRedis(redis.up);
  const instanceId = newInstanceId();
  const closers = [];
  return {
    config,
    redis,
    keys: fleetKeys(config.prefix, deps.upstream),
    metrics,
    instanceId,
    /** Connect to Redis in the background; never waits for it. */
    start() {
      redis.start();
      logger.info({ instance: instanceId, prefix: config.prefix }, "fleet mode on");
    },
    /** Run `close` (a part's shutdown) before Redis is closed; parts close in the reverse order of registration. */
    onClose(close) {
      closers.push(close);
    },
    /** The fleet as /status shows it. */
    status() {
      return { instance_id: instanceId, prefix: config.prefix, redis_mode: config.mode, lease_seconds: config.leaseMs / 1e3, redis: redis.status() };
    },
    /** Shut the parts down, then Redis. Never rejects. */
    async close() {
      for (const close of closers.reverse()) await close().catch((error) => logger.warn({ err: error.message }, "fleet part failed to close"));
      await redis.close();
    }
  };
}
export {
  createFleet,
  newInstanceId
};
//# sourceMappingURL=fleet-PIBF33HH.js.map
