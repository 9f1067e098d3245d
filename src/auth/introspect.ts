/**
 * Personal API keys the sidecar does not know are introspected upstream with the caller's own key
 * (`GET /api/personal_api_keys/@current/`, PostHog's `posthog/api/personal_api_key.py`) for their scopes and project
 * scoping, remembered in lru-cache by the key's SHA-256 (never the key): an answer for the positive TTL, a 401 for the
 * negative TTL in a cache of its own (junk keys cannot evict good ones); concurrent misses for one key share one
 * upstream call, which waits its turn in the verification queue (verify-queue.ts: bounded, fair per connection;
 * beyond its bounds `busy`, a 429 — never reported as an outage). Membership
 * of a project is not in the key record: every introspected key is vouched for per project by a grant
 * (secret-keys.ts). While upstream is unreachable, a remembered answer keeps working up to the grace period past
 * its TTL; a key with nothing remembered is then `unavailable` (a 503), never allowed. A key upstream refuses to
 * describe (403), or one scoped to organizations, is `refused`: it relies on grants alone. When upstream is another
 * flag-sidecar (a relay), its answer says when it expires (keyExpiresInHeader), and is kept no longer — nor, in
 * an outage, past the relay's own grace — so a chain of sidecars never trusts a key longer than the relay does.
 * Upstream's 429 (a relay's verifier busy, or throttling) is passed on as busy, with its Retry-After.
 *
 * In fleet mode (`shared`), a miss looks in Redis first (fleet/shared-keys.ts: bounded by the Redis timeout,
 * outside the verification queue) and only on a miss there asks upstream; every answer from upstream is shared.
 * An answer read from Redis keeps its own expiry (never extended); one past its TTL but within its grace is kept
 * only as the in-memory cache keeps its own: for when upstream cannot be asked.
 */
import { performance } from 'node:perf_hooks';
import { LRUCache } from 'lru-cache';
import { entryBound } from '../store/entry-bound.js';
import type { SharedEntry } from '../fleet/shared-key-entries.js';
import type { SharedKeys } from '../fleet/shared-keys.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { UpstreamClient } from '../upstream/client.js';
import { parseRetryAfter } from '../upstream/schedule.js';
import { principalFacts, principalFromFacts, recordTimes, type KeyRecord } from './key-records.js';
import type { Principal } from './principal.js';
import { sharedVerification, type Busy, type Pending, type VerifyQueue, type Waiter } from './verify-queue.js';

/** What introspection concluded about a key. */
export type Introspection =
  | { readonly kind: 'principal'; readonly principal: Principal }
  | { readonly kind: 'invalid' }
  /** Upstream will not describe this key usefully: fall back to per-project grants alone. */
  | { readonly kind: 'refused' }
  | { readonly kind: 'unavailable'; readonly reason: string }
  /** Too many keys are being verified: the caller may retry after a while. */
  | Busy;

type Remembered = Introspection & { kind: 'principal' | 'invalid' | 'refused' };

interface Entry {
  readonly result: Remembered;
  readonly expiresAt: number;
}

/**
 * Response header of a flag-sidecar answering `/api/personal_api_keys/@current/` (routes/key-introspection.ts):
 * whole seconds until its answer expires, negative when it is past its TTL and kept only for the outage grace.
 * PostHog never sends it.
 */
export const keyExpiresInHeader = 'x-flag-sidecar-key-expires-in';

/**
 * How long to keep an introspection answer: `ttlMs`, or less when the answer came from a relay that keeps it for
 * less (`header`: keyExpiresInHeader's value, whole seconds; negative: the answer expired that long ago, so its
 * grace ends when the relay's does). An absent or unreadable header leaves `ttlMs`.
 */
export function answerTtlMs(header: string | string[] | undefined, ttlMs: number): number {
  const text = (Array.isArray(header) ? header[0] : header)?.trim();
  if (text === undefined || !/^-?\d{1,12}$/.test(text)) return ttlMs;
  return Math.min(ttlMs, Number(text) * 1000);
}

/** Dependencies and settings of createIntrospector (and of the grant verifier, which adds the store). */
export interface IntrospectorDeps {
  readonly client: UpstreamClient;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly now: () => number;
  readonly ttlMs: number;
  readonly negativeTtlMs: number;
  readonly graceMs: number;
  readonly maxEntries: number;
  /** The gate every verification upstream passes (shared by introspections and grants). */
  readonly queue: VerifyQueue;
  /** Called when a remembered positive answer is added or dropped (its key records changed). */
  readonly onChange?: () => void;
  /** Fleet mode: the answers shared in Redis (null or absent: none). */
  readonly shared?: SharedKeys | null;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isListOf = <T>(value: unknown, item: (v: unknown) => v is T): value is T[] => Array.isArray(value) && value.every(item);
const isString = (v: unknown): v is string => typeof v === 'string';
const isId = (v: unknown): v is number => Number.isInteger(v);

/**
 * Upstream's key record → what it says about the key, strictly: scopes null or a list of strings (null or empty
 * is a legacy key, rendered by upstream as `*`), scoped_teams null or a list of ids. Anything else is unreadable
 * (null) — never read as "no restriction". A key scoped to organizations is `refused` (grants decide).
 */
export function principalFromRecord(record: unknown, digest: string): Principal | 'refused' | null {
  if (!isObject(record)) return null;
  const { scopes, scoped_teams: teams, scoped_organizations: orgs } = record;
  if (scopes !== null && !isListOf(scopes, isString)) return null;
  if (teams !== undefined && teams !== null && !isListOf(teams, isId)) return null;
  if (orgs !== undefined && orgs !== null && !isListOf(orgs, isString)) return null;
  if (Array.isArray(orgs) && orgs.length > 0) return 'refused';
  const label = typeof record.label === 'string' && record.label !== '' ? record.label : 'personal API key';
  return Object.freeze({
    label,
    keyPrefix: digest.slice(0, 12),
    scopes: new Set(scopes !== null && scopes.length > 0 ? scopes : ['*']),
    projects: Array.isArray(teams) && teams.length > 0 ? new Set(teams) : null,
    kind: 'introspected' as const,
    legacy: scopes === null || scopes.length === 0,
  });
}

/** Create the introspector. `lookup` answers from memory when it can (a value), else asks upstream (a promise). */
export function createIntrospector(deps: IntrospectorDeps) {
  const { client, metrics, logger, now } = deps;
  // Bounded by entries; expiry is ours (answers outlive their TTL for the grace period), so no lru-cache TTL.
  const known = new LRUCache<string, Entry>(entryBound(deps.maxEntries));
  const rejected = new LRUCache<string, Entry>(entryBound(deps.maxEntries));
  const inFlight = new Map<string, Pending<Introspection>>();

  /** The key record of a remembered positive answer. */
  function recordOf(digest: string, { result, expiresAt }: Entry): KeyRecord {
    const times = { digest, ...recordTimes(expiresAt, deps.ttlMs, deps.graceMs) };
    return result.kind === 'principal' ? { type: 'principal', ...times, principal: principalFacts(result.principal) } : { type: 'refused', ...times };
  }

  function remember(digest: string, entry: Entry): void {
    (entry.result.kind === 'invalid' ? rejected : known).set(digest, entry);
    if (entry.result.kind !== 'invalid') rejected.delete(digest);
    // A key upstream no longer knows loses what it was granted before: no grace revives it in an outage.
    if (entry.result.kind !== 'invalid' || known.delete(digest)) deps.onChange?.();
  }

  function keep(digest: string, result: Remembered, ttlMs: number): Remembered {
    const at = now();
    const entry: Entry = { result, expiresAt: at + ttlMs };
    remember(digest, entry);
    if (result.kind === 'invalid') deps.shared?.write({ kind: 'unknown', digest, projectId: null, vouchedAt: at, expiresAt: entry.expiresAt });
    else deps.shared?.write({ kind: 'record', record: recordOf(digest, entry) });
    return result;
  }

  /** Take what the fleet knows (from Redis) into memory, unless memory knows better; true if it answers now. */
  function adopt(digest: string, shared: SharedEntry): boolean {
    if (shared.kind === 'unknown') {
      remember(digest, { result: { kind: 'invalid' }, expiresAt: shared.expiresAt });
      return true;
    }
    if (shared.kind !== 'record' || shared.record.type === 'grant') return false;
    const { record } = shared;
    const result: Remembered = record.type === 'principal' ? { kind: 'principal', principal: principalFromFacts(digest, record.principal) } : { kind: 'refused' };
    const mine = known.get(digest);
    if (mine === undefined || mine.expiresAt < record.expiresAt) remember(digest, { result, expiresAt: record.expiresAt });
    return now() < record.expiresAt;
  }

  /** A fresh remembered answer, or undefined. */
  function fresh(digest: string): Entry | undefined {
    const entry = rejected.get(digest) ?? known.get(digest);
    return entry && now() < entry.expiresAt ? entry : undefined;
  }

  async function ask(key: string, digest: string): Promise<Introspection> {
    const started = performance.now();
    const result = await client.request({
      operation: 'introspect_key',
      method: 'GET',
      path: '/api/personal_api_keys/@current/',
      headers: { authorization: `Bearer ${key}`, accept: 'application/json' },
    });
    const observe = (outcome: string): void => {
      metrics.introspections.inc({ outcome });
      metrics.introspectionDuration.observe((performance.now() - started) / 1000);
    };
    if (result.kind === 'response' && result.status === 200) {
      const ttlMs = answerTtlMs(result.headers[keyExpiresInHeader], deps.ttlMs);
      let record: unknown = null;
      try {
        record = JSON.parse(result.body.toString('utf8'));
      } catch {
        // unreadable: handled below
      }
      const principal = principalFromRecord(record, digest);
      if (principal === 'refused') {
        observe('valid');
        return keep(digest, { kind: 'refused' }, ttlMs);
      }
      if (principal) {
        observe('valid');
        return keep(digest, { kind: 'principal', principal }, ttlMs);
      }
      observe('invalid_body');
      return fallback(digest, 'upstream sent an unreadable key record');
    }
    if (result.kind === 'response' && result.status === 401) {
      observe('rejected');
      return keep(digest, { kind: 'invalid' }, deps.negativeTtlMs);
    }
    if (result.kind === 'response' && result.status === 403) {
      observe('refused');
      return keep(digest, { kind: 'refused' }, deps.ttlMs);
    }
    if (result.kind === 'response' && result.status === 429) {
      // Upstream's throttling, or a relay whose own verifier is busy: the caller may retry, as upstream says.
      observe('failed');
      const retryAfterMs = parseRetryAfter(typeof result.headers['retry-after'] === 'string' ? result.headers['retry-after'] : undefined, now());
      const busy: Busy = { kind: 'busy', retryAfterSeconds: Math.min(60, Math.max(1, Math.ceil((retryAfterMs ?? 1000) / 1000))) };
      return busy;
    }
    const reason = result.kind === 'response' ? `upstream answered ${result.status}` : `${result.cause} (${result.code})`;
    observe('failed');
    logger.warn({ keyPrefix: digest.slice(0, 12), cause: reason }, 'key introspection failed');
    return fallback(digest, reason);
  }

  /** A remembered answer past its TTL but within grace, or null. */
  function stale(digest: string): Introspection | null {
    const entry = known.get(digest);
    if (!entry || now() - entry.expiresAt > deps.graceMs) return null;
    metrics.principalCache.inc({ result: 'stale' });
    return entry.result;
  }

  /** Upstream could not answer: a remembered answer within grace, else unavailable. */
  function fallback(digest: string, reason: string): Introspection {
    return stale(digest) ?? { kind: 'unavailable', reason };
  }

  return {
    /** What is known about `key`, whose SHA-256 hex is `digest`, asked for by `waiter`. */
    lookup(key: string, digest: string, waiter: Waiter): Introspection | Promise<Introspection> {
      const entry = fresh(digest);
      if (entry) {
        metrics.principalCache.inc({ result: 'hit' });
        return entry.result;
      }
      metrics.principalCache.inc({ result: 'miss' });
      const verify = (): Promise<Introspection> => {
        const result = sharedVerification(inFlight, deps.queue, digest, waiter, () => ask(key, digest), (outcome) => outcome.kind === 'invalid');
        // Busy: a remembered answer within its grace still serves (a flood does not lock out a key known before).
        return result.then((outcome) => (outcome.kind === 'busy' ? (stale(digest) ?? outcome) : outcome));
      };
      const shared = deps.shared;
      if (!shared) return verify();
      return shared.readKey(digest).then((found) => {
        // Answered meanwhile (another caller's read or verification), or by the fleet: no need to ask upstream.
        const answered = fresh(digest) ?? (found !== null && adopt(digest, found) ? fresh(digest) : undefined);
        return answered ? answered.result : verify();
      });
    },

    /**
     * Milliseconds until the remembered answer describing `digest` (a principal) expires — negative once past its
     * TTL, while it is kept for the grace period — or null when none is remembered.
     */
    expiresIn(digest: string): number | null {
      const entry = known.peek(digest);
      return entry === undefined || entry.result.kind !== 'principal' ? null : entry.expiresAt - now();
    },

    /** The remembered positive answers as key records, most recently used first. */
    records: (): KeyRecord[] => [...known.entries()].map(([digest, entry]) => recordOf(digest, entry)),

    /** Remember answers from key records (admitted ones: see key-records.ts), the first as most recently used. */
    restore(records: readonly KeyRecord[]): void {
      for (const r of [...records].reverse()) {
        if (r.type === 'principal') known.set(r.digest, { result: { kind: 'principal', principal: principalFromFacts(r.digest, r.principal) }, expiresAt: r.expiresAt });
        if (r.type === 'refused') known.set(r.digest, { result: { kind: 'refused' }, expiresAt: r.expiresAt });
      }
    },
  };
}

/** The introspector handle. */
export type Introspector = ReturnType<typeof createIntrospector>;
