/**
 * Request authentication: the presented credential → a principal, or upstream's 401. A keep-alive connection
 * that presents the same Authorization header again reuses its last answer for a few seconds instead of
 * hashing the key again (the memo lives on the connection and dies with it; it is never shared between
 * connections, so it reveals nothing a caller did not send itself). Unknown keys are never remembered. A key of a
 * shape upstream never issues (key-shape.ts) is refused here with upstream's 401, never asked upstream. Project
 * secret keys (`phs_…`) and OAuth access tokens (`pha_…`) in the Authorization header are vouched for by upstream
 * per project (grants); other keys are introspected as personal keys.
 */
import { ApiError, invalidAccessToken, invalidPersonalKey, notAuthenticated, unavailable, VerifierBusyError, type KeySource } from '../errors.js';
import type { Query } from '../http/query.js';
import type { Metrics } from '../metrics/metrics.js';
import { extractCredential, keyKind } from './credential.js';
import { addressGroup } from './caller-address.js';
import type { Introspection, Introspector } from './introspect.js';
import { plausibleKey } from './key-shape.js';
import { digestKey, type Principal, type PrincipalResolver } from './principal.js';
import type { Waiter } from './verify-queue.js';

/** The authenticated caller of a request. */
export interface Caller {
  readonly principal: Principal;
  readonly kind: 'secret' | 'oauth' | 'personal';
  readonly source: KeySource;
  /** SHA-256 hex of the presented key: what per-caller caches are keyed by (never the key). */
  readonly digest: string;
  /**
   * A key upstream must vouch for per project once the project is known: a project secret key or an OAuth access
   * token nobody here knows, or any introspected personal key (membership is not in the key record). Carries the
   * key for this request only; such a caller is never remembered.
   */
  readonly pendingGrant?: { readonly key: string; readonly digest: string };
}

/** The principal of a caller whose key is still to be vouched for: it may do nothing yet. */
export const unverifiedPrincipal: Principal = Object.freeze({
  label: 'unverified key',
  keyPrefix: '',
  scopes: new Set<string>(),
  projects: new Set<number>(),
  kind: 'introspected' as const,
});

/** Per-connection memo of the last successful authentication. */
export interface AuthMemo {
  authorization: string | null;
  caller: Caller | null;
  at: number;
  /** The last authorization decided for the remembered caller on this connection (http/routes/access.ts). */
  decision: AuthDecision | null;
}

/**
 * An authorization decided for a remembered caller: valid for the same caller object, route, mode, method,
 * project in the path and parsed query object (the listener reuses it for a repeated URL).
 */
export interface AuthDecision {
  readonly caller: Caller;
  readonly projectId: number | null;
  readonly route: string;
  readonly mode: string;
  readonly method: string;
  readonly pathId: string | null;
  readonly query: Query;
}

/** A fresh memo for a new connection. */
export const newAuthMemo = (): AuthMemo => ({ authorization: null, caller: null, at: 0, decision: null });

/** How long a connection may reuse its last authentication. */
export const authMemoMs = 5000;

/** Dependencies of authenticate. */
export interface AuthenticateDeps {
  readonly resolver: PrincipalResolver;
  /** Asks upstream about personal keys nobody here vouches for; null offline (then no key unknown here is taken). */
  readonly introspector: Introspector | null;
  readonly metrics: Metrics;
  readonly now: () => number;
}

/** Count a refusal and throw it. */
export function deny(metrics: Metrics, reason: string, error: ApiError): never {
  metrics.authDenials.inc({ reason });
  error.denial = reason;
  throw error;
}

/** Remember a verified caller on its connection (header credentials only). */
function remember(memo: AuthMemo, authorization: string | undefined, caller: Caller, now: number): Caller {
  if (caller.source === 'header' && authorization !== undefined) {
    memo.authorization = authorization;
    memo.caller = caller;
    memo.at = now;
  }
  return caller;
}

/** What a verification needs of the request's connection: whether it closed, and who is at the other end. */
export interface CallerSocket {
  readonly destroyed: boolean;
  readonly remoteAddress?: string | undefined;
}

/**
 * The waiter of a verification asked for on the connection of `memo`, from its peer's address (see
 * verify-queue.ts). The address is worked out only when the queue asks: most requests are answered from a cache.
 */
export function waiterOf(memo: AuthMemo, socket?: CallerSocket): Waiter {
  let address: string | undefined;
  return {
    flow: memo,
    get address() {
      return (address ??= addressGroup(socket?.remoteAddress));
    },
    live: () => socket === undefined || !socket.destroyed,
  };
}

/**
 * Authenticate a request's credential or throw upstream's 401 (or a 503 when upstream cannot vouch for an
 * unknown key right now, a 429 with Retry-After when too many keys are being verified at once). Synchronous for
 * keys known here; a promise only while upstream is asked. `socket`: the request's connection, whose closing
 * drops a verification still waiting for its turn.
 */
export function authenticate(
  authorization: string | undefined,
  query: Query,
  memo: AuthMemo,
  deps: AuthenticateDeps,
  bodyKey?: string,
  socket?: CallerSocket,
): Caller | Promise<Caller> {
  const now = deps.now();
  if (memo.caller !== null) {
    if (now - memo.at < authMemoMs) {
      if (authorization !== undefined && memo.authorization === authorization) return memo.caller;
    } else {
      memo.authorization = null; // an expired memo keeps no copy of the header
      memo.caller = null;
      memo.decision = null;
    }
  }
  const credential = extractCredential(authorization, query, bodyKey);
  if (credential === null) deny(deps.metrics, 'no_credential', notAuthenticated());
  const digest = digestKey(credential.key);
  // Upstream's secret-key authenticator reads only the Authorization header: elsewhere a phs_ key is a personal key.
  const kind = credential.source === 'header' ? keyKind(credential.key) : 'personal';
  const known = deps.resolver.resolveDigest(digest);
  if (known !== null) return remember(memo, authorization, { principal: known, kind, source: credential.source, digest }, now);
  // Upstream's OAuth authenticator looks a `pha_` token up as given and answers an unknown one "Invalid access token.".
  const unknown = (): ApiError => (kind === 'oauth' ? invalidAccessToken() : invalidPersonalKey(credential.source));
  if (!plausibleKey(credential.key, kind)) deny(deps.metrics, 'malformed_key', unknown());
  // Neither a project secret key nor an OAuth access token can be described by upstream with the caller's own
  // credential (`@current` is a personal-key route): upstream vouches for it per project (a grant, secret-keys.ts).
  if (kind !== 'personal' && deps.introspector !== null) {
    return { principal: unverifiedPrincipal, kind, source: credential.source, digest, pendingGrant: { key: credential.key, digest } };
  }
  if (deps.introspector === null || kind !== 'personal') deny(deps.metrics, 'unknown_key', unknown());

  const settle = (result: Introspection): Caller => {
    if (result.kind === 'invalid') deny(deps.metrics, 'unknown_key', invalidPersonalKey(credential.source));
    if (result.kind === 'refused') {
      return { principal: unverifiedPrincipal, kind, source: credential.source, digest, pendingGrant: { key: credential.key, digest } };
    }
    if (result.kind === 'busy') deny(deps.metrics, 'verifier_busy', new VerifierBusyError(result.retryAfterSeconds));
    if (result.kind === 'unavailable') {
      deny(deps.metrics, 'unverifiable', unavailable('This API key cannot be verified right now: upstream is unreachable. Try again shortly.'));
    }
    // The key record says nothing of project membership: upstream vouches for each project (a grant). Such a
    // caller is not remembered on the connection, since its answer depends on the project.
    return { principal: result.principal, kind, source: credential.source, digest, pendingGrant: { key: credential.key, digest } };
  };
  const looked = deps.introspector.lookup(credential.key, digest, waiterOf(memo, socket));
  return looked instanceof Promise ? looked.then(settle) : settle(looked);
}
