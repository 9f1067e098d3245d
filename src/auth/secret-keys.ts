/**
 * Grants: keys the sidecar cannot otherwise describe — project secret keys (`phs_…`) it does not know, and
 * personal keys upstream refuses to introspect (older upstreams answer 403 for scoped keys) — are vouched for
 * by upstream's answer for the project asked about: a conditional local_evaluation request with that key (a 304
 * when nothing changed, so it costs upstream next to nothing). 200/304 → a grant of `feature_flag:read` on that
 * project (so is a 402: upstream checks the project's quota only after the key passed); 401 → unknown key; 403 → a
 * denial (another project's key, or no such scope). Outcomes are remembered per (key digest, project) with the
 * same TTLs and outage grace as introspected keys; the key is never stored. A 404 or 429 is upstream's answer to
 * this very request: passed back as is, remembered by nobody. Each check waits its turn in the verification queue
 * (verify-queue.ts); a check that cannot be made in time is a 429 with Retry-After (VerifierBusyError), unless a
 * grant remembered within its grace answers.
 */
import { LRUCache } from 'lru-cache';
import { ApiError, invalidPersonalKey, permissionDenied, projectNotFound, unavailable, VerifierBusyError, type KeySource } from '../errors.js';
import type { Store } from '../store/store.js';
import type { IntrospectorDeps } from './introspect.js';
import { recordTimes, type KeyRecord } from './key-records.js';
import type { Principal } from './principal.js';
import { sharedVerification, type Busy, type Pending, type Waiter } from './verify-queue.js';

interface Entry {
  readonly principal: Principal | null;
  /** Upstream's refusal: 401 (unknown key) or its 403 (replayed as upstream worded it). */
  readonly refusal: 401 | ApiError | null;
  readonly expiresAt: number;
}

/** Upstream's 403 body as an ApiError, or DRF's default 403 when the body is not one of upstream's. */
function refusalFrom(body: Buffer): ApiError {
  try {
    const value = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    if (value.type === 'authentication_error' && typeof value.code === 'string' && typeof value.detail === 'string') {
      return new ApiError(403, 'authentication_error', value.code, value.detail, typeof value.attr === 'string' ? value.attr : null);
    }
  } catch {
    // not JSON: fall through
  }
  return permissionDenied();
}

/** Upstream's own 404/429 body as an ApiError (its generic body when it sent something else). */
function passedThrough(status: 404 | 429, body: Buffer): ApiError {
  try {
    const value = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    const types: readonly string[] = ['invalid_request', 'throttled_error'];
    if (typeof value.type === 'string' && types.includes(value.type) && typeof value.code === 'string' && typeof value.detail === 'string') {
      return new ApiError(status, value.type as 'invalid_request' | 'throttled_error', value.code, value.detail, typeof value.attr === 'string' ? value.attr : null);
    }
  } catch {
    // not JSON: fall through
  }
  return status === 404 ? projectNotFound() : new ApiError(429, 'throttled_error', 'throttled', 'Request was throttled.');
}

/** Dependencies and settings of createSecretKeyVerifier: the introspector's, plus the store for ETags. */
export interface SecretKeyVerifierDeps extends IntrospectorDeps {
  readonly store: Store;
}

/** Outcome of a verification: the principal, or upstream's refusal (an ApiError to throw). */
export type SecretKeyResult = Principal | ApiError;

/** Create the verifier. `verify` answers from memory when it can (a value), else asks upstream (a promise). */
export function createSecretKeyVerifier(deps: SecretKeyVerifierDeps) {
  const { client, store, metrics, logger, now } = deps;
  // Grants and refusals in separate caches, so that junk keys cannot evict the grants of good ones.
  const granted = new LRUCache<string, Entry>({ max: deps.maxEntries });
  const refused = new LRUCache<string, Entry>({ max: deps.maxEntries });
  const inFlight = new Map<string, Pending<Entry | ApiError | null | Busy>>();

  const principalFor = (digest: string, projectId: number): Principal =>
    Object.freeze({
      label: 'key granted by upstream',
      keyPrefix: digest.slice(0, 12),
      scopes: new Set(['feature_flag:read']),
      projects: new Set([projectId]),
      kind: 'introspected' as const,
    });

  async function ask(key: string, digest: string, projectId: number): Promise<Entry | ApiError | null> {
    const etag = store.get(projectId)?.cohorts?.upstreamEtag;
    const result = await client.request({
      operation: 'verify_secret_key',
      method: 'GET',
      path: `/api/projects/${projectId}/feature_flags/local_evaluation/?send_cohorts`,
      headers: { authorization: `Bearer ${key}`, accept: 'application/json', ...(etag ? { 'if-none-match': etag } : {}) },
    });
    const at = now();
    const status = result.kind === 'response' ? result.status : null;
    if (result.kind === 'response' && (status === 404 || status === 429)) {
      metrics.introspections.inc({ outcome: 'failed' });
      return passedThrough(result.status === 404 ? 404 : 429, result.body);
    }
    if (status === 200 || status === 304 || status === 402) {
      metrics.introspections.inc({ outcome: 'valid' });
      const entry: Entry = { principal: principalFor(digest, projectId), refusal: null, expiresAt: at + deps.ttlMs };
      granted.set(`${digest}:${projectId}`, entry);
      refused.delete(`${digest}:${projectId}`);
      deps.onChange?.();
      return entry;
    }
    if (result.kind === 'response' && (status === 401 || status === 403)) {
      metrics.introspections.inc({ outcome: 'rejected' });
      const refusal = status === 401 ? 401 : refusalFrom(result.body);
      const entry: Entry = { principal: null, refusal, expiresAt: at + deps.negativeTtlMs };
      refused.set(`${digest}:${projectId}`, entry);
      if (granted.delete(`${digest}:${projectId}`)) deps.onChange?.();
      return entry;
    }
    metrics.introspections.inc({ outcome: 'failed' });
    logger.warn(
      { keyPrefix: digest.slice(0, 12), project: projectId, cause: result.kind === 'response' ? `upstream answered ${result.status}` : result.cause },
      'secret key verification failed',
    );
    return null;
  }

  function settle(entry: Entry | ApiError | null | Busy, cacheKey: string, source: KeySource): SecretKeyResult {
    if (entry instanceof ApiError) return entry;
    if (entry === null || 'kind' in entry) {
      const old = granted.get(cacheKey);
      if (old?.principal && now() - old.expiresAt <= deps.graceMs) {
        metrics.principalCache.inc({ result: 'stale' });
        return old.principal;
      }
      if (entry !== null) return new VerifierBusyError(entry.retryAfterSeconds);
      return unavailable('This API key cannot be verified right now: upstream is unreachable. Try again shortly.');
    }
    if (entry.principal) return entry.principal;
    return entry.refusal === 401 || entry.refusal === null ? invalidPersonalKey(source) : entry.refusal;
  }

  return {
    /** Whether `key` (SHA-256 hex `digest`) may read `projectId`, per upstream; `waiter` is the caller. */
    verify(key: string, digest: string, projectId: number, source: KeySource, waiter: Waiter): SecretKeyResult | Promise<SecretKeyResult> {
      const cacheKey = `${digest}:${projectId}`;
      const entry = refused.get(cacheKey) ?? granted.get(cacheKey);
      if (entry && now() < entry.expiresAt) {
        metrics.principalCache.inc({ result: 'hit' });
        return settle(entry, cacheKey, source);
      }
      metrics.principalCache.inc({ result: 'miss' });
      const unknownKey = (result: Entry | ApiError | null): boolean => result !== null && !(result instanceof ApiError) && result.refusal === 401;
      return sharedVerification(inFlight, deps.queue, cacheKey, waiter, () => ask(key, digest, projectId), unknownKey).then((result) =>
        settle(result, cacheKey, source),
      );
    },

    /** The grants as key records, most recently used first. */
    records: (): KeyRecord[] =>
      [...granted.entries()].map(([cacheKey, { expiresAt }]) => {
        const [digest = '', project = ''] = cacheKey.split(':');
        return { type: 'grant', digest, projectId: Number(project), ...recordTimes(expiresAt, deps.ttlMs, deps.graceMs) };
      }),

    /** Remember grants from key records (admitted ones: see key-records.ts), the first as most recently used. */
    restore(records: readonly KeyRecord[]): void {
      for (const r of [...records].reverse()) {
        if (r.type === 'grant') granted.set(`${r.digest}:${r.projectId}`, { principal: principalFor(r.digest, r.projectId), refusal: null, expiresAt: r.expiresAt });
      }
    },
  };
}

/** The verifier handle. */
export type SecretKeyVerifier = ReturnType<typeof createSecretKeyVerifier>;
