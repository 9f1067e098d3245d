/**
 * Who may do what, for every API route: authenticate the caller, resolve the project, and check the route's
 * scope (auth/scopes.ts) — before anything is served or forwarded.
 *
 * Two modes, by where the answer comes from:
 * - `local` (snapshot-served routes): the sidecar vouches for the answer itself, so a key it cannot describe
 *   fully (an unknown `phs_` key or `pha_` OAuth token, an introspected personal key whose project membership
 *   upstream has not yet confirmed) is first verified upstream for the project (a grant, auth/secret-keys.ts).
 * - `upstream` (read-through and forwarded routes): upstream answers with the caller's own credential and
 *   makes every check itself; the sidecar refuses locally only what it knows upstream would refuse, and a
 *   cached answer is only ever served to the key it was fetched with. `@current` that cannot be resolved here
 *   (several projects, no token) is left to upstream (project null).
 */
import { authenticate, deny, unverifiedPrincipal, waiterOf, type AuthenticateDeps, type Caller } from '../../auth/authenticate.js';
import type { SecretKeyResult, SecretKeyVerifier } from '../../auth/secret-keys.js';
import { checkAccess, oauthRefusedRoutes, routeAccess, type ScopedRoute } from '../../auth/scopes.js';
import { ApiError, incorrectCredentials, invalidAccessToken, projectNotFound, VerifierBusyError } from '../../errors.js';
import type { Store } from '../../store/store.js';
import type { RequestContext } from '../router.js';

/** Dependencies of createAccess. */
export interface AccessDeps extends AuthenticateDeps {
  readonly store: Store;
  /** Validates keys upstream per project; null offline. */
  readonly secretKeys: SecretKeyVerifier | null;
}

/** An authorized request: its caller and project (null: `@current`, resolved by upstream). */
export interface Authorized {
  readonly caller: Caller;
  readonly projectId: number | null;
}

/**
 * The project a request is about: on a GET, `?token=`/`?api_key=` first (upstream reads the query's token only
 * on GET); else the path's id, or the only project the sidecar (or the caller's key) has.
 */
export function resolveProject(ctx: RequestContext, store: Store, caller: Caller, pathId: string | null): number | null {
  const token = ctx.method === 'GET' || ctx.method === 'HEAD' ? ctx.query.get('token') || ctx.query.get('api_key') : undefined;
  if (token) {
    const id = store.projectIdForToken(token);
    if (id === undefined) throw incorrectCredentials();
    return id;
  }
  if (pathId !== null && pathId !== '@current') {
    if (!/^\d+$/.test(pathId) || store.get(Number(pathId)) === undefined) throw projectNotFound();
    return Number(pathId);
  }
  const served = store.projectIds();
  if (served.length === 1) return served[0] as number;
  const own = caller.principal.projects ? served.filter((id) => caller.principal.projects?.has(id)) : [];
  if (own.length === 1) return own[0] as number;
  return null;
}

const denialReason = (error: ApiError): string =>
  error instanceof VerifierBusyError
    ? 'verifier_busy'
    : (({ 503: 'unverifiable', 401: 'unknown_key', 404: 'unknown_project', 429: 'throttled' })[error.status] ?? 'forbidden');

/** Create the authorizer shared by the API routes. */
export function createAccess(deps: AccessDeps) {
  const { store, metrics } = deps;

  function refuse(caller: Caller, route: ScopedRoute, projectId: number | null): void {
    const refusal = checkAccess(caller.principal, caller, route, projectId);
    if (refusal) deny(metrics, refusal.status === 401 ? 'wrong_key_kind' : 'forbidden', refusal);
  }

  function local(route: ScopedRoute, ctx: RequestContext, pathId: string | null, caller: Caller): Authorized | Promise<Authorized> {
    const projectId = resolveProject(ctx, store, caller, pathId);
    if (projectId === null) throw projectNotFound();
    const pending = caller.pendingGrant;
    if (pending === undefined || deps.secretKeys === null) {
      refuse(caller, route, projectId);
      return { caller, projectId };
    }
    // What can be refused locally is refused before anything is asked upstream: a secret key on a route that
    // takes none, an OAuth token on a route whose upstream takes none, or an introspected key lacking the scope
    // or scoped to other projects.
    if (caller.kind === 'oauth' && oauthRefusedRoutes.has(route)) deny(metrics, 'wrong_key_kind', invalidAccessToken());
    if (caller.kind === 'secret' ? !routeAccess[route].secretKeyAllowed : caller.principal !== unverifiedPrincipal) {
      refuse(caller, route, projectId);
    }
    const settle = (result: SecretKeyResult): Authorized => {
      if (result instanceof ApiError) deny(metrics, denialReason(result), result);
      const granted: Caller = { principal: result, kind: caller.kind, source: caller.source, digest: caller.digest };
      refuse(granted, route, projectId);
      return { caller: granted, projectId };
    };
    const result = deps.secretKeys.verify(pending.key, pending.digest, projectId, caller, waiterOf(ctx.authMemo, ctx.request.socket));
    return result instanceof Promise ? result.then(settle) : settle(result);
  }

  function upstream(route: ScopedRoute, ctx: RequestContext, pathId: string | null, caller: Caller): Authorized {
    const projectId = resolveProject(ctx, store, caller, pathId);
    // A key upstream would not describe (unverified) is left to upstream, except a secret key on a route that
    // takes none, which upstream refuses whoever's it is.
    if (caller.principal !== unverifiedPrincipal || (caller.kind === 'secret' && !routeAccess[route].secretKeyAllowed)) {
      refuse(caller, route, projectId);
    }
    return { caller, projectId };
  }

  return {
    /**
     * Authenticate a request's credential alone — no route, project or scope check — or throw upstream's refusal
     * (as `authorize` does): for the one route every valid personal key may call, the key's own record.
     */
    identify: (ctx: RequestContext): Caller | Promise<Caller> =>
      authenticate(ctx.headers.authorization, ctx.query, ctx.authMemo, deps, undefined, ctx.request.socket),

    /**
     * Authenticate and authorize a request for `route` about the project in the path (`pathId`, or null for
     * routes without one) or throw upstream's refusal. `bodyKey`: a `personal_api_key` from the JSON body.
     */
    authorize(
      route: ScopedRoute,
      mode: 'local' | 'upstream',
      ctx: RequestContext,
      pathId: string | null,
      bodyKey?: string,
    ): Authorized | Promise<Authorized> {
      const caller = authenticate(ctx.headers.authorization, ctx.query, ctx.authMemo, deps, bodyKey, ctx.request.socket);
      const decide = mode === 'local' ? local : upstream;
      if (caller instanceof Promise) return caller.then((c) => decide(route, ctx, pathId, c));
      // A caller remembered on the connection asking what it asked last: the same answer (the project
      // resolution and the scope check depend on nothing else, and the served projects are fixed at start).
      const memo = ctx.authMemo;
      const last = memo.decision;
      if (last !== null && last.caller === caller && last.route === route && last.mode === mode && last.method === ctx.method && last.pathId === pathId && last.query === ctx.query) {
        return last;
      }
      const decided = decide(route, ctx, pathId, caller);
      // (A query carrying a key is never kept past its request, as the listener treats it.)
      if (memo.caller === caller && caller.pendingGrant === undefined && !(decided instanceof Promise) && decided.caller === caller && !ctx.query.has('personal_api_key')) {
        memo.decision = { caller, projectId: decided.projectId, route, mode, method: ctx.method, pathId, query: ctx.query };
      }
      return decided;
    },
  };
}

/** The authorizer handle. */
export type Access = ReturnType<typeof createAccess>;
