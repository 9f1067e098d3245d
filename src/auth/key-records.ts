/**
 * Key records: what upstream vouched for about a key, in a form that can leave the process — to a file beside
 * the snapshot (key-record-file.ts) and later to a shared store. A record names a key only by its SHA-256 hex
 * digest, never the key. Pure: no IO, time passed in.
 *
 * Three kinds, one per answer the principal caches keep as positive:
 * - `principal`: an introspected personal key's scopes and project scoping (auth/introspect.ts);
 * - `refused`: a personal key upstream would not describe, which relies on grants alone (auth/introspect.ts);
 * - `grant`: upstream accepted the key for one project's local_evaluation (auth/secret-keys.ts).
 * Refusals (401/403) are never records: a restarted sidecar asks again (or answers 503 while it cannot), so a
 * stored negative can never lock a key out.
 *
 * Each record carries when upstream last vouched, when that answer expires (the TTL) and until when it may be
 * used while upstream is unreachable (the grace). `admit` re-applies the current TTL and grace on load, so a
 * record never grants more than the in-memory cache that wrote it would have.
 */
import type { Principal } from './principal.js';

/** What upstream said about a personal key's reach (Principal, minus what is derived from the digest). */
export interface PrincipalFacts {
  readonly label: string;
  readonly scopes: readonly string[];
  /** null: every project the key's user may reach. */
  readonly projects: readonly number[] | null;
  readonly legacy: boolean;
}

interface Times {
  /** SHA-256 hex of the key (64 lowercase hex digits). */
  readonly digest: string;
  /** When upstream last vouched (ms since the epoch). */
  readonly vouchedAt: number;
  /** When the answer stops being used without asking upstream (vouchedAt + TTL). */
  readonly expiresAt: number;
  /** When the answer stops being used even while upstream is unreachable (expiresAt + grace). */
  readonly graceUntil: number;
}

/** One key record. */
export type KeyRecord =
  | (Times & { readonly type: 'principal'; readonly principal: PrincipalFacts })
  | (Times & { readonly type: 'refused' })
  | (Times & { readonly type: 'grant'; readonly projectId: number });

/** The times of a record for a cached answer expiring at `expiresAt` (vouched for TTL before it). */
export const recordTimes = (expiresAt: number, ttlMs: number, graceMs: number): Pick<KeyRecord, 'vouchedAt' | 'expiresAt' | 'graceUntil'> => ({
  vouchedAt: expiresAt - ttlMs,
  expiresAt,
  graceUntil: expiresAt + graceMs,
});

/** What a record keeps of an introspected principal. */
export const principalFacts = (principal: Principal): PrincipalFacts => ({
  label: principal.label,
  scopes: [...principal.scopes],
  projects: principal.projects === null ? null : [...principal.projects],
  legacy: principal.legacy === true,
});

/** The introspected principal a record describes (as introspect.ts's principalFromRecord builds it). */
export const principalFromFacts = (digest: string, facts: PrincipalFacts): Principal =>
  Object.freeze({
    label: facts.label,
    keyPrefix: digest.slice(0, 12),
    scopes: new Set(facts.scopes),
    projects: facts.projects === null ? null : new Set(facts.projects),
    kind: 'introspected' as const,
    legacy: facts.legacy,
  });

/** The identity of a record: at most one record per identity is kept. */
export const recordId = (record: KeyRecord): string =>
  record.type === 'grant' ? `grant:${record.digest}:${record.projectId}` : `key:${record.digest}`;

/** Bounds of what a record may hold (larger answers are not persisted, only kept in memory). */
export const recordLimits = { label: 256, scopes: 64, scope: 128, projects: 1024 } as const;

/** Format version of the records file. */
export const keyRecordsVersion = 1;

const hex64 = /^[0-9a-f]{64}$/;
const isoDate = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isProjectId = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) > 0;

/** Whether a record's fields are within bounds and consistent (what `keyRecordFromJson` also demands). */
export function isValidRecord(record: KeyRecord): boolean {
  const { digest, vouchedAt, expiresAt, graceUntil } = record;
  if (!hex64.test(digest)) return false;
  if (![vouchedAt, expiresAt, graceUntil].every(Number.isSafeInteger)) return false;
  if (!(vouchedAt <= expiresAt && expiresAt <= graceUntil)) return false;
  if (record.type === 'grant') return isProjectId(record.projectId);
  if (record.type === 'refused') return true;
  const { label, scopes, projects, legacy } = record.principal;
  return (
    typeof label === 'string' &&
    label.length <= recordLimits.label &&
    Array.isArray(scopes) &&
    scopes.length > 0 &&
    scopes.length <= recordLimits.scopes &&
    scopes.every((s) => typeof s === 'string' && s !== '' && s.length <= recordLimits.scope) &&
    (projects === null || (Array.isArray(projects) && projects.length > 0 && projects.length <= recordLimits.projects && projects.every(isProjectId))) &&
    typeof legacy === 'boolean'
  );
}

/** A record as JSON (times as ISO dates). */
export function keyRecordToJson(record: KeyRecord): Record<string, unknown> {
  const times = {
    digest: record.digest,
    vouched_at: new Date(record.vouchedAt).toISOString(),
    expires_at: new Date(record.expiresAt).toISOString(),
    grace_until: new Date(record.graceUntil).toISOString(),
  };
  if (record.type === 'grant') return { type: 'grant', ...times, project_id: record.projectId };
  if (record.type === 'refused') return { type: 'refused', ...times };
  const { label, scopes, projects, legacy } = record.principal;
  return { type: 'principal', ...times, label, scopes: [...scopes], projects: projects === null ? null : [...projects], legacy };
}

/** An ISO date as written by keyRecordToJson, in ms since the epoch; null for anything else. */
export const timeOf = (value: unknown): number | null => {
  if (typeof value !== 'string' || !isoDate.test(value)) return null;
  const ms = Date.parse(value);
  return Number.isSafeInteger(ms) ? ms : null;
};

/** A record read back from JSON, strictly: null for anything not exactly a record (unknown fields included). */
export function keyRecordFromJson(value: unknown): KeyRecord | null {
  if (!isObject(value)) return null;
  const { type, digest } = value;
  const vouchedAt = timeOf(value.vouched_at);
  const expiresAt = timeOf(value.expires_at);
  const graceUntil = timeOf(value.grace_until);
  if (typeof digest !== 'string' || vouchedAt === null || expiresAt === null || graceUntil === null) return null;
  const times = { digest, vouchedAt, expiresAt, graceUntil };
  const fields = ['type', 'digest', 'vouched_at', 'expires_at', 'grace_until'];
  let record: KeyRecord;
  if (type === 'grant' && isProjectId(value.project_id)) {
    record = { type, ...times, projectId: value.project_id };
    fields.push('project_id');
  } else if (type === 'refused') {
    record = { type, ...times };
  } else if (type === 'principal') {
    const { label, scopes, projects, legacy } = value;
    if (typeof label !== 'string' || !Array.isArray(scopes) || (projects !== null && !Array.isArray(projects)) || typeof legacy !== 'boolean') {
      return null;
    }
    record = { type, ...times, principal: { label, scopes: scopes as string[], projects: projects as number[] | null, legacy } };
    fields.push('label', 'scopes', 'projects', 'legacy');
  } else {
    return null;
  }
  if (Object.keys(value).some((k) => !fields.includes(k))) return null;
  return isValidRecord(record) ? record : null;
}

/** Current settings a loaded record is held to. */
export interface AdmitPolicy {
  readonly now: number;
  readonly ttlMs: number;
  readonly graceMs: number;
}

/**
 * A loaded record under today's settings, or null when it may no longer be used (or claims to be vouched for
 * in the future). Its expiry is brought within vouchedAt + TTL, its grace within expiry + grace and the stored
 * grace; the returned expiresAt is such that a cache applying `graceMs` past it stops at the admitted grace.
 */
export function admit(record: KeyRecord, policy: AdmitPolicy): KeyRecord | null {
  if (record.vouchedAt > policy.now) return null;
  const expiresAt = Math.min(record.expiresAt, record.vouchedAt + policy.ttlMs);
  const graceUntil = Math.min(record.graceUntil, expiresAt + policy.graceMs);
  if (policy.now > graceUntil) return null;
  return { ...record, expiresAt: Math.min(expiresAt, graceUntil - policy.graceMs), graceUntil };
}

/** Thrown by parseKeyRecords for a file that is not a usable records file. */
export class KeyRecordsError extends Error {
  override readonly name = 'KeyRecordsError';
}

/** Most bytes a records file for `maxRecords` records may take (a larger file is not read). */
export const maxRecordsFileBytes = (maxRecords: number): number => maxRecords * 1024 + 64 * 1024;

/**
 * The records file's text: the envelope and the records, one per line, in the order given (newest first), as
 * many as fit in `maxRecords` records and maxRecordsFileBytes(maxRecords) bytes; invalid records are left out.
 */
export function serializeKeyRecords(records: readonly KeyRecord[], writtenAt: number, maxRecords: number): string {
  const head = `{"flag_sidecar_key_records":${keyRecordsVersion},"written_at":${JSON.stringify(new Date(writtenAt).toISOString())},"records":[`;
  const tail = ']}\n';
  let budget = maxRecordsFileBytes(maxRecords) - head.length - tail.length - 1;
  const lines: string[] = [];
  for (const record of records) {
    if (lines.length >= maxRecords) break;
    if (!isValidRecord(record)) continue;
    const line = JSON.stringify(keyRecordToJson(record));
    budget -= Buffer.byteLength(line) + 2;
    if (budget < 0) break;
    lines.push(line);
  }
  return `${head}${lines.length > 0 ? `\n${lines.join(',\n')}\n` : ''}${tail}`;
}

/**
 * Records from a records file's text, all or nothing: throws KeyRecordsError for text that is not JSON, not
 * this format or version, or holds any record that is not valid (a damaged or foreign file grants nothing).
 * Keeps the first `maxRecords` (the newest); duplicates keep their first occurrence.
 */
export function parseKeyRecords(text: string, maxRecords: number): KeyRecord[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new KeyRecordsError('not valid JSON (truncated or damaged)');
  }
  if (!isObject(value) || value.flag_sidecar_key_records !== keyRecordsVersion || !Array.isArray(value.records)) {
    throw new KeyRecordsError(`not a key records file (version ${keyRecordsVersion} expected)`);
  }
  const seen = new Set<string>();
  const records: KeyRecord[] = [];
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

/**
 * The records still usable under `policy` (see admit). Throws KeyRecordsError when any claims to be vouched for
 * after `policy.now`: the clock went back or the file was not written by this sidecar, so none is trusted.
 */
export function admitAll(records: readonly KeyRecord[], policy: AdmitPolicy): KeyRecord[] {
  if (records.some((r) => r.vouchedAt > policy.now)) throw new KeyRecordsError('holds records vouched for in the future');
  return records.map((r) => admit(r, policy)).filter((r): r is KeyRecord => r !== null);
}
