import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);
import {
  admit,
  isValidRecord,
  keyRecordFromJson,
  keyRecordToJson,
  timeOf
} from "./chunk-57D6XBJW.js";
import "./chunk-64F6AQPD.js";

// src/fleet/shared-key-entries.ts
var sharedEntryMaxBytes = 16 * 1024;
var sharedClockSkewMs = 1e3;
var limits = { code: 64, detail: 512, attr: 128 };
var hex64 = /^[0-9a-f]{64}$/;
var codeShape = /^[a-z0-9_]+$/;
var isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
var isProjectId = (value) => Number.isSafeInteger(value) && value > 0;
var iso = (ms) => new Date(ms).toISOString();
var isValidDenial = (d) => typeof d.code === "string" && codeShape.test(d.code) && d.code.length <= limits.code && typeof d.detail === "string" && d.detail !== "" && d.detail.length <= limits.detail && (d.attr === null || typeof d.attr === "string" && d.attr.length <= limits.attr);
var vouchedAtOf = (entry) => entry.kind === "record" ? entry.record.vouchedAt : entry.vouchedAt;
var keepUntilOf = (entry) => entry.kind === "record" ? entry.record.graceUntil : entry.expiresAt;
function encodeSharedEntry(entry) {
  let value;
  if (entry.kind === "record") {
    if (!isValidRecord(entry.record)) return null;
    value = keyRecordToJson(entry.record);
  } else {
    if (!hex64.test(entry.digest) || !Number.isSafeInteger(entry.vouchedAt) || !Number.isSafeInteger(entry.expiresAt) || entry.vouchedAt > entry.expiresAt) return null;
    if (entry.projectId !== null && !isProjectId(entry.projectId)) return null;
    value = { type: entry.kind, digest: entry.digest, project_id: entry.projectId, vouched_at: iso(entry.vouchedAt), expires_at: iso(entry.expiresAt) };
    if (entry.kind === "denied") {
      if (!isValidDenial(entry.denial)) return null;
      Object.assign(value, { code: entry.denial.code, detail: entry.denial.detail, attr: entry.denial.attr });
    }
  }
  const text = JSON.stringify(value);
  return Buffer.byteLength(text) <= sharedEntryMaxBytes ? text : null;
}
function readRecord(value, slot, policy) {
  const parsed = keyRecordFromJson(value);
  if (parsed === null || parsed.digest !== slot.digest) return { kind: "invalid" };
  const fits = slot.projectId === null ? parsed.type !== "grant" : parsed.type === "grant" && parsed.projectId === slot.projectId;
  if (!fits || parsed.vouchedAt > policy.now + sharedClockSkewMs) return { kind: "invalid" };
  const record = parsed.vouchedAt > policy.now ? { ...parsed, vouchedAt: Math.min(policy.now, parsed.expiresAt) } : parsed;
  const admitted = admit(record, policy);
  return admitted === null ? { kind: "expired" } : { kind: "record", record: admitted };
}
function readRefusal(value, slot, policy) {
  const { type, digest, project_id: projectId } = value;
  const vouchedAt = timeOf(value.vouched_at);
  const expiresAt = timeOf(value.expires_at);
  const fields = ["type", "digest", "project_id", "vouched_at", "expires_at", ...type === "denied" ? ["code", "detail", "attr"] : []];
  if (Object.keys(value).some((k) => !fields.includes(k)) || Object.keys(value).length !== fields.length) return { kind: "invalid" };
  if (digest !== slot.digest || projectId !== slot.projectId || vouchedAt === null || expiresAt === null || vouchedAt > expiresAt) return { kind: "invalid" };
  if (vouchedAt > policy.now + sharedClockSkewMs) return { kind: "invalid" };
  const until = Math.min(expiresAt, Math.min(vouchedAt, policy.now) + policy.negativeTtlMs);
  if (policy.now >= until) return { kind: "expired" };
  const base = { digest: slot.digest, vouchedAt: Math.min(vouchedAt, policy.now), expiresAt: until };
  if (type === "unknown") return { kind: "unknown", ...base, projectId: slot.projectId };
  const denial = { code: value.code, detail: value.detail, attr: value.attr };
  if (slot.projectId === null || !isValidDenial(denial)) return { kind: "invalid" };
  return { kind: "denied", ...base, projectId: slot.projectId, denial };
}
function decodeSharedEntry(raw, slot, policy) {
  if (raw.length > sharedEntryMaxBytes) return { kind: "invalid" };
  let value;
  try {
    value = JSON.parse(raw.toString("utf8"));
  } catch {
    return { kind: "invalid" };
  }
  if (!isObject(value)) return { kind: "invalid" };
  if (value.type === "unknown" || value.type === "denied") return readRefusal(value, slot, policy);
  return readRecord(value, slot, policy);
}

// src/fleet/shared-keys.ts
var writeScript = `
local current = redis.call('GET', KEYS[1])
if current and ARGV[3] == 'positive' then
  local ok, old = pcall(cjson.decode, current)
  if ok and type(old) == 'table' and type(old.vouched_at) == 'string' and old.vouched_at > ARGV[2] then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
return 1`;
function createSharedKeys(deps) {
  const { redis, keys, metrics, logger } = deps;
  const reads = /* @__PURE__ */ new Map();
  const loggedInvalid = /* @__PURE__ */ new Set();
  const count = (cache, result) => metrics.sharedCache.inc({ cache, result });
  function invalid(cache, name, slot) {
    count(cache, "invalid");
    if (!loggedInvalid.has(cache)) {
      loggedInvalid.add(cache);
      logger.warn({ cache, key: name, keyPrefix: slot.digest.slice(0, 12) }, "ignoring an invalid shared key record in redis (logged once)");
    }
    return null;
  }
  async function get(cache, name, slot) {
    let reply;
    try {
      reply = await redis.command("get", ["GET", name], true);
    } catch {
      count(cache, "error");
      return null;
    }
    if (reply === null) {
      count(cache, "miss");
      return null;
    }
    if (!Buffer.isBuffer(reply)) return invalid(cache, name, slot);
    const read2 = decodeSharedEntry(reply, slot, { now: deps.now(), ttlMs: deps.ttlMs, negativeTtlMs: deps.negativeTtlMs, graceMs: deps.graceMs });
    if (read2.kind === "invalid") return invalid(cache, name, slot);
    if (read2.kind === "expired") {
      count(cache, "miss");
      return null;
    }
    count(cache, "hit");
    return read2;
  }
  function read(cache, name, slot) {
    if (!redis.up()) {
      count(cache, "error");
      return Promise.resolve(null);
    }
    const running = reads.get(name);
    if (running !== void 0) return running;
    const promise = get(cache, name, slot).finally(() => reads.delete(name));
    reads.set(name, promise);
    return promise;
  }
  function write(cache, name, entry) {
    const ttl = keepUntilOf(entry) - deps.now();
    const value = encodeSharedEntry(entry);
    if (ttl <= 0 || value === null) return;
    if (!redis.up()) return void count(cache, "error");
    const kind = entry.kind === "record" ? "positive" : "refusal";
    const args = ["EVAL", writeScript, "1", name, value, new Date(vouchedAtOf(entry)).toISOString(), kind, String(Math.ceil(ttl))];
    redis.command("share_key_record", args).then(
      () => count(cache, "write"),
      () => count(cache, "error")
    );
  }
  return {
    /** What the fleet knows about a key (a `principal`/`refused` record or `unknown`), or null. Never rejects. */
    readKey: (digest) => read("principal", keys.keyRecord(digest), { digest, projectId: null }),
    /** What the fleet knows about a key on a project (a `grant` record, `unknown` or `denied`), or null. Never rejects. */
    readGrant: (digest, projectId) => read("grant", keys.grant(digest, projectId), { digest, projectId }),
    /** Share an answer about a key (projectId null) or a key on a project, in the background. */
    write(entry) {
      const projectId = entry.kind === "record" ? entry.record.type === "grant" ? entry.record.projectId : null : entry.projectId;
      const digest = entry.kind === "record" ? entry.record.digest : entry.digest;
      if (projectId === null) write("principal", keys.keyRecord(digest), entry);
      else write("grant", keys.grant(digest, projectId), entry);
    }
  };
}
export {
  createSharedKeys
};
//# sourceMappingURL=shared-keys-M2OKQYPW.js.map
