/**
 * How a named-endpoint run result is stored in Redis, and the checks it must pass before it is served. Pure.
 * An entry is one line of JSON (`{"v":1,"gen":…,"status":…,"type":…,"fetched":…,"expires":…}`), a newline, and
 * upstream's body. Decoding refuses (null) anything that is not exactly that: over `maxSharedRunBytes` of body, a
 * header over 1 KiB or of another shape, a status outside 2xx, a content type that is not a plain media type, times out of order or expired, a body that is not JSON.
 * Only the content type is replayed from the entry; Content-Length is that of the body. The caller serves an
 * entry only when its generation is the endpoint's current one.
 */
import type { CachedResponse } from '../store/read-through.js';

/** Largest run result shared through Redis (larger ones stay in the pod's own cache). */
export const maxSharedRunBytes = 1024 * 1024;
/** Longest a shared run is kept (upstream's longest cache_target_age is a day). */
export const maxSharedRunMs = 24 * 3_600_000;
const maxHeaderBytes = 1024;
const mediaType = /^[a-zA-Z0-9!#$&^_.+-]{1,64}\/[a-zA-Z0-9!#$&^_.+-]{1,64}(\s*;\s*[a-zA-Z0-9_.-]{1,32}=("[^"\\\r\n]{0,64}"|[a-zA-Z0-9_.+-]{1,64}))*$/;

/** A run result as shared. */
export interface SharedRun {
  readonly response: CachedResponse;
  /** When upstream answered (ms since the epoch). */
  readonly fetchedAt: number;
  /** Until when it is fresh (ms since the epoch). */
  readonly expiresAt: number;
}

/** The stored bytes of `run` under generation `gen`; null when the body is too large to share. */
export function encodeSharedRun(run: SharedRun, gen: string): Buffer | null {
  if (run.response.body.length > maxSharedRunBytes) return null;
  const type = run.response.headers['content-type'] ?? null;
  const header = JSON.stringify({ v: 1, gen, status: run.response.status, type, fetched: run.fetchedAt, expires: run.expiresAt });
  return Buffer.concat([Buffer.from(`${header}\n`, 'utf8'), run.response.body]);
}

const finite = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

/** The run stored in `raw` and the generation it was stored under, if it passes every check at `now`; else null. */
export function decodeSharedRun(raw: Buffer, now: number): { readonly gen: string; readonly run: SharedRun } | null {
  if (raw.length > maxSharedRunBytes + maxHeaderBytes + 1) return null;
  const newline = raw.subarray(0, maxHeaderBytes + 1).indexOf(10);
  if (newline < 0) return null;
  let header: unknown;
  try {
    header = JSON.parse(raw.subarray(0, newline).toString('utf8'));
  } catch {
    return null;
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) return null;
  const h = header as Record<string, unknown>;
  if (h.v !== 1 || typeof h.gen !== 'string' || h.gen.length > 64) return null;
  if (typeof h.status !== 'number' || !Number.isInteger(h.status) || h.status < 200 || h.status > 299) return null;
  if (h.type !== null && (typeof h.type !== 'string' || !mediaType.test(h.type))) return null;
  if (!finite(h.fetched) || !finite(h.expires) || h.expires <= now || h.expires < h.fetched || h.expires - h.fetched > maxSharedRunMs) return null;
  const body = raw.subarray(newline + 1);
  if (body.length > maxSharedRunBytes) return null;
  try {
    JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  const copy = Buffer.from(body);
  const headers: Record<string, string> = { 'content-length': String(copy.length) };
  if (typeof h.type === 'string') headers['content-type'] = h.type;
  return { gen: h.gen, run: { response: { status: h.status, headers, body: copy }, fetchedAt: Math.min(h.fetched, now), expiresAt: h.expires } };
}
