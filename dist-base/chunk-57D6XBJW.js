import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);

// src/auth/key-records.ts
var recordTimes = (expiresAt, ttlMs, graceMs) => ({
  vouchedAt: expiresAt - ttlMs,
  expiresAt,
  graceUntil: expiresAt + graceMs
});
var principalFacts = (principal) => ({
  label: principal.label,
  scopes: [...principal.scopes],
  projects: principal.projects === null ? null : [...principal.projects],
  legacy: principal.legacy === true
});
var principalFromFacts = (digest, facts) => Object.freeze({
  label: facts.label,
  keyPrefix: digest.slice(0, 12),
  scopes: new Set(facts.scopes),
  projects: facts.projects === null ? null : new Set(facts.projects),
  kind: "introspected",
  legacy: facts.legacy
});
var recordId = (record) => record.type === "grant" ? `grant:${record.digest}:${record.projectId}` : `key:${record.digest}`;
var recordLimits = { label: 256, scopes: 64, scope: 128, projects: 1024 };
var keyRecordsVersion = 1;
var hex64 = /^[0-9a-f]{64}$/;
var isoDate = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;
var isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
var isProjectId = (value) => Number.isSafeInteger(value) && value > 0;
function isValidRecord(record) {
  const { digest, vouchedAt, expiresAt, graceUntil } = record;
  if (!hex64.test(digest)) return false;
  if (![vouchedAt, expiresAt, graceUntil].every(Number.isSafeInteger)) return false;
  if (!(vouchedAt <= expiresAt && expiresAt <= graceUntil)) return false;
  if (record.type === "grant") return isProjectId(record.projectId);
  if (record.type === "refused") return true;
  const { label, scopes, projects, legacy } = record.principal;
  return typeof label === "string" && label.length <= recordLimits.label && Array.isArray(scopes) && scopes.length > 0 && scopes.length <= recordLimits.scopes && scopes.every((s) => typeof s === "string" && s !== "" && s.length <= recordLimits.scope) && (projects === null || Array.isArray(projects) && projects.length > 0 && projects.length <= recordLimits.projects && projects.every(isProjectId)) && typeof legacy === "boolean";
}
function keyRecordToJson(record) {
  const times = {
    digest: record.digest,
    vouched_at: new Date(record.vouchedAt).toISOString(),
    expires_at: new Date(record.expiresAt).toISOString(),
    grace_until: new Date(record.graceUntil).toISOString()
  };
  if (record.type === "grant") return { type: "grant", ...times, project_id: record.projectId };
  if (record.type === "refused") return { type: "refused", ...times };
  const { label, scopes, projects, legacy } = record.principal;
  return { type: "principal", ...times, label, scopes: [...scopes], projects: projects === null ? null : [...projects], legacy };
}
var timeOf = (value) => {
  if (typeof value !== "string" || !isoDate.test(value)) return null;
  const ms = Date.parse(value);
  return Number.isSafeInteger(ms) ? ms : null;
};
function keyRecordFromJson(value) {
  if (!isObject(value)) return null;
  const { type, digest } = value;
  const vouchedAt = timeOf(value.vouched_at);
  const expiresAt = timeOf(value.expires_at);
  const graceUntil = timeOf(value.grace_until);
  if (typeof digest !== "string" || vouchedAt === null || expiresAt === null || graceUntil === null) return null;
  const times = { digest, vouchedAt, expiresAt, graceUntil };
  const fields = ["type", "digest", "vouched_at", "expires_at", "grace_until"];
  let record;
  if (type === "grant" && isProjectId(value.project_id)) {
    record = { type, ...times, projectId: value.project_id };
    fields.push("project_id");
  } else if (type === "refused") {
    record = { type, ...times };
  } else if (type === "principal") {
    const { label, scopes, projects, legacy } = value;
    if (typeof label !== "string" || !Array.isArray(scopes) || projects !== null && !Array.isArray(projects) || typeof legacy !== "boolean") {
      return null;
    }
    record = { type, ...times, principal: { label, scopes, projects, legacy } };
    fields.push("label", "scopes", "projects", "legacy");
  } else {
    return null;
  }
  if (Object.keys(value).some((k) => !fields.includes(k))) return null;
  return isValidRecord(record) ? record : null;
}
function admit(record, policy) {
  if (record.vouchedAt > policy.now) return null;
  const expiresAt = Math.min(record.expiresAt, record.vouchedAt + policy.ttlMs);
  const graceUntil = Math.min(record.graceUntil, expiresAt + policy.graceMs);
  if (policy.now > graceUntil) return null;
  return { ...record, expiresAt: Math.min(expiresAt, graceUntil - policy.graceMs), graceUntil };
}
var KeyRecordsError = class extends Error {
  name = "KeyRecordsError";
};
var maxRecordsFileBytes = (maxRecords) => maxRecords * 1024 + 64 * 1024;
function serializeKeyRecords(records, writtenAt, maxRecords) {
  const head = `{"flag_sidecar_key_records":${keyRecordsVersion},"written_at":${JSON.stringify(new Date(writtenAt).toISOString())},"records":[`;
  const tail = "]}\n";
  let budget = maxRecordsFileBytes(maxRecords) - head.length - tail.length - 1;
  const lines = [];
  for (const record of records) {
    if (lines.length >= maxRecords) break;
    if (!isValidRecord(record)) continue;
    const line = JSON.stringify(keyRecordToJson(record));
    budget -= Buffer.byteLength(line) + 2;
    if (budget < 0) break;
    lines.push(line);
  }
  return `${head}${lines.length > 0 ? `
${lines.join(",\n")}
` : ""}${tail}`;
}
function parseKeyRecords(text, maxRecords) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    throw new KeyRecordsError("not valid JSON (truncated or damaged)");
  }
  if (!isObject(value) || value.flag_sidecar_key_records !== keyRecordsVersion || !Array.isArray(value.records)) {
    throw new KeyRecordsError(`not a key records file (version ${keyRecordsVersion} expected)`);
  }
  const seen = /* @__PURE__ */ new Set();
  const records = [];
  for (const [index, item] of value.records.entries()) {
    const record = keyRecordFromJson(item);
    if (record === null) throw new KeyRecordsError(`record ${index} is not a valid key record`);
    const id = recordId(record);
    if (seen.has(id) || records.length >= maxRecords) continue;
    seen.add(id);
    records.push(record);
  }
  return records;
}
function admitAll(records, policy) {
  if (records.some((r) => r.vouchedAt > policy.now)) throw new KeyRecordsError("holds records vouched for in the future");
  return records.map((r) => admit(r, policy)).filter((r) => r !== null);
}

export {
  recordTimes,
  principalFacts,
  principalFromFacts,
  isValidRecord,
  keyRecordToJson,
  timeOf,
  keyRecordFromJson,
  admit,
  KeyRecordsError,
  maxRecordsFileBytes,
  serializeKeyRecords,
  parseKeyRecords,
  admitAll
};
//# sourceMappingURL=chunk-57D6XBJW.js.map
