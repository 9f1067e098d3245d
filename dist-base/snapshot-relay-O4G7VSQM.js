import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);
import {
  createVariant,
  parseDefinitions,
  withChanges
} from "./chunk-YXIUFDAM.js";
import "./chunk-64F6AQPD.js";

// src/fleet/lease-decision.ts
function leaseMargin(leaseMs, timeoutMs) {
  return Math.round(Math.min(leaseMs / 3, Math.max(leaseMs / 10, 2 * timeoutMs)));
}
function leaseDecision(clock, now, timing) {
  const renewEveryMs = timing.leaseMs / 3;
  if (!clock.held) return { expired: false, action: "acquire", nextInMs: renewEveryMs };
  const confirmedAt = clock.confirmedAt;
  const lostAt = confirmedAt === null ? -Infinity : confirmedAt + timing.leaseMs - timing.marginMs;
  if (confirmedAt === null || now >= lostAt) return { expired: true, action: "acquire", nextInMs: renewEveryMs };
  const dueAt = confirmedAt + renewEveryMs;
  if (now < dueAt) return { expired: false, action: "none", nextInMs: dueAt - now };
  return { expired: false, action: "renew", nextInMs: Math.max(1, Math.min(renewEveryMs / 4, lostAt - now)) };
}
function followerRetryMs(pttlMs, leaseMs, random) {
  const jitter = random() * leaseMs * 0.05;
  const base = pttlMs === null || pttlMs < 0 ? leaseMs / 3 : Math.min(pttlMs + 5, leaseMs / 3);
  return Math.max(5, Math.round(base + jitter));
}
function roleOf(input) {
  if (!input.redisUsable) return "direct";
  if (input.holdsLease) return "leader";
  return input.now - input.lastFleetChangeAt > 10 * input.intervalMs + input.leaseMs ? "direct" : "follower";
}

// src/fleet/snapshot-head.ts
import { createHash } from "node:crypto";
function headPollOf(poll) {
  return {
    outcome: poll?.lastOutcome ?? null,
    error: poll?.lastError ?? null,
    failures: poll?.consecutiveFailures ?? 0,
    at: poll?.lastPollAt ?? null,
    lastSuccessAt: poll?.lastSuccessAt ?? null
  };
}
var maxQuotaBodyBytes = 16 * 1024;
var maxGeneration = 1e12;
var maxHeadBytes = 64 * 1024;
var outcomes = ["updated", "not_modified", "quota_limited", "refused", "failed", "invalid"];
var maxErrorChars = 300;
function createBodyDigest() {
  const digests = /* @__PURE__ */ new WeakMap();
  return (body) => {
    let digest = digests.get(body);
    if (digest === void 0) {
      digest = createHash("sha256").update(body).digest("hex");
      digests.set(body, digest);
    }
    return digest;
  };
}
function describe(variant, digest) {
  if (variant === null) return null;
  const { upstreamEtag, servedEtag, fetchedAt } = variant;
  return { sha256: digest(variant.body), bytes: variant.body.length, upstreamEtag, servedEtag, fetchedAt };
}
function headOf(project, poll, generation, leader, digest) {
  const quotaBody = project.quotaBody === null || project.quotaBody.length <= maxQuotaBodyBytes ? project.quotaBody : null;
  const error = poll.error === null ? null : poll.error.slice(0, maxErrorChars);
  return { generation, leader, quotaBody, plainWanted: project.plainWanted, poll: { ...poll, error }, cohorts: describe(project.cohorts, digest), plain: describe(project.plain, digest) };
}
function encodeHead(head) {
  return JSON.stringify({ ...head, v: 1, quotaBody: head.quotaBody === null ? null : head.quotaBody.toString("base64") });
}
var isRecord = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
var isTime = (value) => typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
var isCount = (value, max) => typeof value === "number" && Number.isSafeInteger(value) && value >= 0 && value <= max;
var isEtag = (value) => typeof value === "string" && value.length <= 512 && /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value);
var isOptionalEtag = (value) => value === null || isEtag(value);
function parseVariant(value, maxBodyBytes, name) {
  if (value === null) return null;
  if (!isRecord(value)) return `${name} is not an object`;
  const { sha256, bytes, upstreamEtag, servedEtag, fetchedAt } = value;
  if (typeof sha256 !== "string" || !/^[0-9a-f]{64}$/.test(sha256)) return `${name}.sha256 is not a SHA-256`;
  if (!isCount(bytes, maxBodyBytes)) return `${name}.bytes is not a size within FLAG_SIDECAR_UPSTREAM_MAX_BODY`;
  if (!isOptionalEtag(upstreamEtag) || !isOptionalEtag(servedEtag)) return `${name} has an ETag that is not a header value`;
  if (!isTime(fetchedAt)) return `${name}.fetchedAt is not a time`;
  return { sha256, bytes, upstreamEtag, servedEtag, fetchedAt };
}
function parsePoll(value) {
  if (!isRecord(value)) return "poll is not an object";
  const { outcome, error, failures, at, lastSuccessAt } = value;
  if (outcome !== null && !outcomes.includes(outcome)) return "poll.outcome is not an outcome";
  if (error !== null && (typeof error !== "string" || error.length > maxErrorChars)) return "poll.error is not a short string";
  if (!isCount(failures, 1e6)) return "poll.failures is not a count";
  if (at !== null && !isTime(at) || lastSuccessAt !== null && !isTime(lastSuccessAt)) return "poll times are not times";
  return { outcome, error, failures, at, lastSuccessAt };
}
function parseHead(raw, maxBodyBytes) {
  const fail = (error) => ({ ok: false, error });
  if (raw.length > maxHeadBytes) return fail(`head is larger than ${maxHeadBytes} bytes`);
  let value;
  try {
    value = JSON.parse(raw.toString("utf8"));
  } catch {
    return fail("head is not JSON");
  }
  if (!isRecord(value) || value.v !== 1) return fail("head is not a version 1 object");
  const { generation, leader, quotaBody, plainWanted } = value;
  if (!isCount(generation, maxGeneration)) return fail("generation is not a count up to 10^12");
  if (typeof leader !== "string" || !/^[\x21-\x7e]{1,256}$/.test(leader)) return fail("leader is not an instance id");
  if (typeof plainWanted !== "boolean") return fail("plainWanted is not a boolean");
  let quota = null;
  if (quotaBody !== null) {
    if (typeof quotaBody !== "string" || quotaBody.length > Math.ceil(maxQuotaBodyBytes / 3) * 4 || !/^[A-Za-z0-9+/]*={0,2}$/.test(quotaBody)) {
      return fail("quotaBody is not a bounded base64 string");
    }
    quota = Buffer.from(quotaBody, "base64");
  }
  const poll = parsePoll(value.poll);
  if (typeof poll === "string") return fail(poll);
  const cohorts = parseVariant(value.cohorts, maxBodyBytes, "cohorts");
  if (typeof cohorts === "string") return fail(cohorts);
  if (cohorts === null) return fail("cohorts is missing");
  const plain = parseVariant(value.plain, maxBodyBytes, "plain");
  if (typeof plain === "string") return fail(plain);
  return { ok: true, head: { generation, leader, quotaBody: quota, plainWanted, poll, cohorts, plain } };
}
var encodeNotice = (notice) => JSON.stringify(notice);
var encodePollRequest = (request) => JSON.stringify(request);
function parseSmall(raw) {
  if (raw.length > 512) return null;
  try {
    const value = JSON.parse(raw.toString("utf8"));
    return isRecord(value) && isCount(value.project, Number.MAX_SAFE_INTEGER) ? value : null;
  } catch {
    return null;
  }
}
function parseNotice(raw) {
  const value = parseSmall(raw);
  if (value === null) return null;
  const project = value.project;
  if (value.kind === "released") return { kind: "released", project };
  if (value.kind === "snapshot" && isCount(value.generation, maxGeneration)) return { kind: "snapshot", project, generation: value.generation };
  return null;
}
function parsePollRequest(raw) {
  const value = parseSmall(raw);
  if (value === null || typeof value.plain !== "boolean") return null;
  return { project: value.project, plain: value.plain };
}

// src/fleet/lease.ts
var generationTtlMs = 24 * 36e5;
var acquireScript = `
local cur = redis.call('GET', KEYS[1])
if cur then
  if string.sub(cur, 1, string.len(ARGV[1]) + 1) == ARGV[1] .. '|' then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    redis.call('PEXPIRE', KEYS[2], ARGV[3])
    return {1, cur}
  end
  return {0, cur, redis.call('PTTL', KEYS[1])}
end
local gen = redis.pcall('INCR', KEYS[2])
if type(gen) ~= 'number' or gen <= tonumber(ARGV[4]) then
  gen = tonumber(ARGV[4]) + 1
  redis.call('SET', KEYS[2], gen)
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
local value = ARGV[1] .. '|' .. gen
redis.call('SET', KEYS[1], value, 'PX', ARGV[2])
return {1, value}`;
var renewScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return 1
end
return 0`;
var releaseScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;
function parseLeaseValue(value) {
  if (typeof value !== "string" || value.length > 300) return null;
  const match = /^([\x21-\x7e]{1,256})\|(\d{1,13})$/.exec(value);
  if (!match) return null;
  return { instance: match[1], generation: Number(match[2]) };
}
function createLease(deps) {
  const { redis, keys, projectId, instanceId, timing, now, logger, metrics } = deps;
  const project = String(projectId);
  const keyArgs = [keys.lease(projectId), keys.generation(projectId)];
  let held = false;
  let value = null;
  let generation = null;
  let highestSeen = 0;
  let confirmedAt = null;
  let holder = null;
  let holderTtlMs = null;
  let failing = false;
  let timer = null;
  let running = null;
  let stopped = false;
  function lose(reason) {
    if (!held) return;
    held = false;
    value = null;
    confirmedAt = null;
    if (holder === instanceId) holder = null;
    metrics.leaseChanges.inc({ project, change: "lost" });
    logger.warn({ project: projectId, reason }, "fleet lease lost; no longer polling upstream for the fleet");
    deps.onChange("lost");
  }
  async function acquire() {
    const sentAt = now();
    const args = [instanceId, String(timing.leaseMs), String(generationTtlMs), String(highestSeen)];
    const reply = await redis.command("lease_acquire", ["EVAL", acquireScript, "2", ...keyArgs, ...args]);
    const [took, text, pttl] = Array.isArray(reply) ? reply : [];
    const parsed = parseLeaseValue(text);
    if (took === 1 && parsed !== null && parsed.instance === instanceId) {
      const wasHeld = held;
      held = true;
      value = text;
      generation = parsed.generation;
      highestSeen = Math.max(highestSeen, parsed.generation);
      confirmedAt = sentAt;
      holder = instanceId;
      if (!wasHeld) {
        metrics.leaseChanges.inc({ project, change: "acquired" });
        logger.info({ project: projectId, generation }, "fleet lease acquired; polling upstream for the fleet");
        deps.onChange("acquired");
      }
      return;
    }
    holder = parsed?.instance ?? null;
    if (parsed !== null) highestSeen = Math.max(highestSeen, parsed.generation);
    holderTtlMs = typeof pttl === "number" ? pttl : null;
  }
  async function renew(current) {
    const sentAt = now();
    const reply = await redis.command("lease_renew", ["EVAL", renewScript, "2", ...keyArgs, current, String(timing.leaseMs), String(generationTtlMs)]);
    if (reply === 1) {
      if (value === current) confirmedAt = sentAt;
    } else if (value === current) {
      lose("taken by another sidecar");
    }
  }
  async function step() {
    if (stopped) return;
    const decision = leaseDecision({ held, confirmedAt }, now(), timing);
    if (decision.expired) lose(redis.up() ? "not renewed in time" : "redis unavailable");
    const attempted = redis.up();
    if (attempted) {
      try {
        if (decision.action === "renew" && value !== null) await renew(value);
        else if (decision.action === "acquire") await acquire();
        failing = false;
      } catch {
        failing = true;
      }
    }
    if (stopped) return;
    const after = leaseDecision({ held, confirmedAt }, now(), timing);
    const delay = held ? after.action === "none" ? after.nextInMs : decision.nextInMs : followerRetryMs(attempted && !failing ? holderTtlMs : null, timing.leaseMs, deps.random);
    schedule(delay);
  }
  function schedule(delayMs) {
    if (timer !== null) clearTimeout(timer);
    if (stopped) return;
    timer = setTimeout(() => void run(), delayMs);
    timer.unref();
  }
  function run() {
    running ??= step().finally(() => running = null);
    return running;
  }
  return {
    /** Begin: try to take the lease now, then keep it or keep trying. */
    start() {
      void run();
    },
    /** Decide now (Redis came back, the holder released): resolves once the attempt is done; nothing once stopped. Never rejects. */
    attemptNow() {
      if (stopped) return running ?? Promise.resolve();
      if (timer !== null) clearTimeout(timer);
      return running ?? run();
    },
    /** The lease is ours and cannot have expired yet. */
    holdsLease() {
      return held && !leaseDecision({ held, confirmedAt }, now(), timing).expired;
    },
    /** Our lease value (`<instance>|<generation>`, for fenced writes) while held, else null. */
    value: () => held ? value : null,
    /** Fencing generation of our lease (the last one we held). */
    generation: () => generation,
    /** The holder as last seen (our id while we hold it), or null. */
    holder: () => held ? instanceId : holder,
    /** The last lease command failed (Redis refused or timed out): the fleet cannot elect through us. */
    failing: () => failing,
    /** Note a generation seen in the fleet's data, so that a generation this sidecar takes is always higher. */
    observe(seen) {
      if (seen <= maxGeneration) highestSeen = Math.max(highestSeen, seen);
    },
    /** A fenced write found the lease taken: stop acting as leader at once. */
    markLost(reason) {
      lose(reason);
      schedule(0);
    },
    /** Stop the timers and, if held, release the lease (compare-and-delete). Resolves true when released; never rejects. */
    async stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      await running;
      const current = held ? value : null;
      held = false;
      if (current === null) return false;
      try {
        const reply = await redis.command("lease_release", ["EVAL", releaseScript, "1", keys.lease(projectId), current]);
        if (reply !== 1) return false;
        metrics.leaseChanges.inc({ project, change: "released" });
        deps.onChange("released");
        return true;
      } catch {
        return false;
      }
    }
  };
}

// src/fleet/notice-waiters.ts
function createNoticeWaiters() {
  const waiting = /* @__PURE__ */ new Map();
  const settle = (projectId) => {
    const set = waiting.get(projectId);
    waiting.delete(projectId);
    for (const resolve of set ?? []) resolve();
  };
  return {
    /** Resolves at the next notice for the project (settle), or after `ms`. Never rejects. */
    next(projectId, ms) {
      return new Promise((resolve) => {
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          waiting.get(projectId)?.delete(done);
          resolve();
        }
        const set = waiting.get(projectId) ?? /* @__PURE__ */ new Set();
        set.add(done);
        waiting.set(projectId, set);
      });
    },
    /** A notice for the project arrived (or waiting is pointless): end every wait for it. */
    settle,
    /** End every wait (shutdown). */
    settleAll() {
      for (const projectId of [...waiting.keys()]) settle(projectId);
    }
  };
}

// src/fleet/snapshot-publisher.ts
var snapshotTtlMs = 24 * 36e5;
var publishScript = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local missing = 0
for i = 0, 1 do
  local key = KEYS[3 + i]
  local mode = ARGV[4 + 2 * i]
  if mode == 'w' then
    redis.call('SET', key, ARGV[5 + 2 * i], 'PX', ARGV[3])
  elseif mode == 'k' then
    if redis.call('PEXPIRE', key, ARGV[3]) == 0 then missing = missing + (i == 0 and 1 or 2) end
  else
    redis.call('DEL', key)
  end
end
if missing == 0 then redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3]) end
return missing`;
function createSnapshotPublisher(deps) {
  const { redis, keys, store, digest, metrics } = deps;
  const written = /* @__PURE__ */ new Map();
  async function run(projectId, input, rewrite) {
    const project = store.get(projectId);
    if (!project?.cohorts) return 0;
    const head = headOf(project, input.poll, input.generation, deps.instanceId, digest);
    const args = [];
    const wrote = [];
    for (const [bit, name] of [[1, "cohorts"], [2, "plain"]]) {
      const variant = project[name];
      if (variant === null) {
        args.push("n", "");
        continue;
      }
      const id = `${projectId}:${name}`;
      const sha = digest(variant.body);
      if ((rewrite & bit) !== 0 || written.get(id) !== sha) {
        args.push("w", variant.body);
        wrote.push([id, sha]);
      } else {
        args.push("k", "");
      }
    }
    const bodyKeys = [keys.snapshot(projectId, "cohorts"), keys.snapshot(projectId, "plain")];
    const reply = await redis.command("snapshot_publish", [
      "EVAL",
      publishScript,
      "4",
      keys.lease(projectId),
      keys.snapshotHead(projectId),
      ...bodyKeys,
      input.leaseValue,
      encodeHead(head),
      String(snapshotTtlMs),
      ...args
    ]);
    if (typeof reply !== "number") throw new Error("unexpected reply to the publish script");
    if (reply === 0) {
      for (const [id, sha] of wrote) written.set(id, sha);
      if (wrote.length > 0) metrics.snapshotsPublished.inc({ project: String(projectId) }, wrote.length);
      if (wrote.length > 0 || input.notice) await redis.publish(keys.snapshotChannel, encodeNotice({ kind: "snapshot", project: projectId, generation: input.generation }));
    }
    return reply;
  }
  return {
    /** Publish the project's current snapshot under the lease `input.leaseValue`. Never rejects. */
    async publish(projectId, input) {
      if (!store.get(projectId)?.cohorts) return "nothing";
      try {
        let reply = await run(projectId, input, 0);
        if (reply > 0) reply = await run(projectId, input, reply);
        if (reply === -1) return "fenced";
        return reply === 0 ? "published" : "failed";
      } catch (error) {
        deps.logger.debug({ project: projectId, err: error.message }, "snapshot not published");
        return "failed";
      }
    },
    /** Forget what was written for a project (a new lease: Redis may hold another leader's bodies). */
    forget(projectId) {
      written.delete(`${projectId}:cohorts`);
      written.delete(`${projectId}:plain`);
    }
  };
}

// src/fleet/poll-routing.ts
function createPollRouting(deps) {
  const { poller, store, redis, keys, waiters } = deps;
  async function askLeader(projectId, ask) {
    const notice = waiters.next(projectId, deps.waitMs);
    const asked = await ask().then(() => true, () => false);
    if (asked) await notice;
    else waiters.settle(projectId);
    await deps.load(projectId);
    return asked;
  }
  return {
    async pollNow(projectId) {
      if (deps.role(projectId) !== "follower") return poller.pollNow(projectId);
      await askLeader(projectId, () => redis.publish(keys.pollChannel, encodePollRequest({ project: projectId, plain: false })));
    },
    async ensurePlain(projectId) {
      const project = store.get(projectId);
      if (project === void 0) return;
      const role = deps.role(projectId);
      if (role !== "follower") {
        await poller.ensurePlain(projectId);
        if (role === "leader") await deps.publish(projectId);
        return;
      }
      if (project.plainWanted) return;
      store.update(projectId, (p) => withChanges(p, { plainWanted: true }));
      const asked = await askLeader(projectId, async () => {
        await redis.command("plain_wanted", ["SET", keys.plainWanted(projectId), "1", "PX", String(snapshotTtlMs)]);
        await redis.publish(keys.pollChannel, encodePollRequest({ project: projectId, plain: true }));
      });
      if (!asked && store.get(projectId)?.plain === null) store.update(projectId, (p) => withChanges(p, { plainWanted: false }));
    },
    onHealthyCycle(listener) {
      poller.onHealthyCycle(listener);
      deps.listeners.push(listener);
    }
  };
}

// src/fleet/snapshot-loader.ts
var variants = ["cohorts", "plain"];
function createSnapshotLoader(deps) {
  const { redis, keys, store, digest, metrics, now } = deps;
  const lastHead = /* @__PURE__ */ new Map();
  const lastRefusal = /* @__PURE__ */ new Map();
  function refuse(projectId, error) {
    metrics.snapshotsReceived.inc({ project: String(projectId), source: "rejected" });
    if (lastRefusal.get(projectId) !== error) deps.logger.warn({ project: projectId, cause: error }, "fleet snapshot in redis refused; keeping the current one");
    lastRefusal.set(projectId, error);
    return { kind: "rejected", error };
  }
  const wantsBody = (ours, theirs, own) => ours === null || digest(ours.body) !== theirs.sha256 && (!own || ours.source !== "upstream" || theirs.fetchedAt > ours.fetchedAt);
  function merge(project, head, fetched, own) {
    const changes = {};
    for (const name of variants) {
      const theirs = head[name];
      const ours = project[name];
      if (theirs === null) continue;
      const fetchedAt = Math.min(theirs.fetchedAt, now());
      const meta = { upstreamEtag: theirs.upstreamEtag, servedEtag: theirs.servedEtag, fetchedAt, source: "upstream" };
      const got = fetched.get(name);
      if (got !== void 0) {
        changes[name] = createVariant({ ...got, ...meta });
      } else if (ours !== null && digest(ours.body) === theirs.sha256 && (fetchedAt > ours.fetchedAt || ours.source !== "upstream" || ours.servedEtag !== theirs.servedEtag || ours.upstreamEtag !== theirs.upstreamEtag)) {
        if (own && fetchedAt < ours.fetchedAt) continue;
        changes[name] = createVariant({ body: ours.body, definitions: ours.definitions, ...meta });
      }
    }
    const plainWanted = project.plainWanted || head.plainWanted;
    const quotaSame = head.quotaBody === null ? project.quotaBody === null : project.quotaBody !== null && head.quotaBody.equals(project.quotaBody);
    if (Object.keys(changes).length === 0 && plainWanted === project.plainWanted && quotaSame) return project;
    return withChanges(project, { ...changes, plainWanted, ...quotaSame ? {} : { quotaBody: head.quotaBody } });
  }
  async function readBodies(projectId, needed) {
    const reply = await redis.command("snapshot_read", ["MGET", keys.snapshotHead(projectId), ...needed.map((v) => keys.snapshot(projectId, v))], true);
    if (!Array.isArray(reply) || reply.length !== needed.length + 1) return "unexpected reply to MGET";
    const [rawHead, ...bodies] = reply;
    if (rawHead === null) return null;
    if (!Buffer.isBuffer(rawHead)) return "head is not a string";
    const parsed = parseHead(rawHead, deps.maxBodyBytes);
    if (!parsed.ok) return parsed.error;
    const fetched = /* @__PURE__ */ new Map();
    for (const [i, name] of needed.entries()) {
      const body = bodies[i];
      const described = parsed.head[name];
      if (described === null) continue;
      if (!Buffer.isBuffer(body)) return `${name} body is missing`;
      if (body.length > deps.maxBodyBytes) return `${name} body is larger than FLAG_SIDECAR_UPSTREAM_MAX_BODY`;
      if (body.length !== described.bytes || digest(body) !== described.sha256) return `${name} body does not match its SHA-256`;
      const definitions = parseDefinitions(body);
      if (!definitions.ok) return `${name} body is invalid: ${definitions.error}`;
      fetched.set(name, { body, definitions: definitions.value });
    }
    lastHead.set(projectId, rawHead);
    return { head: parsed.head, fetched };
  }
  return {
    /**
     * Load the fleet's snapshot of a project into the store. `own`: the data served now was fetched by this
     * sidecar itself, so only fleet data fetched later replaces it. Never rejects.
     */
    async load(projectId, own) {
      try {
        const rawHead = await redis.command("snapshot_head", ["GET", keys.snapshotHead(projectId)], true);
        if (rawHead === null) return { kind: "none" };
        if (!Buffer.isBuffer(rawHead)) return refuse(projectId, "head is not a string");
        const changed = !(lastHead.get(projectId)?.equals(rawHead) ?? false);
        const parsed = parseHead(rawHead, deps.maxBodyBytes);
        if (!parsed.ok) return refuse(projectId, parsed.error);
        lastHead.set(projectId, rawHead);
        let head = parsed.head;
        let fetched = /* @__PURE__ */ new Map();
        const current = store.get(projectId);
        if (current === void 0) return { kind: "none" };
        const needed = variants.filter((v) => {
          const theirs = head[v];
          return theirs !== null && wantsBody(current[v], theirs, own);
        });
        if (needed.length > 0) {
          const read = await readBodies(projectId, needed);
          if (read === null) return { kind: "none" };
          if (typeof read === "string") return refuse(projectId, read);
          ({ head, fetched } = read);
        }
        lastRefusal.delete(projectId);
        const before = store.get(projectId);
        const after = store.update(projectId, (p) => merge(p, head, fetched, own));
        const fresh = variants.some((v) => after[v] !== before[v]);
        if (fetched.size > 0) metrics.snapshotsReceived.inc({ project: String(projectId), source: "redis" }, fetched.size);
        return { kind: "loaded", head, changed, fresh };
      } catch {
        return { kind: "failed" };
      }
    }
  };
}

// src/fleet/snapshot-relay.ts
var healthy = (outcome) => outcome === "updated" || outcome === "not_modified";
function createSnapshotRelay(deps) {
  const { fleet, store, logger, now } = deps;
  const { redis, keys, metrics, instanceId } = fleet;
  const leaseMs = fleet.config.leaseMs;
  const digest = createBodyDigest();
  const loader = createSnapshotLoader({ redis, keys, store, digest, maxBodyBytes: deps.maxBodyBytes, metrics, logger, now });
  const publisher = createSnapshotPublisher({ redis, keys, store, instanceId, digest, metrics, logger });
  const timing = { leaseMs, marginMs: leaseMargin(leaseMs, fleet.config.timeoutMs) };
  const listeners = [];
  const waiters = createNoticeWaiters();
  const states = /* @__PURE__ */ new Map();
  const waitMs = Math.max(1e3, 4 * fleet.config.timeoutMs);
  let poller = null;
  let timer = null;
  const dueTimers = /* @__PURE__ */ new Set();
  let startup = Promise.resolve();
  let invalidLogged = false;
  const state = (projectId) => states.get(projectId);
  function role(projectId) {
    const s = state(projectId);
    const next = roleOf({
      redisUsable: redis.up() && !s.lease.failing(),
      holdsLease: s.lease.holdsLease(),
      lastFleetChangeAt: s.lastFleetChangeAt,
      now: now(),
      intervalMs: deps.intervalMs,
      leaseMs
    });
    if (next !== s.role) {
      if (s.role !== null || next !== "direct") logger.info({ project: projectId, role: next, was: s.role }, "fleet role changed");
      s.role = next;
    }
    return next;
  }
  function load(projectId) {
    const s = state(projectId);
    if (s.loading === null) {
      s.loading = loadOnce(projectId).finally(() => s.loading = null);
      return s.loading;
    }
    s.queued ??= s.loading.then(() => {
      s.queued = null;
      return load(projectId);
    });
    return s.queued;
  }
  async function loadOnce(projectId) {
    const s = state(projectId);
    const result = await loader.load(projectId, s.own);
    if (result.kind !== "loaded") return;
    if (result.changed) s.lastFleetChangeAt = now();
    s.lease.observe(result.head.generation);
    if (!result.fresh && s.own) return;
    s.own = false;
    s.head = result.head;
    if (result.fresh && healthy(result.head.poll.outcome)) for (const listener of listeners) listener(projectId);
  }
  function loadIfFollower(projectId) {
    return role(projectId) === "leader" ? Promise.resolve() : load(projectId);
  }
  async function publish(projectId) {
    const s = state(projectId);
    const value = s.lease.value();
    const generation = s.lease.generation();
    if (value === null || generation === null || !redis.up() || poller === null) return;
    const poll = poller.status(projectId);
    const notice = s.noticeWanted;
    s.noticeWanted = false;
    const result = await publisher.publish(projectId, { leaseValue: value, generation, notice, poll: headPollOf(poll) });
    if (result === "fenced") s.lease.markLost("another leader holds the lease");
    if (result === "failed" && notice) s.noticeWanted = true;
  }
  async function adopt(projectId) {
    publisher.forget(projectId);
    await load(projectId);
    const wanted = await redis.command("plain_wanted", ["GET", keys.plainWanted(projectId)]).catch(() => null);
    if (wanted !== null && !store.get(projectId)?.plainWanted) store.update(projectId, (p) => withChanges(p, { plainWanted: true }));
    const fetchedAt = store.get(projectId)?.cohorts?.fetchedAt ?? 0;
    const dueIn = Math.max(0, fetchedAt + deps.intervalMs - now());
    const due = setTimeout(() => {
      dueTimers.delete(due);
      if (role(projectId) === "leader") void poller?.pollNow(projectId);
    }, dueIn);
    due.unref();
    dueTimers.add(due);
  }
  function accept(message) {
    if (message === null) {
      metrics.redisErrors.inc({ operation: "invalid_message" });
      if (!invalidLogged) logger.warn("fleet message in redis refused (not one this version sends); ignoring such messages");
      invalidLogged = true;
      return null;
    }
    return states.has(message.project) ? message : null;
  }
  async function answerPollRequest(projectId, plain) {
    const s = state(projectId);
    if (role(projectId) !== "leader" || poller === null) return;
    if (plain && !store.get(projectId)?.plainWanted) store.update(projectId, (p) => withChanges(p, { plainWanted: true }));
    s.noticeWanted = true;
    await poller.pollNow(projectId);
    if (s.noticeWanted) await publish(projectId);
  }
  const hooks = {
    async shouldPoll(projectId) {
      await startup;
      return role(projectId) !== "follower";
    },
    polled(projectId, outcome) {
      const s = state(projectId);
      if (outcome === "updated") metrics.snapshotsReceived.inc({ project: String(projectId), source: "upstream" });
      if (healthy(outcome)) s.own = true;
      if (role(projectId) === "leader") void publish(projectId);
    }
  };
  for (const projectId of store.projectIds()) {
    const lease = createLease({
      redis,
      keys,
      projectId,
      instanceId,
      timing,
      now,
      random: deps.random,
      logger,
      metrics,
      onChange: (change) => {
        const s = state(projectId);
        if (change === "acquired") void adopt(projectId);
        else s.lastFleetChangeAt = now();
        role(projectId);
      }
    });
    states.set(projectId, { lease, own: false, lastFleetChangeAt: now(), head: null, role: null, noticeWanted: false, loading: null, queued: null });
  }
  metrics.observeRoles(() => store.projectIds().map((id) => ({ project: String(id), role: role(id), generation: status(id).generation })));
  function status(projectId) {
    const s = state(projectId);
    const r = role(projectId);
    const generation = r === "leader" ? s.lease.generation() : s.own ? null : s.head?.generation ?? null;
    return { role: r, leader: r === "leader" ? instanceId : s.lease.holder() ?? s.head?.leader ?? null, generation };
  }
  return {
    /** Hooks the poller consults each cycle. */
    hooks,
    /** Start: subscribe, try to take every lease, load the fleet's snapshots (as soon as Redis answers). */
    start(started) {
      poller = started;
      const ids = store.projectIds();
      const syncAll = () => Promise.all(ids.map(async (id) => {
        state(id).lastFleetChangeAt = now();
        await state(id).lease.attemptNow();
        await loadIfFollower(id);
      }));
      startup = new Promise((resolve) => {
        const grace = setTimeout(resolve, Math.max(1e3, 4 * fleet.config.timeoutMs));
        grace.unref();
        redis.onReady(() => void syncAll().finally(resolve));
        if (redis.up()) void syncAll().finally(resolve);
      });
      void redis.subscribe(keys.snapshotChannel, (raw) => {
        const notice = accept(parseNotice(raw));
        if (notice === null) return;
        if (notice.kind === "released") void state(notice.project).lease.attemptNow();
        else void loadIfFollower(notice.project).finally(() => waiters.settle(notice.project));
      }).catch((error) => logger.warn({ err: error.message }, "fleet: could not subscribe to snapshot notices"));
      void redis.subscribe(keys.pollChannel, (raw) => {
        const request = accept(parsePollRequest(raw));
        if (request !== null) void answerPollRequest(request.project, request.plain);
      }).catch((error) => logger.warn({ err: error.message }, "fleet: could not subscribe to poll requests"));
      for (const id of ids) state(id).lease.start();
      timer = setInterval(() => {
        if (redis.up()) for (const id of ids) void loadIfFollower(id);
      }, Math.max(50, Math.round(leaseMs / 2)));
      timer.unref();
    },
    /** What the API routes use for polling: `polls` routed by role. */
    control(polls) {
      return createPollRouting({ poller: polls, store, redis, keys, waiters, waitMs, role, load, publish, listeners });
    },
    /**
     * After a write through another sidecar: a follower reads the fleet's snapshot (the writer already asked the
     * leader to poll), the leader or a direct poller polls upstream. Never rejects.
     */
    refresh(projectId) {
      if (!states.has(projectId)) return Promise.resolve();
      return role(projectId) === "follower" ? load(projectId) : poller?.pollNow(projectId) ?? Promise.resolve();
    },
    /** The project's role, leader and generation, for /status. */
    status,
    /** A follower's view of upstream polling (the leader's last poll, from its head); null when this sidecar polls. */
    pollStatus(projectId) {
      const s = state(projectId);
      if (role(projectId) !== "follower" || s.head === null) return null;
      const at = (t) => t === null ? null : Math.min(t, now());
      const { poll } = s.head;
      return { lastPollAt: at(poll.at), lastSuccessAt: at(poll.lastSuccessAt), lastOutcome: poll.outcome, lastError: poll.error, consecutiveFailures: poll.failures, nextPollAt: null, plain: null };
    },
    /** Stop loading, release every lease held (followers hear of it and take over at once). Never rejects. */
    async close() {
      if (timer !== null) clearInterval(timer);
      for (const due of dueTimers) clearTimeout(due);
      waiters.settleAll();
      await Promise.all(
        [...states.entries()].map(async ([id, s]) => {
          if (await s.lease.stop()) await redis.publish(keys.snapshotChannel, encodeNotice({ kind: "released", project: id })).catch(() => void 0);
        })
      );
    }
  };
}
export {
  createSnapshotRelay
};
//# sourceMappingURL=snapshot-relay-O4G7VSQM.js.map
