/**
 * local_evaluation served from the snapshot, with upstream's contract (reference/flags-api.md §7): the project
 * route (op 16), the legacy SDK route `/api/feature_flag/local_evaluation` and `/flags/definitions` (upstream's
 * Rust service: `token` required, always with cohorts). No upstream request is made for these reads, except
 * that the first request without `send_cohorts` has the poller fetch that variant. Bodies are the snapshot's
 * buffers; If-None-Match → 304 without a body.
 */
import type { ScopedRoute } from '../../auth/scopes.js';
import { unavailable } from '../../errors.js';
import { etagMatches, type ProjectSnapshot, type VariantSnapshot } from '../../store/snapshot.js';
import type { Store } from '../../store/store.js';
import { jsonReply, reusableReply } from '../respond.js';
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
    const authorized = deps.access.authorize(route, 'local', ctx, pathId);
    return authorized instanceof Promise ? authorized.then((a) => serveProject(route, ctx, a)) : serveProject(route, ctx, authorized);
  }

  function serveProject(route: ScopedRoute, ctx: RequestContext, { projectId }: Authorized): Reply | Promise<Reply> {
    const project = deps.store.get(projectId as number) as ProjectSnapshot;
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
