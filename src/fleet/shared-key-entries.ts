/**
 * What fleet mode keeps in Redis about a key, and how it is read back. Pure: no IO, time passed in.
 *
 * An entry is one of upstream's answers, named only by the key's SHA-256 digest (never the key):
 * - `record`: a positive answer — a key record of auth/key-records.ts (`principal` or `refused` for a key,
 *   `grant` for a key on one project), in the records file's JSON form;
 * - `unknown`: upstream answered 401 (the key does not exist, or no longer) — for a key or one project;
 * - `denied`: upstream answered 403 to a grant check, with its error code, detail and attr.
 *
 * Reading is strict: anything that is not exactly such an entry, is larger than sharedEntryMaxBytes, or names
 * another digest or project than the Redis key it was found under (a foreign record) is `invalid`. A valid
 * entry is held to this sidecar's own TTLs (key-records.ts `admit` for records; the negative TTL for
 * refusals): it never lives longer than the answer that wrote it, nor than this sidecar would keep it.
 */
import { admit, isValidRecord, keyRecordFromJson, keyRecordToJson, timeOf, type KeyRecord } from '../auth/key-records.js';

/** Upstream's 403 to a grant check, as replayed to callers. */
export interface SharedDenial {
  readonly code: string;
  readonly detail: string;
  readonly attr: string | null;
}

interface Refusal {
  readonly digest: string;
  readonly vouchedAt: number;
  readonly expiresAt: number;
}

/** One shared answer about a key (projectId null: about the key itself, else about it on that project). */
export type SharedEntry =
  | { readonly kind: 'record'; readonly record: KeyRecord }
  | (Refusal & { readonly kind: 'unknown'; readonly projectId: number | null })
  | (Refusal & { readonly kind: 'denied'; readonly projectId: number; readonly denial: SharedDenial });

/** What a Redis key names: a key (projectId null) or a key on one project. */
export interface SharedSlot {
  readonly digest: string;
  readonly projectId: number | null;
}

/** The settings a read entry is held to. */
export interface SharedPolicy {
  readonly now: number;
  readonly ttlMs: number;
  readonly negativeTtlMs: number;
  readonly graceMs: number;
}

/** Outcome of reading an entry: the entry (still usable), `expired` (past its use), or `invalid`. */
export type SharedRead = SharedEntry | { readonly kind: 'expired' } | { readonly kind: 'invalid' };

/** Most bytes an entry may take (a principal at recordLimits is well below; anything larger is not read). */
export const sharedEntryMaxBytes = 16 * 1024;

/** How far another sidecar's clock may run ahead: an entry vouched for up to this far in the future is read as vouched now. */
export const sharedClockSkewMs = 1000;

const limits = { code: 64, detail: 512, attr: 128 } as const;
const hex64 = /^[0-9a-f]{64}$/;
const codeShape = /^[a-z0-9_]+$/;
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isProjectId = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) > 0;
const iso = (ms: number): string => new Date(ms).toISOString();

/** Whether a denial's fields are within bounds. */
const isValidDenial = (d: SharedDenial): boolean =>
  typeof d.code === 'string' &&
  codeShape.test(d.code) &&
  d.code.length <= limits.code &&
  typeof d.detail === 'string' &&
  d.detail !== '' &&
  d.detail.length <= limits.detail &&
  (d.attr === null || (typeof d.attr === 'string' && d.attr.length <= limits.attr));

/** The time the entry was vouched for (what a newer write is compared by). */
export const vouchedAtOf = (entry: SharedEntry): number => (entry.kind === 'record' ? entry.record.vouchedAt : entry.vouchedAt);

/** Until when Redis should keep the entry: a record to the end of its grace, a refusal to its expiry. */
export const keepUntilOf = (entry: SharedEntry): number => (entry.kind === 'record' ? entry.record.graceUntil : entry.expiresAt);

/** The entry as stored, or null for one that may not be stored (out of bounds, inconsistent). */
export function encodeSharedEntry(entry: SharedEntry): string | null {
  let value: Record<string, unknown>;
  if (entry.kind === 'record') {
    if (!isValidRecord(entry.record)) return null;
    value = keyRecordToJson(entry.record);
  } else {
    if (!hex64.test(entry.digest) || !Number.isSafeInteger(entry.vouchedAt) || !Number.isSafeInteger(entry.expiresAt) || entry.vouchedAt > entry.expiresAt) return null;
    if (entry.projectId !== null && !isProjectId(entry.projectId)) return null;
    value = { type: entry.kind, digest: entry.digest, project_id: entry.projectId, vouched_at: iso(entry.vouchedAt), expires_at: iso(entry.expiresAt) };
    if (entry.kind === 'denied') {
      if (!isValidDenial(entry.denial)) return null;
      Object.assign(value, { code: entry.denial.code, detail: entry.denial.detail, attr: entry.denial.attr });
    }
  }
  const text = JSON.stringify(value);
  return Buffer.byteLength(text) <= sharedEntryMaxBytes ? text : null;
}

/** A record found under `slot`, held to `policy`. */
function readRecord(value: Record<string, unknown>, slot: SharedSlot, policy: SharedPolicy): SharedRead {
  const parsed = keyRecordFromJson(value);
  if (parsed === null || parsed.digest !== slot.digest) return { kind: 'invalid' };
  const fits = slot.projectId === null ? parsed.type !== 'grant' : parsed.type === 'grant' && parsed.projectId === slot.projectId;
  if (!fits || parsed.vouchedAt > policy.now + sharedClockSkewMs) return { kind: 'invalid' };
  // Within the allowed skew: read as vouched now (which shortens nothing and extends nothing past the record's own times).
  const record = parsed.vouchedAt > policy.now ? { ...parsed, vouchedAt: Math.min(policy.now, parsed.expiresAt) } : parsed;
  const admitted = admit(record, policy);
  return admitted === null ? { kind: 'expired' } : { kind: 'record', record: admitted };
}

/** A refusal found under `slot`, held to `policy`. */
function readRefusal(value: Record<string, unknown>, slot: SharedSlot, policy: SharedPolicy): SharedRead {
  const { type, digest, project_id: projectId } = value;
  const vouchedAt = timeOf(value.vouched_at);
  const expiresAt = timeOf(value.expires_at);
  const fields = ['type', 'digest', 'project_id', 'vouched_at', 'expires_at', ...(type === 'denied' ? ['code', 'detail', 'attr'] : [])];
  if (Object.keys(value).some((k) => !fields.includes(k)) || Object.keys(value).length !== fields.length) return { kind: 'invalid' };
  if (digest !== slot.digest || projectId !== slot.projectId || vouchedAt === null || expiresAt === null || vouchedAt > expiresAt) return { kind: 'invalid' };
  if (vouchedAt > policy.now + sharedClockSkewMs) return { kind: 'invalid' };
  const until = Math.min(expiresAt, Math.min(vouchedAt, policy.now) + policy.negativeTtlMs);
  if (policy.now >= until) return { kind: 'expired' };
  const base = { digest: slot.digest, vouchedAt: Math.min(vouchedAt, policy.now), expiresAt: until };
  if (type === 'unknown') return { kind: 'unknown', ...base, projectId: slot.projectId };
  const denial = { code: value.code, detail: value.detail, attr: value.attr } as SharedDenial;
  if (slot.projectId === null || !isValidDenial(denial)) return { kind: 'invalid' };
  return { kind: 'denied', ...base, projectId: slot.projectId, denial };
}

/** An entry read from Redis under `slot`: validated strictly and held to `policy` (see the file's comment). */
export function decodeSharedEntry(raw: Buffer, slot: SharedSlot, policy: SharedPolicy): SharedRead {
  if (raw.length > sharedEntryMaxBytes) return { kind: 'invalid' };
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    return { kind: 'invalid' };
  }
  if (!isObject(value)) return { kind: 'invalid' };
  if (value.type === 'unknown' || value.type === 'denied') return readRefusal(value, slot, policy);
  return readRecord(value, slot, policy);
}
