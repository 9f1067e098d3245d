/**
 * Named-endpoint run (operations 23 GET and 24 POST of docs/api-compatibility.md): results shared between callers.
 *
 * Run cache. An entry is keyed by project, endpoint name, version (the one asked for, or "latest"), `debug`,
 * and the canonical JSON (keys sorted) of `variables`, `filters_override` and `query_override`;
 * `client_query_id` is not part of it. It is fresh until upstream's own `cache_target_age` (the time its query
 * cache considers the result stale, from the endpoint's `cache_age_seconds`), else for
 * FLAG_SIDECAR_ENDPOINT_RUN_TTL; the body is upstream's, with its own `is_cached` and `last_refresh`.
 * `refresh: "blocking"` (the default) is served from the cache; `"force_blocking"` always runs upstream and
 * replaces the entry; any other value, an unknown body key or a malformed version goes upstream uncached, so
 * upstream's own 400 comes back. A cached result is served to a caller only after upstream ran that endpoint
 * for the caller's own key recently (a grant, kept FLAG_SIDECAR_AUTH_CACHE_TTL); a caller without one runs
 * upstream, and its answer refreshes the entry. Concurrent identical runs share one upstream request: those of
 * granted callers through the cache, those of one key without a grant among themselves (forced runs never).
 * While upstream fails or throttles, a granted caller gets the last result (up to FLAG_SIDECAR_CACHE_STALE_MAX
 * old) marked stale.
 *
 * Fleet mode (`shared`): on a local miss the run is looked up in Redis before it goes upstream, and results and
 * grants computed here are shared (src/fleet/shared-runs.ts), so a key granted by any sidecar of the fleet is
 * served a result any of them computed; a key without a grant anywhere still runs upstream.
 *
 * This file is the request path up to a cache hit, which is answered with no promise, closure or allocation of
 * its own; everything else goes on in endpoint-run-miss.ts.
 */
import type { Caller } from '../../auth/authenticate.js';
import { extractCredential } from '../../auth/credential.js';
import { ApiError, offline } from '../../errors.js';
import type { SharedRuns } from '../../fleet/shared-runs.js';
import type { EndpointRunCounts, Metrics } from '../../metrics/metrics.js';
import { createNameLabels } from '../../metrics/name-labels.js';
import type { ReadThroughCache } from '../../store/read-through.js';
import type { RunGenerations } from '../../store/run-generations.js';
import type { UpstreamClient } from '../../upstream/client.js';
import { readBodyThen } from '../body.js';
import { later, type Reply, type RequestContext, type RouteHandler } from '../router.js';
import type { Access } from './access.js';
import { createRunBodies, type RunRead } from './endpoint-run-body.js';
import { createRunGrants } from './endpoint-run-grants.js';
import { createRunMisses, type RunTarget } from './endpoint-run-miss.js';
import { isDigits } from './endpoint-run-plan.js';
import { createRunUpstream } from './endpoint-run-upstream.js';
import { createReplyMemo } from './read-through.js';

/** Dependencies of createEndpointRun. */
export interface EndpointRunDeps {
  readonly access: Access;
  /** The run cache: shared between keys, separately bounded. */
  readonly runs: ReadThroughCache;
  readonly client: UpstreamClient | null;
  readonly runTtlMs: number;
  readonly grantTtlMs: number;
  readonly maxBodyBytes: number;
  readonly metrics: Metrics;
  readonly now: () => number;
  /** Fleet mode: runs and grants shared through Redis; absent or null otherwise. */
  readonly shared?: SharedRuns | null;
}

/**
 * The run handler (GET and POST `…/endpoints/:name/run`), caching under `generations` (which writes bump) and
 * counting per endpoint under the labels `metricNames` allows. A cache hit is answered from the body's callback;
 * errors reach the caller through the router as upstream-style answers.
 */
export function createEndpointRun(deps: EndpointRunDeps, generations: RunGenerations, metricNames: readonly string[]): RouteHandler {
  const { access, client, runs, now } = deps;
  const shared = deps.shared ?? null;
  const grants = createRunGrants({ ttlMs: deps.grantTtlMs, now, shared });
  const labels = createNameLabels(metricNames, 20);
  const countsOf = (name: string): EndpointRunCounts => deps.metrics.endpointRuns(labels.of(name));
  const bodies = createRunBodies();
  /** Replies for cache hits, one per Served object (the cache reuses those per entry and second of age). */
  const hitReply = createReplyMemo();
  const runUpstream = createRunUpstream({ client, runTtlMs: deps.runTtlMs, now });
  const misses = createRunMisses({ runs, generations, grants, runUpstream, hitReply, runTtlMs: deps.runTtlMs, now, shared, countsOf, confirm: labels.confirm });

  /** Run (23, 24): a cache hit is answered from the body's callback, with no promise in between. */
  function run(ctx: RequestContext): Reply | Promise<Reply> | typeof later {
    if (ctx.method !== 'POST') return runWithBody(ctx, undefined);
    readBodyThen(ctx.request, deps.maxBodyBytes, (error, raw) => {
      if (error !== null) return ctx.answerError(error);
      let reply: Reply | Promise<Reply>;
      try {
        reply = runWithBody(ctx, raw as Buffer);
      } catch (thrown) {
        return ctx.answerError(thrown);
      }
      ctx.answer(reply);
    });
    return later;
  }

  function runWithBody(ctx: RequestContext, raw: Buffer | undefined): Reply | Promise<Reply> {
    const read = bodies.read(ctx.params[1] as string, ctx, raw);
    if (read instanceof ApiError && extractCredential(ctx.headers.authorization, ctx.query) === null) throw read;
    const authorized = access.authorize('endpoint_run', 'upstream', ctx, ctx.params[0] ?? null, read instanceof ApiError ? undefined : read.bodyKey);
    if (authorized instanceof Promise) return authorized.then(({ caller, projectId }) => runAuthorized(ctx, raw, read, caller, projectId));
    return runAuthorized(ctx, raw, read, authorized.caller, authorized.projectId);
  }

  function runAuthorized(ctx: RequestContext, raw: Buffer | undefined, read: RunRead | ApiError, caller: Caller, projectId: number | null): Reply | Promise<Reply> {
    if (read instanceof ApiError) throw read;
    if (client === null) throw offline();
    const name = ctx.params[1] as string;
    // Only a numeric project in the path is cached and granted: upstream resolves `@current` to the user's current
    // project, which the sidecar cannot know, so such runs go upstream as they are.
    const numericPath = isDigits(ctx.params[0] ?? '');
    const plan = projectId === null || !numericPath ? ({ kind: 'uncached' } as const) : read.plan;
    if (plan.kind === 'uncached' || projectId === null) return misses.uncached(ctx, raw);
    // The entry key and grant of the last request with this body are reused while they still apply: the same
    // string object keeps its hash, and an unchanged epoch spares the generation and grant lookups.
    let last = read.lastKey;
    if (last === null || last.projectId !== projectId || last.epoch !== generations.epoch) {
      const endpointKey = last !== null && last.projectId === projectId ? last.endpointKey : `${projectId}\u0000${name}`;
      const generation = generations.of(endpointKey, plan.latest);
      if (last !== null && last.projectId === projectId && last.generation === generation) last.epoch = generations.epoch;
      else {
        const key = `${endpointKey}\u0000${plan.latest ? 'l' : 'a'}${generation}\u0000${plan.key}`;
        last = { projectId, endpointKey, generation, epoch: generations.epoch, key };
        read.lastKey = last;
      }
    }
    let grant = read.lastGrant;
    if (grant === null || grant.projectId !== projectId || grant.digest !== caller.digest || grant.kind !== caller.kind) {
      grant = { projectId, digest: caller.digest, kind: caller.kind, key: grants.key(caller, projectId, name), epoch: -1, until: 0 };
      read.lastGrant = grant;
    }
    if (grant.epoch !== grants.epoch) {
      grant.until = grants.until(grant.key);
      grant.epoch = grants.epoch;
    }
    const at = now();
    const granted = grant.until > at;
    if (plan.kind === 'cached' && granted) {
      const hit = runs.hit(last.key, projectId, at);
      if (hit !== undefined) {
        // The endpoint's tally, looked up again only when a name got a label slot since.
        if (read.counts === null || read.counts.epoch !== labels.epoch) read.counts = { epoch: labels.epoch, tally: countsOf(name) };
        read.counts.tally.cache += 1;
        // The reply of the last hit with this body, while the cache hands out the same Served object.
        if (read.lastServed !== hit) {
          read.lastServed = hit;
          read.lastReply = hitReply(hit);
        }
        return read.lastReply as Reply;
      }
    }
    const target: RunTarget = { ctx, raw, plan, projectId, endpointKey: last.endpointKey, generation: last.generation, key: last.key, grant: grant.key };
    return misses.answer(target, granted);
  }

  return run;
}
