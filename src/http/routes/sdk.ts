/**
 * local_evaluation served from the snapshot, with upstream's contract (reference/flags-api.md §7): the project
 * route (op 16), the legacy SDK route `/api/feature_flag/local_evaluation` and `/flags/definitions` (upstream's
 * Rust service: `token` required, always with cohorts). No upstream request is made for these reads, except
 * that the first request without `send_cohorts` has the poller fetch that variant. Bodies are the snapshot's
 * buffers; If-None-Match → 304 without a body.
 */
import { authenticate, deny, unverifiedPrincipal, type Caller } from '../../auth/authenticate.js';
import type { Introspector } from '../../auth/introspect.js';
import type { PrincipalResolver } from '../../auth/principal.js';
import type { SecretKeyResult, SecretKeyVerifier } from '../../auth/secret-keys.js';
import { checkAccess, routeAccess, type ScopedRoute } from '../../auth/scopes.js';
import { ApiError, incorrectCredentials, projectNotFound, unavailable } from '../../errors.js';
import type { Metrics } from '../../metrics/metrics.js';
import { etagMatches, type ProjectSnapshot, type VariantSnapshot } from '../../store/snapshot.js';
import type { Store } from '../../store/store.js';
import { jsonReply } from '../respond.js';
import type { Reply, RequestContext, Route } from '../router.js';

/** Dependencies of the SDK routes. */
export interface SdkRouteDeps {
  readonly store: Store;
  readonly resolver: PrincipalResolver;
  readonly introspector: Introspector | null;
  /** Validates unknown project secret keys upstream; null offline. */
  readonly secretKeys: SecretKeyVerifier | null;
  readonly metrics: Metrics;
  readonly now: () => number;
  /** Fetch the plain variant from upstream now (null offline). */
  readonly ensurePlain: ((projectId: number) => Promise<void>) | null;
  /** Longest wait for that fetch before serving the with-cohorts body instead. */
  readonly plainWaitMs: number;
}

/** The project a request is about: `?token=`/`?api_key=` first, else the path's id or the caller's only project. */
export function resolveProject(ctx: RequestContext, store: Store, caller: Caller, pathId: string | null): number {
  const token = ctx.query.get('token') || ctx.query.get('api_key');
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
  throw projectNotFound();
}

/** The 200 and 304 replies of a variant for one value of the Age header; rebuilt at most once a second. */
interface CachedReplies {
  readonly age: number;
  readonly ok: Reply;
  readonly notModified: Reply;
}

function buildReplies(variant: VariantSnapshot, age: number, extra?: Readonly<Record<string, string>>): CachedReplies {
  const ageHeader = { age: String(age), ...extra };
  return {
    age,
    ok: { status: 200, headers: { ...variant.headers200, ...ageHeader }, body: variant.body },
    notModified: { status: 304, headers: { ...variant.headers304, ...ageHeader }, body: null },
  };
}

const fallbackHeader = { 'x-flag-sidecar-variant': 'with-cohorts' };

const missingTokenBody = Buffer.from('Failed to deserialize query string: missing field `token`');
const missingToken: Reply = {
  status: 400,
  headers: { 'content-type': 'text/plain; charset=utf-8', 'content-length': String(missingTokenBody.length) },
  body: missingTokenBody,
};

/** The three local_evaluation routes. */
export function sdkRoutes(deps: SdkRouteDeps): Route[] {
  // Per variant snapshot, its replies for the current Age (and those marked as the with-cohorts fallback).
  const replies = new WeakMap<VariantSnapshot, CachedReplies>();
  const fallbackReplies = new WeakMap<VariantSnapshot, CachedReplies>();

  function variantReply(variant: VariantSnapshot, ctx: RequestContext, fallback = false): Reply {
    const cache = fallback ? fallbackReplies : replies;
    const age = Math.max(0, Math.floor((deps.now() - variant.fetchedAt) / 1000));
    let cached = cache.get(variant);
    if (cached === undefined || cached.age !== age) {
      cached = buildReplies(variant, age, fallback ? fallbackHeader : undefined);
      cache.set(variant, cached);
    }
    const ifNoneMatch = ctx.headers['if-none-match'];
    if (ifNoneMatch === undefined) return cached.ok;
    // SDKs send back exactly the ETag they were given: compare that first, then upstream's looser forms.
    return ifNoneMatch === variant.etag || etagMatches(ifNoneMatch, variant.etagValue) ? cached.notModified : cached.ok;
  }

  async function servePlain(project: ProjectSnapshot, ctx: RequestContext): Promise<Reply> {
    if (deps.ensurePlain) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        deps.ensurePlain(project.projectId),
        new Promise((resolve) => {
          timer = setTimeout(resolve, deps.plainWaitMs);
        }),
      ]);
      clearTimeout(timer);
    }
    const current = deps.store.get(project.projectId) ?? project;
    if (current.plain) return variantReply(current.plain, ctx);
    if (current.cohorts) return variantReply(current.cohorts, ctx, true);
    throw unavailable('No flag definitions loaded yet for this project.');
  }

  function serve(route: ScopedRoute, ctx: RequestContext, pathId: string | null): Reply | Promise<Reply> {
    const caller = authenticate(ctx.headers.authorization, ctx.query, ctx.authMemo, deps);
    return caller instanceof Promise ? caller.then((c) => authorized(route, ctx, pathId, c)) : authorized(route, ctx, pathId, caller);
  }

  function authorized(route: ScopedRoute, ctx: RequestContext, pathId: string | null, caller: Caller): Reply | Promise<Reply> {
    const projectId = resolveProject(ctx, deps.store, caller, pathId);
    const pending = caller.pendingGrant;
    if (pending === undefined || deps.secretKeys === null) return serveProject(route, ctx, projectId, caller);
    // What can be refused locally is refused before anything is asked upstream: a secret key on a route that
    // takes none, or an introspected key lacking the scope or scoped to other projects.
    if (caller.kind === 'secret' ? !routeAccess[route].secretKeyAllowed : caller.principal !== unverifiedPrincipal) {
      const refusal = checkAccess(caller.principal, caller, route, projectId);
      if (refusal) deny(deps.metrics, refusal.status === 401 ? 'wrong_key_kind' : 'forbidden', refusal);
    }
    const settle = (result: SecretKeyResult): Reply | Promise<Reply> => {
      if (result instanceof ApiError) deny(deps.metrics, result.status === 503 ? 'unverifiable' : result.status === 403 ? 'forbidden' : 'unknown_key', result);
      return serveProject(route, ctx, projectId, { principal: result, kind: caller.kind, source: caller.source });
    };
    const result = deps.secretKeys.verify(pending.key, pending.digest, projectId, caller.source);
    return result instanceof Promise ? result.then(settle) : settle(result);
  }

  function serveProject(route: ScopedRoute, ctx: RequestContext, projectId: number, caller: Caller): Reply | Promise<Reply> {
    const refusal = checkAccess(caller.principal, caller, route, projectId);
    if (refusal) deny(deps.metrics, refusal.status === 401 ? 'wrong_key_kind' : 'forbidden', refusal);
    const project = deps.store.get(projectId) as ProjectSnapshot;
    if (project.quotaBody) return jsonReply(402, project.quotaBody);
    // `send_cohorts` by presence, as upstream's view reads it (`"send_cohorts" in request.GET`); the Rust
    // /flags/definitions service always answers with cohorts.
    if (route === 'flag_definitions' || ctx.query.has('send_cohorts')) {
      if (!project.cohorts) throw unavailable('No flag definitions loaded yet for this project.');
      return variantReply(project.cohorts, ctx);
    }
    if (project.plain) return variantReply(project.plain, ctx);
    return servePlain(project, ctx);
  }

  return [
    {
      name: 'local_evaluation',
      methods: ['GET'],
      template: '/api/projects/:project_id/feature_flags/local_evaluation',
      handler: (ctx) => serve('local_evaluation', ctx, ctx.params[0] ?? null),
    },
    {
      name: 'legacy_local_evaluation',
      methods: ['GET'],
      template: '/api/feature_flag/local_evaluation',
      handler: (ctx) => serve('legacy_local_evaluation', ctx, null),
    },
    {
      name: 'flag_definitions',
      methods: ['GET'],
      template: '/flags/definitions',
      // Upstream's service requires `token` (a missing one is its query-string rejection, a plain-text 400).
      handler: (ctx) => (ctx.query.get('token') ? serve('flag_definitions', ctx, null) : missingToken),
    },
  ];
}
