/**
 * local_evaluation served from the snapshot, with upstream's contract (the `local_evaluation` action of PostHog's
 * `FeatureFlagViewSet`, `posthog/api/feature_flag.py`): the project
 * route (op 16), the legacy SDK route `/api/feature_flag/local_evaluation` and `/flags/definitions` (upstream's
 * Rust service: `token` required, always with cohorts). No upstream request is made for these reads, except
 * that the first request without `send_cohorts` has the poller fetch that variant. Bodies are the snapshot's
 * buffers; If-None-Match → 304 without a body.
 */
import type { ScopedRoute } from '../../auth/scopes.js';
import { ApiError, unavailable } from '../../errors.js';
import { etagMatches, type ProjectSnapshot, type VariantSnapshot } from '../../store/snapshot.js';
import type { Store } from '../../store/store.js';
import { definitionsRefusal, flagsQuotaLimited, missingTokenParameter, plainTextReply, unknownProjectToken } from '../flags-service-errors.js';
import { errorReply, jsonReply, reusableReply } from '../respond.js';
import type { Reply, RequestContext, Route } from '../router.js';
import type { Access, Authorized } from './access.js';

/** Dependencies of the SDK routes. */
export interface SdkRouteDeps {
  readonly store: Store;
  readonly access: Access;
  readonly now: () => number;
  /** Fetch the plain variant from upstream now (null offline). */
  readonly ensurePlain: ((projectId: number) => Promise<void>) | null;
  /** Longest wait for that fetch before serving the with-cohorts body instead. */
  readonly plainWaitMs: number;
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
    ok: reusableReply(200, { ...variant.headers200, ...ageHeader }, variant.body),
    notModified: reusableReply(304, { ...variant.headers304, ...ageHeader }, null),
  };
}

const fallbackHeader = { 'x-flag-sidecar-variant': 'with-cohorts' };

const missingToken: Reply = plainTextReply(missingTokenParameter());

/**
 * A quota-limited project on /flags/definitions: the flags service's own 402 (flag_definitions.rs checks the quota
 * after the rate limit and before the ETag), not the Django body the poller received from local_evaluation.
 */
const definitionsQuotaLimited: Reply = errorReply(flagsQuotaLimited());

/**
 * What upstream's service answers to a method other than GET on /flags/definitions, after the token check and
 * before any authentication: HEAD an empty 200, OPTIONS 204, anything else 405 (each with `Allow`).
 */
const allowed = 'GET, OPTIONS, HEAD';
const otherMethod = (method: string): Reply => {
  if (method === 'HEAD') return { status: 200, headers: { 'content-type': 'application/json', 'content-length': '0' }, body: null };
  if (method === 'OPTIONS') return { status: 204, headers: { allow: allowed }, body: null };
  return { status: 405, headers: { allow: allowed, 'content-length': '0' }, body: null };
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
    const authorized = deps.access.authorize(route, 'local', ctx, pathId);
    return authorized instanceof Promise ? authorized.then((a) => serveProject(route, ctx, a)) : serveProject(route, ctx, authorized);
  }

  /** /flags/definitions: the service's own token check, method handling and refusals (flags-service-errors.ts). */
  function serveDefinitions(ctx: RequestContext): Reply | Promise<Reply> {
    const token = ctx.query.get('token');
    if (!token) return missingToken;
    if (ctx.method !== 'GET') return otherMethod(ctx.method);
    // The service looks the team up by its token before it authenticates (flag_definitions.rs,
    // `fetch_team_by_token` then `authenticate_flag_definitions`): an unknown token is its 401 with or without a key.
    if (deps.store.projectIdForToken(token) === undefined) throw unknownProjectToken();
    const translate = (error: unknown): never => {
      throw error instanceof ApiError ? definitionsRefusal(error, ctx.headers.authorization) : error;
    };
    try {
      const reply = serve('flag_definitions', ctx, null);
      return reply instanceof Promise ? reply.catch(translate) : reply;
    } catch (error) {
      return translate(error);
    }
  }

  function serveProject(route: ScopedRoute, ctx: RequestContext, { projectId }: Authorized): Reply | Promise<Reply> {
    const project = deps.store.get(projectId as number) as ProjectSnapshot;
    if (project.quotaBody) return route === 'flag_definitions' ? definitionsQuotaLimited : jsonReply(402, project.quotaBody);
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
      methods: ['GET', 'OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE'],
      template: '/flags/definitions',
      // Upstream's service requires `token` (a missing one is its query-string rejection, a plain-text 400).
      handler: serveDefinitions,
    },
  ];
}
