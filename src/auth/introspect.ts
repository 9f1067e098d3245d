/**
 * Personal API keys the sidecar does not know are introspected upstream with the caller's own key
 * (`GET /api/personal_api_keys/@current/`, reference/flags-api.md §2.4) and remembered in lru-cache by the key's
 * SHA-256 (never the key): a principal for the positive TTL, a 401 for the negative TTL; concurrent misses for
 * one key share one upstream call. While upstream is unreachable, a remembered principal keeps working up to the
 * grace period past its TTL; a key with nothing remembered is then `unavailable` (a 503), never allowed.
 * A key upstream refuses to describe (403), or one scoped to organizations (whose projects' organizations only
 * upstream knows), is `refused`: the caller then falls back to per-project grants.
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { UpstreamClient } from '../upstream/client.js';
import type { Principal } from './principal.js';

/** What introspection concluded about a key. */
export type Introspection =
  | { readonly kind: 'principal'; readonly principal: Principal }
  | { readonly kind: 'invalid' }
  /** Upstream will not describe this key (older upstreams answer 403 for scoped keys): fall back to grants. */
  | { readonly kind: 'refused' }
  | { readonly kind: 'unavailable'; readonly reason: string };

interface Entry {
  readonly result: Introspection & { kind: 'principal' | 'invalid' | 'refused' };
  readonly fetchedAt: number;
  readonly expiresAt: number;
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
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Upstream's key record → principal. Null/empty scopes are a legacy key, rendered by upstream as `*`. */
export function principalFromRecord(record: unknown, digest: string): Principal | null {
  if (!isObject(record)) return null;
  const scopes = Array.isArray(record.scopes) ? record.scopes.filter((s): s is string => typeof s === 'string') : [];
  const teams = Array.isArray(record.scoped_teams) ? record.scoped_teams.filter((t): t is number => Number.isInteger(t)) : [];
  const label = typeof record.label === 'string' && record.label !== '' ? record.label : 'personal API key';
  return Object.freeze({
    label,
    keyPrefix: digest.slice(0, 12),
    scopes: new Set(scopes.length > 0 ? scopes : ['*']),
    projects: teams.length > 0 ? new Set(teams) : null,
    kind: 'introspected' as const,
  });
}

/** Create the introspector. `lookup` answers from memory when it can (a value), else asks upstream (a promise). */
export function createIntrospector(deps: IntrospectorDeps) {
  const { client, metrics, logger, now } = deps;
  // Bounded by entries; expiry is ours (entries outlive their TTL for the grace period), so no lru-cache TTL.
  const cache = new LRUCache<string, Entry>({ max: deps.maxEntries });
  const inFlight = new Map<string, Promise<Introspection>>();

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
    const at = now();
    if (result.kind === 'response' && result.status === 200) {
      let record: unknown;
      try {
        record = JSON.parse(result.body.toString('utf8'));
      } catch {
        record = null;
      }
      // A key scoped to organizations needs each project's organization, which only upstream knows: grants.
      if (isObject(record) && Array.isArray(record.scoped_organizations) && record.scoped_organizations.length > 0) {
        observe('valid');
        const entry: Entry = { result: { kind: 'refused' }, fetchedAt: at, expiresAt: at + deps.ttlMs };
        cache.set(digest, entry);
        return entry.result;
      }
      const principal = principalFromRecord(record, digest);
      if (principal) {
        observe('valid');
        const entry: Entry = { result: { kind: 'principal', principal }, fetchedAt: at, expiresAt: at + deps.ttlMs };
        cache.set(digest, entry);
        return entry.result;
      }
      observe('invalid_body');
      return fallback(digest, 'upstream sent an unreadable key record');
    }
    if (result.kind === 'response' && result.status === 401) {
      observe('rejected');
      const entry: Entry = { result: { kind: 'invalid' }, fetchedAt: at, expiresAt: at + deps.negativeTtlMs };
      cache.set(digest, entry);
      return entry.result;
    }
    if (result.kind === 'response' && result.status === 403) {
      observe('refused');
      const entry: Entry = { result: { kind: 'refused' }, fetchedAt: at, expiresAt: at + deps.ttlMs };
      cache.set(digest, entry);
      return entry.result;
    }
    const reason = result.kind === 'response' ? `upstream answered ${result.status}` : `${result.cause} (${result.code})`;
    observe('failed');
    logger.warn({ keyPrefix: digest.slice(0, 12), cause: reason }, 'key introspection failed');
    return fallback(digest, reason);
  }

  /** Upstream could not answer: a remembered principal within grace, else unavailable. */
  function fallback(digest: string, reason: string): Introspection {
    const entry = cache.get(digest);
    if (entry && entry.result.kind === 'principal' && now() - entry.expiresAt <= deps.graceMs) {
      metrics.principalCache.inc({ result: 'stale' });
      return entry.result;
    }
    return { kind: 'unavailable', reason };
  }

  return {
    /** The principal (or refusal) for `key`, whose SHA-256 hex is `digest`. */
    lookup(key: string, digest: string): Introspection | Promise<Introspection> {
      const entry = cache.get(digest);
      if (entry && now() < entry.expiresAt) {
        metrics.principalCache.inc({ result: 'hit' });
        return entry.result;
      }
      metrics.principalCache.inc({ result: 'miss' });
      let running = inFlight.get(digest);
      if (!running) {
        running = ask(key, digest).finally(() => inFlight.delete(digest));
        inFlight.set(digest, running);
      }
      return running;
    },
  };
}

/** The introspector handle. */
export type Introspector = ReturnType<typeof createIntrospector>;
