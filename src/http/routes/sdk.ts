/**
 * local_evaluation served from the snapshot, with upstream's contract (reference/flags-api.md §7): the project
 * route (op 16), the legacy SDK route `/api/feature_flag/local_evaluation` and `/flags/definitions`. No upstream
 * request is made for these reads. Bodies are the snapshot's buffers; If-None-Match → 304 without a body.
 */
import { extractCredential, keyKind } from '../../auth/credential.js';
import type { PrincipalResolver, Principal } from '../../auth/principal.js';
import { checkAccess, type ScopedRoute } from '../../auth/scopes.js';
import {
  ApiError,
  incorrectCredentials,
  invalidPersonalKey,
  notAuthenticated,
  projectNotFound,
  unavailable,
} from '../../errors.js';
import type { Metrics } from '../../metrics/metrics.js';
import { etagMatches, type ProjectSnapshot, type VariantSnapshot } from '../../store/snapshot.js';
import type { Store } from '../../store/store.js';
import { jsonReply } from '../respond.js';
import type { Reply, RequestContext, Route } from '../router.js';

/** Dependencies of the SDK routes. */
export interface SdkRouteDeps {
  readonly store: Store;
  readonly resolver: PrincipalResolver;
  readonly metrics: Metrics;
  readonly now: () => number;
  /** Fetch the plain variant from upstream now (null offline). */
  readonly ensurePlain: ((projectId: number) => Promise<void>) | null;
  /** Longest wait for that fetch before serving the with-cohorts body instead. */
  readonly plainWaitMs: number;
}

/** The authenticated caller of a request. */
export interface Caller {
  readonly principal: Principal;
  readonly kind: 'secret' | 'oauth' | 'personal';
}

function deny(metrics: Metrics, reason: string, error: ApiError): never {
  metrics.authDenials.inc({ reason });
  throw error;
}

/** Authenticate the request's credential or throw upstream's 401. */
export function authenticate(ctx: RequestContext, deps: Pick<SdkRouteDeps, 'resolver' | 'metrics'>): Caller {
  const credential = extractCredential(ctx.headers.authorization, ctx.query);
  if (credential === null) deny(deps.metrics, 'no_credential', notAuthenticated());
  const principal = deps.resolver.resolve(credential.key);
  if (principal === null) deny(deps.metrics, 'unknown_key', invalidPersonalKey(credential.source));
  return { principal, kind: keyKind(credential.key) };
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

function variantReply(variant: VariantSnapshot, ctx: RequestContext, now: number, extra?: Record<string, string>): Reply {
  const age = String(Math.max(0, Math.floor((now - variant.fetchedAt) / 1000)));
  const ifNoneMatch = ctx.headers['if-none-match'];
  if (ifNoneMatch !== undefined && etagMatches(ifNoneMatch, variant.etagValue)) {
    return { status: 304, headers: { ...variant.headers304, age, ...extra }, body: null };
  }
  return { status: 200, headers: { ...variant.headers200, age, ...extra }, body: variant.body };
}

const fallbackHeader = { 'x-flag-sidecar-variant': 'with-cohorts' };

async function servePlain(project: ProjectSnapshot, ctx: RequestContext, deps: SdkRouteDeps): Promise<Reply> {
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
  if (current.plain) return variantReply(current.plain, ctx, deps.now());
  if (current.cohorts) return variantReply(current.cohorts, ctx, deps.now(), fallbackHeader);
  throw unavailable('No flag definitions loaded yet for this project.');
}

function serve(route: ScopedRoute, deps: SdkRouteDeps, ctx: RequestContext, pathId: string | null): Reply | Promise<Reply> {
  const caller = authenticate(ctx, deps);
  const projectId = resolveProject(ctx, deps.store, caller, pathId);
  const refusal = checkAccess(caller.principal, caller.kind, route, projectId);
  if (refusal) deny(deps.metrics, refusal.status === 401 ? 'unauthenticated' : 'forbidden', refusal);
  const project = deps.store.get(projectId) as ProjectSnapshot;
  if (project.quotaBody) return jsonReply(402, project.quotaBody);
  if (ctx.query.has('send_cohorts')) {
    if (!project.cohorts) throw unavailable('No flag definitions loaded yet for this project.');
    return variantReply(project.cohorts, ctx, deps.now());
  }
  if (project.plain) return variantReply(project.plain, ctx, deps.now());
  return servePlain(project, ctx, deps);
}

/** The three local_evaluation routes. */
export function sdkRoutes(deps: SdkRouteDeps): Route[] {
  return [
    {
      name: 'local_evaluation',
      methods: ['GET'],
      template: '/api/projects/:project_id/feature_flags/local_evaluation',
      handler: (ctx) => serve('local_evaluation', deps, ctx, ctx.params[0] ?? null),
    },
    {
      name: 'legacy_local_evaluation',
      methods: ['GET'],
      template: '/api/feature_flag/local_evaluation',
      handler: (ctx) => serve('legacy_local_evaluation', deps, ctx, null),
    },
    {
      name: 'flag_definitions',
      methods: ['GET'],
      template: '/flags/definitions',
      handler: (ctx) => serve('flag_definitions', deps, ctx, null),
    },
  ];
}
