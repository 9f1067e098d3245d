import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);
import {
  endpointOf,
  isWrittenResource
} from "./chunk-BV2GPDZD.js";
import "./chunk-64F6AQPD.js";

// src/fleet/invalidation-message.ts
var maxInvalidationBytes = 1024;
var maxOriginLength = 300;
function encodeInvalidation(message) {
  return JSON.stringify({ v: 1, project: message.project, resource: message.resource, origin: message.origin });
}
function decodeInvalidation(raw, known) {
  if (raw.length > maxInvalidationBytes) return { ok: false, reason: "size" };
  let value;
  try {
    value = JSON.parse(raw.toString("utf8"));
  } catch {
    return { ok: false, reason: "shape" };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, reason: "shape" };
  const { v, project, resource, origin, ...rest } = value;
  if (v !== 1 || Object.keys(rest).length > 0) return { ok: false, reason: "shape" };
  if (typeof project !== "number" || !Number.isSafeInteger(project) || project <= 0) return { ok: false, reason: "shape" };
  if (!isWrittenResource(resource)) return { ok: false, reason: "shape" };
  if (typeof origin !== "string" || origin.length === 0 || origin.length > maxOriginLength) return { ok: false, reason: "shape" };
  if (!known(project)) return { ok: false, reason: "unknown_project" };
  return { ok: true, message: { project, resource, origin } };
}

// src/fleet/invalidation.ts
function createInvalidation(deps) {
  const { redis, metrics, logger } = deps;
  const listeners = [];
  const reconnectListeners = [];
  const logged = /* @__PURE__ */ new Set();
  let subscription = "none";
  function receive(raw) {
    const decoded = decodeInvalidation(raw, deps.knownProject);
    if (!decoded.ok) {
      metrics.invalidations.inc({ direction: "ignored" });
      if (!logged.has(decoded.reason)) {
        logged.add(decoded.reason);
        logger.warn({ reason: decoded.reason, bytes: raw.length }, "ignored an invalid fleet invalidation message (logged once per reason)");
      }
      return;
    }
    if (decoded.message.origin === deps.instanceId) return;
    metrics.invalidations.inc({ direction: "received" });
    for (const listener of listeners) listener(decoded.message);
  }
  function subscribe() {
    if (subscription !== "none") return;
    subscription = "pending";
    redis.subscribe(deps.channel, receive).then(
      () => void (subscription = "active"),
      (error) => {
        subscription = "none";
        logger.debug({ err: error.message }, "invalidation subscription failed; retried at the next connection");
      }
    );
  }
  return {
    /** Subscribe (now, and again after a connection if that failed) and watch for reconnections. */
    start() {
      redis.onReady(() => {
        subscribe();
        for (const listener of reconnectListeners) listener();
      });
      subscribe();
    },
    /** Tell the other sidecars that `resource` of each of `projectIds` changed. Never rejects. */
    async announce(projectIds, resource) {
      if (!redis.up()) return;
      await Promise.all(
        projectIds.map(async (project) => {
          try {
            await redis.publish(deps.channel, encodeInvalidation({ project, resource, origin: deps.instanceId }));
            metrics.invalidations.inc({ direction: "sent" });
            logged.delete("publish");
          } catch (error) {
            if (!logged.has("publish")) logger.warn({ err: error.message }, "could not publish a fleet invalidation; other sidecars see the write after their TTLs");
            logged.add("publish");
          }
        })
      );
    },
    /** Call `listener` for each valid message from another sidecar. */
    onMessage(listener) {
      listeners.push(listener);
    },
    /** Call `listener` after every (re)connection to Redis, when messages may have been missed. */
    onReconnect(listener) {
      reconnectListeners.push(listener);
    }
  };
}

// src/fleet/shared-runs.ts
import { createHash } from "node:crypto";

// src/fleet/shared-run-entry.ts
var maxSharedRunBytes = 1024 * 1024;
var maxSharedRunMs = 24 * 36e5;
var maxHeaderBytes = 1024;
var mediaType = /^[a-zA-Z0-9!#$&^_.+-]{1,64}\/[a-zA-Z0-9!#$&^_.+-]{1,64}(\s*;\s*[a-zA-Z0-9_.-]{1,32}=("[^"\\\r\n]{0,64}"|[a-zA-Z0-9_.+-]{1,64}))*$/;
function encodeSharedRun(run, gen) {
  if (run.response.body.length > maxSharedRunBytes) return null;
  const type = run.response.headers["content-type"] ?? null;
  const header = JSON.stringify({ v: 1, gen, status: run.response.status, type, fetched: run.fetchedAt, expires: run.expiresAt });
  return Buffer.concat([Buffer.from(`${header}
`, "utf8"), run.response.body]);
}
var finite = (value) => typeof value === "number" && Number.isFinite(value);
function decodeSharedRun(raw, now) {
  if (raw.length > maxSharedRunBytes + maxHeaderBytes + 1) return null;
  const newline = raw.subarray(0, maxHeaderBytes + 1).indexOf(10);
  if (newline < 0) return null;
  let header;
  try {
    header = JSON.parse(raw.subarray(0, newline).toString("utf8"));
  } catch {
    return null;
  }
  if (typeof header !== "object" || header === null || Array.isArray(header)) return null;
  const h = header;
  if (h.v !== 1 || typeof h.gen !== "string" || h.gen.length > 64) return null;
  if (typeof h.status !== "number" || !Number.isInteger(h.status) || h.status < 200 || h.status > 299) return null;
  if (h.type !== null && (typeof h.type !== "string" || !mediaType.test(h.type))) return null;
  if (!finite(h.fetched) || !finite(h.expires) || h.expires <= now || h.expires < h.fetched || h.expires - h.fetched > maxSharedRunMs) return null;
  const body = raw.subarray(newline + 1);
  if (body.length > maxSharedRunBytes) return null;
  try {
    JSON.parse(body.toString("utf8"));
  } catch {
    return null;
  }
  const copy = Buffer.from(body);
  const headers = { "content-length": String(copy.length) };
  if (typeof h.type === "string") headers["content-type"] = h.type;
  return { gen: h.gen, run: { response: { status: h.status, headers, body: copy }, fetchedAt: Math.min(h.fetched, now), expiresAt: h.expires } };
}

// src/fleet/shared-runs.ts
var generationTtlMs = maxSharedRunMs + 36e5;
var maxGenLength = 64;
var storeScript = `local g = redis.call('GET', KEYS[1]) or ''
if g ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return 1`;
var digest = (text) => createHash("sha256").update(text).digest("hex");
function createSharedRuns(deps) {
  const { redis, keys, metrics, now } = deps;
  const count = (cache, result) => metrics.sharedCache.inc({ cache, result });
  let warned = false;
  const invalid = (what) => {
    if (!warned) deps.logger.warn({ what }, "ignored an invalid shared endpoint entry from Redis (logged once)");
    warned = true;
  };
  const genKey = (projectId, name) => keys.endpointGeneration(projectId, digest(name));
  const runKey = (projectId, entryKey) => keys.endpointRun(projectId, digest(`${projectId}\0${entryKey}`));
  const grantKey = (projectId, grant) => keys.endpointGrant(projectId, digest(grant));
  function genOf(reply) {
    if (reply === null) return "";
    const text = Buffer.isBuffer(reply) ? reply.toString("utf8") : reply;
    return typeof text === "string" && text.length <= maxGenLength ? text : null;
  }
  function runOf(reply, gen) {
    if (reply === null) {
      count("endpoint_run", "miss");
      return null;
    }
    const decoded = decodeSharedRun(reply, now());
    if (decoded === null) {
      count("endpoint_run", "invalid");
      invalid("run");
      return null;
    }
    const current = decoded.gen === gen;
    count("endpoint_run", current ? "hit" : "miss");
    return current ? decoded.run : null;
  }
  function grantOf(reply) {
    if (reply === null) {
      count("endpoint_grant", "miss");
      return 0;
    }
    const text = Buffer.isBuffer(reply) ? reply.toString("latin1") : reply;
    const until = typeof text === "string" && /^\d{1,16}$/.test(text) ? Number(text) : NaN;
    if (!Number.isSafeInteger(until)) {
      count("endpoint_grant", "invalid");
      invalid("grant");
      return 0;
    }
    count("endpoint_grant", until > now() ? "hit" : "miss");
    return until > now() ? until : 0;
  }
  return {
    /**
     * In one round trip: the endpoint's generation, the stored result of run `entryKey` (the local cache key
     * without project and local generation) of endpoint `name`, and the grant `grant` (the local grant key); null
     * when Redis did not answer in time or is down.
     */
    async lookup(projectId, name, entryKey, grant) {
      if (!redis.up()) return null;
      let reply;
      try {
        reply = await redis.command("endpoint_run_get", ["MGET", genKey(projectId, name), runKey(projectId, entryKey), grantKey(projectId, grant)], true);
      } catch {
        count("endpoint_run", "error");
        return null;
      }
      const [genReply, runReply, grantReply] = Array.isArray(reply) && reply.length === 3 ? reply : [void 0, void 0, void 0];
      const gen = genOf(genReply);
      if (gen === null || runReply !== null && !Buffer.isBuffer(runReply)) {
        count("endpoint_run", "invalid");
        invalid("generation");
        return null;
      }
      const grantUntil = grantOf(grantReply);
      return { gen, run: runOf(runReply, gen), grantUntil };
    },
    /** Share a 2xx result fresh for `ttlMs`, if the endpoint's generation is still `gen`. Never rejects. */
    async store(projectId, name, entryKey, gen, response, ttlMs) {
      const at = now();
      const ttl = Math.min(Math.floor(ttlMs), maxSharedRunMs);
      if (ttl <= 0 || response.status < 200 || response.status > 299) return;
      const value = encodeSharedRun({ response, fetchedAt: at, expiresAt: at + ttl }, gen);
      if (value === null) return count("endpoint_run", "skipped");
      if (!redis.up()) return;
      try {
        const stored = await redis.command("endpoint_run_set", ["EVAL", storeScript, "2", genKey(projectId, name), runKey(projectId, entryKey), gen, value, String(ttl)]);
        count("endpoint_run", stored === 1 ? "write" : "skipped");
      } catch {
        count("endpoint_run", "error");
      }
    },
    /** Retire every stored result of endpoint `name` (after a write to it); false when Redis did not take it. Never rejects. */
    async retire(projectId, name) {
      if (!redis.up()) return false;
      const token = `${now().toString(36)}.${Math.floor(deps.random() * 2 ** 48).toString(36)}`;
      try {
        await redis.command("endpoint_run_retire", ["SET", genKey(projectId, name), token, "PX", String(generationTtlMs)]);
        return true;
      } catch {
        count("endpoint_run", "error");
        return false;
      }
    },
    /** Record that upstream ran the endpoint for the key of `grant` (until `until`), or refused it (`until` null). Never rejects. */
    async setGrant(projectId, grant, until) {
      if (!redis.up()) return;
      const key = grantKey(projectId, grant);
      const ttl = until === null ? 0 : Math.floor(until - now());
      const args = until === null || ttl <= 0 ? ["DEL", key] : ["SET", key, String(Math.floor(until)), "PX", String(ttl)];
      try {
        await redis.command("endpoint_grant_set", args);
        if (args[0] === "SET") count("endpoint_grant", "write");
      } catch {
        count("endpoint_grant", "error");
      }
    }
  };
}

// src/fleet/fleet-caches.ts
function createFleetCaches(deps) {
  const { fleet, logger } = deps;
  const invalidation = createInvalidation({
    redis: fleet.redis,
    channel: fleet.keys.invalidationChannel,
    metrics: fleet.metrics,
    instanceId: fleet.instanceId,
    logger,
    knownProject: deps.knownProject
  });
  const runs = createSharedRuns({ redis: fleet.redis, keys: fleet.keys, metrics: fleet.metrics, logger, now: deps.now, random: deps.random });
  return {
    /** The shared endpoint runs and grants. */
    runs,
    /** After a write that may have applied: retire shared runs it changed, then tell the other sidecars. Never rejects. */
    async announce(projectIds, resource) {
      const endpoint = endpointOf(resource);
      if (endpoint !== null && !(await Promise.all(projectIds.map((id) => runs.retire(id, endpoint)))).every(Boolean)) return;
      await invalidation.announce(projectIds, resource);
    },
    /** Apply other sidecars' invalidations to `caches` (and re-poll after flag writes). */
    listen(caches) {
      invalidation.onMessage(({ project, resource }) => {
        caches.invalidate(project, resource);
        if (resource === "flags") deps.repoll(project).catch((error) => logger.warn({ project, err: error.message }, "re-poll after a fleet invalidation failed"));
      });
      invalidation.onReconnect(() => caches.dropAll());
    },
    /** Subscribe to the channel (in the background; never waits for Redis). */
    start() {
      invalidation.start();
    }
  };
}
export {
  createFleetCaches
};
//# sourceMappingURL=fleet-caches-EZ2FU2E7.js.map
