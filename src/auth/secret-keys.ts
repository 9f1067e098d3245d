/**
 * Grants: keys the sidecar cannot otherwise describe — project secret keys (`phs_…`) and OAuth access tokens
 * (`pha_…`) it does not know, and personal keys upstream refuses to introspect (older upstreams answer 403 for
 * scoped keys) — are vouched for by upstream's answer for the project asked about: a conditional local_evaluation
 * request with that key (a 304 when nothing changed, so it costs upstream next to nothing). 200/304 → a grant of
 * `feature_flag:read` on that project (so is a 402: upstream checks the project's quota only after the key
 * passed); 401 → unknown key (an OAuth caller gets upstream's own 401 body: "Invalid access token.", "Access token
 * has expired."…); 403 → a denial (another project's key, or no such scope: an OAuth token's scopes and scoped
 * teams are checked by upstream's APIScopePermission as a personal key's). Outcomes are remembered per (key digest, project) with the
 * same TTLs and outage grace as introspected keys; the key is never stored. A 404 or 429 is upstream's answer to
 * this very request: passed back as is, remembered by nobody. Each check waits its turn in the verification queue
 * (verify-queue.ts); a check that cannot be made in time is a 429 with Retry-After (VerifierBusyError), unless a
 * grant remembered within its grace answers.
 *
 * In fleet mode (`shared`), a miss looks in Redis first (fleet/shared-keys.ts, outside the verification queue)
 * and only on a miss there asks upstream; every answer from upstream is shared. A 401 also replaces what the
 * fleet knows about the key itself, so a revoked key loses its shared principal at once. An answer read from
 * Redis keeps its own expiry; a grant past its TTL but within its grace serves only while upstream cannot answer.
 */
import { LRUCache } from 'lru-cache';
import { entryBound } from '../store/entry-bound.js';
import { ApiError, invalidAccessToken, invalidPersonalKey, permissionDenied, projectNotFound, unavailable, VerifierBusyError } from '../errors.js';
import type { SharedEntry } from '../fleet/shared-key-entries.js';
import type { Store } from '../store/store.js';
import type { IntrospectorDeps } from './introspect.js';
import { recordTimes, type KeyRecord } from './key-records.js';
import type { Principal } from './principal.js';
import type { KeyUse } from './scopes.js';
import { sharedVerification, type Busy, type Pending, type Waiter } from './verify-queue.js';

interface Entry {
  readonly principal: Principal | null;
  /** Upstream's refusal: 401 (unknown key) or its 403 (replayed as upstream worded it). */
  readonly refusal: 401 | ApiError | null;
  /** With a 401: upstream's own body when it was one of its authentication errors (what an OAuth caller gets). */
  readonly said401?: ApiError | null;
  readonly expiresAt: number;
}

/** Upstream's `authentication_error` body as an ApiError of `status`, or null when the body is not one of upstream's. */
function authErrorFrom(status: 401 | 403, body: Buffer): ApiError | null {
  try {
    const value = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    if (value.type === 'authentication_error' && typeof value.code === 'string' && typeof value.detail === 'string') {
      return new ApiError(status, 'authentication_error', value.code, value.detail, typeof value.attr === 'string' ? value.attr : null);
    }
  } catch {
    // not JSON: fall through
  }
  return null;
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
  const granted = new LRUCache<string, Entry>(entryBound(deps.maxEntries));
  const refused = new LRUCache<string, Entry>(entryBound(deps.maxEntries));
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
    const shared = deps.shared;
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
      shared?.write({ kind: 'record', record: { type: 'grant', digest, projectId, ...recordTimes(entry.expiresAt, deps.ttlMs, deps.graceMs) } });
      return entry;
    }
    if (result.kind === 'response' && (status === 401 || status === 403)) {
      metrics.introspections.inc({ outcome: 'rejected' });
      const refusal = status === 401 ? 401 : (authErrorFrom(403, result.body) ?? permissionDenied());
      const said401 = status === 401 ? authErrorFrom(401, result.body) : null;
      const entry: Entry = { principal: null, refusal, said401, expiresAt: at + deps.negativeTtlMs };
      refused.set(`${digest}:${projectId}`, entry);
      if (granted.delete(`${digest}:${projectId}`)) deps.onChange?.();
      if (shared) {
        const times = { digest, vouchedAt: at, expiresAt: entry.expiresAt };
        if (refusal === 401) {
          shared.write({ kind: 'unknown', ...times, projectId });
          shared.write({ kind: 'unknown', ...times, projectId: null });
        } else {
          shared.write({ kind: 'denied', ...times, projectId, denial: { code: refusal.code, detail: refusal.detail, attr: refusal.attr } });
        }
      }
      return entry;
    }
    metrics.introspections.inc({ outcome: 'failed' });
    logger.warn(
      { keyPrefix: digest.slice(0, 12), project: projectId, cause: result.kind === 'response' ? `upstream answered ${result.status}` : result.cause },
      'secret key verification failed',
    );
    return null;
  }

  /** A fresh remembered answer for (key, project), or undefined. */
  function fresh(cacheKey: string): Entry | undefined {
    const entry = refused.get(cacheKey) ?? granted.get(cacheKey);
    return entry && now() < entry.expiresAt ? entry : undefined;
  }

  /** Take what the fleet knows (from Redis) into memory, unless memory knows better; true if it answers now. */
  function adopt(cacheKey: string, projectId: number, shared: SharedEntry): boolean {
    if (shared.kind === 'unknown' || shared.kind === 'denied') {
      const refusal = shared.kind === 'unknown' ? 401 : new ApiError(403, 'authentication_error', shared.denial.code, shared.denial.detail, shared.denial.attr);
      refused.set(cacheKey, { principal: null, refusal, expiresAt: shared.expiresAt });
      if (granted.delete(cacheKey)) deps.onChange?.();
      return true;
    }
    const { record } = shared;
    if (record.type !== 'grant' || record.projectId !== projectId) return false;
    const mine = granted.get(cacheKey);
    if (mine === undefined || mine.expiresAt < record.expiresAt) {
      granted.set(cacheKey, { principal: principalFor(record.digest, projectId), refusal: null, expiresAt: record.expiresAt });
      refused.delete(cacheKey);
      deps.onChange?.();
    }
    return now() < record.expiresAt;
  }

  function settle(entry: Entry | ApiError | null | Busy, cacheKey: string, use: KeyUse): SecretKeyResult {
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
    if (entry.refusal !== 401 && entry.refusal !== null) return entry.refusal;
    // Upstream's 401 to the grant request names the Authorization header, where the sidecar sent the key: replayed
    // as is only to an OAuth caller (who can present its token nowhere else); a personal key from a body or query
    // gets the 401 naming where it was found, as upstream words it.
    return use.kind === 'oauth' ? (entry.said401 ?? invalidAccessToken()) : invalidPersonalKey(use.source);
  }

  return {
    /**
     * Whether `key` (SHA-256 hex `digest`, presented as `use` says) may read `projectId`, per upstream; `waiter` is
     * the caller.
     */
    verify(key: string, digest: string, projectId: number, use: KeyUse, waiter: Waiter): SecretKeyResult | Promise<SecretKeyResult> {
      const cacheKey = `${digest}:${projectId}`;
      const entry = fresh(cacheKey);
      if (entry) {
        metrics.principalCache.inc({ result: 'hit' });
        return settle(entry, cacheKey, use);
      }
      metrics.principalCache.inc({ result: 'miss' });
      const unknownKey = (result: Entry | ApiError | null): boolean => result !== null && !(result instanceof ApiError) && result.refusal === 401;
      const verify = (): Promise<SecretKeyResult> =>
        sharedVerification(inFlight, deps.queue, cacheKey, waiter, () => ask(key, digest, projectId), unknownKey).then((result) =>
          settle(result, cacheKey, use),
        );
      const shared = deps.shared;
      if (!shared) return verify();
      return shared.readGrant(digest, projectId).then((found) => {
        // Answered meanwhile (another caller's read or verification), or by the fleet: no need to ask upstream.
        const answered = fresh(cacheKey) ?? (found !== null && adopt(cacheKey, projectId, found) ? fresh(cacheKey) : undefined);
        return answered ? settle(answered, cacheKey, use) : verify();
      });
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
