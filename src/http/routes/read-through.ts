/**
 * Read-through handlers: a GET authorized in `upstream` mode (access.ts), answered from the read-through cache
 * (store/read-through.ts) or fetched upstream with the caller's own credential. Entries are keyed by the
 * caller's key digest and kind, the route, the path (trailing slash ignored, as upstream ignores it) and the
 * canonical query, so an answer is only ever served to the key upstream gave it to. Paging links are rewritten
 * to the address the caller used (that address is then part of the key). Every reply says where it came from:
 * `X-Flag-Sidecar-Source` (upstream, cache, stale), `X-Flag-Sidecar-Cache` (miss, hit, stale) and `Age`.
 */
import type { Caller } from '../../auth/authenticate.js';
import type { ScopedRoute } from '../../auth/scopes.js';
import { offline, upstreamFailure } from '../../errors.js';
import type { Fetched, ReadThroughCache, Served } from '../../store/read-through.js';
import type { UpstreamClient } from '../../upstream/client.js';
import { canonicalQuery, forwardedHeaders, responseFrom, upstreamTarget } from '../forward.js';
import { rewriteLinks } from '../links.js';
import { reusableReply } from '../respond.js';
import type { Handler, Reply, RequestContext } from '../router.js';
import type { Access, Authorized } from './access.js';

/** Dependencies of createReadThroughRoutes. */
export interface ReadThroughRouteDeps {
  readonly access: Access;
  readonly cache: ReadThroughCache;
  /** null offline: these routes then answer 503. */
  readonly client: UpstreamClient | null;
  /** Upstream's base path ('' at the root), taken off paging links. */
  readonly upstreamPath: string;
  /** The listener's own address, for links when a request carries no Host header. */
  readonly selfAddress: string;
}

/** How long answers of a route are kept. */
export interface RouteTtl {
  readonly okMs: number;
  readonly notFoundMs: number;
}

const sourceHeader = { upstream: 'upstream', cache: 'cache', stale: 'stale' } as const;
const cacheHeader = { upstream: 'miss', cache: 'hit', stale: 'stale' } as const;

/** The reply for a served answer, marked with its source and age. */
export function buildReply(served: Served): Reply {
  const headers: Record<string, string> = {
    ...served.response.headers,
    'x-flag-sidecar-source': sourceHeader[served.source],
    'x-flag-sidecar-cache': cacheHeader[served.source],
    age: String(Math.floor(served.ageMs / 1000)),
  };
  if (served.source === 'stale') headers.warning = '110 - "Response is Stale"';
  return reusableReply(served.response.status, headers, served.response.body);
}

/** Replies built once per Served object: a cache hit hands out one per entry and second of age. */
export function createReplyMemo(): (served: Served) => Reply {
  const replies = new WeakMap<Served, Reply>();
  return (served) => {
    let reply = replies.get(served);
    if (reply === undefined) {
      reply = buildReply(served);
      replies.set(served, reply);
    }
    return reply;
  };
}

/** Create the handler factory. */
export function createReadThroughRoutes(deps: ReadThroughRouteDeps) {
  const { cache, client } = deps;
  // Per caller object (one per keep-alive connection for header keys): the last cache key built.
  const lastKeys = new WeakMap<Caller, { route: ScopedRoute; path: string; rawQuery: string; host: string; key: string }>();
  const servedReply = createReplyMemo();

  async function fetchUpstream(route: ScopedRoute, ctx: RequestContext, ttl: RouteTtl, linkBase: string | null): Promise<Fetched> {
    if (client === null) return { kind: 'failure', error: offline() };
    const result = await client.request({ operation: route, method: 'GET', path: upstreamTarget(ctx), headers: forwardedHeaders(ctx) });
    if (result.kind === 'failure') return { kind: 'failure', error: upstreamFailure(result.cause) };
    let response = responseFrom(result);
    const ok = response.status >= 200 && response.status < 300;
    if (ok && linkBase !== null) {
      const body = rewriteLinks(response.body, linkBase, deps.upstreamPath);
      if (body !== response.body) response = { ...response, body, headers: { ...response.headers, 'content-length': String(body.length) } };
    }
    const ttlMs = ok ? ttl.okMs : response.status === 404 ? ttl.notFoundMs : 0;
    // Upstream errors and throttling let a stale answer be served instead, when there is one.
    return { kind: 'answer', response, ttlMs, failed: response.status >= 500 || response.status === 429 };
  }

  /** The answer for an authorized request, from the cache (synchronously) or upstream. */
  function lookup(route: ScopedRoute, ctx: RequestContext, ttl: RouteTtl, links: boolean, { caller, projectId }: Authorized): Served | Promise<Served> {
    const host = links ? (ctx.headers.host ?? deps.selfAddress) : '';
    // A keep-alive caller repeating its request reuses the key it built last time (one string, hash kept).
    const last = lastKeys.get(caller);
    let key: string;
    if (last !== undefined && last.path === ctx.path && last.rawQuery === ctx.rawQuery && last.host === host && last.route === route) key = last.key;
    else {
      const path = ctx.path.length > 1 && ctx.path.endsWith('/') ? ctx.path.slice(0, -1) : ctx.path;
      key = `${caller.digest}:${caller.kind}\u0000${route}\u0000${path}\u0000${canonicalQuery(ctx.query)}\u0000${host}`;
      lastKeys.set(caller, { route, path: ctx.path, rawQuery: ctx.rawQuery, host, key });
    }
    // A fresh entry first: no fetch closure is made for a hit (get() would look it up again on a miss).
    return cache.hit(key, projectId) ?? cache.get(key, projectId, () => fetchUpstream(route, ctx, ttl, links ? `http://${host}` : null));
  }

  function serve(route: ScopedRoute, ctx: RequestContext, ttl: RouteTtl, links: boolean, authorized: Authorized): Reply | Promise<Reply> {
    const served = lookup(route, ctx, ttl, links, authorized);
    return served instanceof Promise ? served.then(servedReply) : servedReply(served);
  }

  return {
    lookup,
    /** The reply for a served answer, marked with its source and age (built once per Served object). */
    reply: servedReply,
    /**
     * A GET handler for `route`: authorized, then served from the cache or upstream. `links`: rewrite the
     * body's `next`/`previous` to the sidecar. The project id is the route's first path parameter.
     */
    handler(route: ScopedRoute, ttl: RouteTtl, links = false): Handler {
      return (ctx) => {
        const authorized = deps.access.authorize(route, 'upstream', ctx, ctx.params[0] ?? null);
        return authorized instanceof Promise
          ? authorized.then((a) => serve(route, ctx, ttl, links, a))
          : serve(route, ctx, ttl, links, authorized);
      };
    },
  };
}

/** The factory handle. */
export type ReadThroughRoutes = ReturnType<typeof createReadThroughRoutes>;
