/**
 * A cacheable named-endpoint run that is not a plain cache hit (endpoint-run.ts): answered from the run cache
 * once filled, from the fleet's results (fleet mode), or upstream; what upstream answers grants or withdraws the
 * key's grant, refreshes the entry and (fleet mode) is shared. Concurrent identical runs share one upstream
 * request: those of granted callers through the cache, those of one key without a grant among themselves
 * (forced runs never).
 */
import type { SharedLookup, SharedRuns } from '../../fleet/shared-runs.js';
import type { EndpointRunCounts } from '../../metrics/metrics.js';
import type { Fetched, ReadThroughCache, Served } from '../../store/read-through.js';
import type { RunGenerations } from '../../store/run-generations.js';
import type { Reply, RequestContext } from '../router.js';
import type { RunGrants } from './endpoint-run-grants.js';
import type { RunPlan } from './endpoint-run-plan.js';
import { buildReply } from './read-through.js';

/** A cacheable run as decided for one request. */
export interface RunTarget {
  readonly ctx: RequestContext;
  readonly raw: Buffer | undefined;
  readonly plan: Extract<RunPlan, { kind: 'cached' | 'force' }>;
  readonly projectId: number;
  /** `${projectId}\u0000${name}`: the endpoint's generations key. */
  readonly endpointKey: string;
  /** The endpoint's generation the entry key was built at. */
  readonly generation: number;
  /** The run cache entry key. */
  readonly key: string;
  /** The caller's grant key. */
  readonly grant: string;
}

/** Dependencies of createRunMisses. */
export interface RunMissDeps {
  readonly runs: ReadThroughCache;
  readonly generations: RunGenerations;
  readonly grants: RunGrants;
  readonly runUpstream: (ctx: RequestContext, body: Buffer | undefined, latest: boolean) => Promise<Fetched>;
  /** The reply of a cache hit, one per Served object. */
  readonly hitReply: (served: Served) => Reply;
  readonly runTtlMs: number;
  readonly now: () => number;
  readonly shared: SharedRuns | null;
  /** The metric tally of the endpoint `name`, under its current label. */
  readonly countsOf: (name: string) => EndpointRunCounts;
  /** Upstream answered a run of `name` with a 2xx: the name exists and may get a metric label of its own. */
  readonly confirm: (name: string) => void;
}

/**
 * `answer(run, granted)`: the reply to a cacheable run of a caller granted the endpoint here (`granted`) or not;
 * rejects (counted as failed) with the upstream failure when there is no answer to give. `uncached(...)`: a run
 * upstream judges, passed through as it is.
 */
export function createRunMisses(deps: RunMissDeps) {
  const { runs, generations, grants, runUpstream, hitReply, now, shared, countsOf, confirm } = deps;
  const nameOf = (ctx: RequestContext): string => ctx.params[1] as string;
  /** Count one run of the endpoint answered with `status` (undefined: no answer), a 2xx confirming its name first. */
  const tally = (ctx: RequestContext, source: keyof EndpointRunCounts, status?: number): void => {
    if (status !== undefined && status >= 200 && status < 300) confirm(nameOf(ctx));
    countsOf(nameOf(ctx))[source] += 1;
  };
  /** Runs upstream for a key without a grant, by grant and entry key, while they are in flight. */
  const ungranted = new Map<string, Promise<Fetched>>();

  /** Fleet mode: the run's generation, result and grant in Redis (null: not known). */
  const lookupShared = (run: RunTarget): Promise<SharedLookup | null> =>
    shared === null ? Promise.resolve(null) : shared.lookup(run.projectId, nameOf(run.ctx), run.plan.key, run.grant);

  function answer(run: RunTarget, granted: boolean): Reply | Promise<Reply> {
    if (run.plan.kind !== 'cached') return runOwn(run, undefined);
    if (granted || shared === null) return granted ? runGranted(run, undefined) : runOwn(run, undefined);
    // Not granted here: the fleet may hold a grant for the key (kept here too from then on).
    return lookupShared(run).then((found) => {
      if (found === null || found.grantUntil <= now()) return runOwn(run, found);
      grants.adopt(run.grant, found.grantUntil);
      return runGranted(run, found);
    });
  }

  /**
   * A granted caller's run: from the run cache, the fleet's (fleet mode; `found`: already looked up), or
   * upstream, shared with concurrent callers.
   */
  function runGranted(run: RunTarget, found: SharedLookup | null | undefined): Reply | Promise<Reply> {
    const { ctx, raw, plan, projectId } = run;
    let ranOwn = false;
    let served: Served | Promise<Served>;
    try {
      served = runs.get(run.key, projectId, async () => {
        const inFleet = found === undefined ? await lookupShared(run) : found;
        // A shared result is fresh here as it would be had this sidecar run it (the latest version: this one's TTL).
        const until = inFleet?.run ? (plan.latest ? Math.min(inFleet.run.expiresAt, inFleet.run.fetchedAt + deps.runTtlMs) : inFleet.run.expiresAt) : 0;
        if (inFleet?.run && until > now()) return { kind: 'answer', response: inFleet.run.response, ttlMs: until - now(), fetchedAt: inFleet.run.fetchedAt };
        ranOwn = true;
        return share(run, inFleet?.gen ?? null, settle(run, await runUpstream(ctx, raw, plan.latest)));
      });
    } catch (error) {
      tally(ctx, 'failed');
      throw error;
    }
    if (!(served instanceof Promise)) return servedReply(run, served, ranOwn);
    return served.then(
      (result) => servedReply(run, result, ranOwn),
      (error: unknown) => {
        tally(ctx, 'failed');
        throw error;
      },
    );
  }

  /** The answer a granted caller got from the run cache (or a fetch it joined). */
  function servedReply(run: RunTarget, served: Served, ranOwn: boolean): Reply | Promise<Reply> {
    // An error answered to another key's run it joined (that key's 403, its per-key 429) is not this caller's:
    // it runs with its own key.
    if (!ranOwn && served.source === 'upstream' && (served.response.status < 200 || served.response.status >= 300)) return runOwn(run, undefined);
    tally(run.ctx, served.source, served.response.status);
    return served.source === 'cache' ? hitReply(served) : buildReply(served);
  }

  /**
   * What a run answered for a key says: a 2xx grants that key the endpoint; a 401/403/404 withdraws its grant; a
   * 404 for the latest version (the endpoint gone or made inactive outside the sidecar) also retires every cached
   * run of it.
   */
  function settle(run: RunTarget, fetched: Fetched): Fetched {
    if (fetched.kind !== 'answer') return fetched;
    const status = fetched.response.status;
    if (status >= 200 && status < 300) grants.give(run.projectId, run.grant);
    else if (status === 401 || status === 403 || status === 404) grants.withdraw(run.projectId, run.grant);
    // (A pinned version's 404 usually means only that version is unknown: nothing else is retired for it.)
    if (status === 404 && run.plan.latest) {
      generations.bump(run.endpointKey, true);
      void shared?.retire(run.projectId, nameOf(run.ctx));
    }
    return fetched;
  }

  /**
   * Fleet mode: share a fresh result computed here, under the endpoint's generation `gen` read before the run
   * went upstream (null: unknown, not shared), unless a write retired the endpoint's runs here meanwhile.
   */
  function share(run: RunTarget, gen: string | null, fetched: Fetched): Fetched {
    if (shared === null || gen === null || fetched.kind !== 'answer' || fetched.ttlMs <= 0) return fetched;
    if (generations.of(run.endpointKey, run.plan.latest) !== run.generation) return fetched;
    void shared.store(run.projectId, nameOf(run.ctx), run.plan.key, gen, fetched.response, fetched.ttlMs);
    return fetched;
  }

  async function uncached(ctx: RequestContext, raw: Buffer | undefined): Promise<Reply> {
    return upstreamReply(ctx, await runUpstream(ctx, raw, true));
  }

  /** The reply to a run this caller sent upstream; a failure is counted and thrown. */
  function upstreamReply(ctx: RequestContext, fetched: Fetched): Reply {
    if (fetched.kind === 'failure') {
      tally(ctx, 'failed');
      throw fetched.error;
    }
    tally(ctx, 'upstream', fetched.response.status);
    return buildReply({ response: fetched.response, source: 'upstream', ageMs: 0 });
  }

  /**
   * The caller's own run upstream (no grant yet, a forced refresh, or a joined run that failed for its own key),
   * whose answer refreshes the entry. Concurrent identical runs of one key share it (not forced ones: each must
   * run).
   */
  async function runOwn(run: RunTarget, found: SharedLookup | null | undefined): Promise<Reply> {
    const { plan, key, grant } = run;
    const flight = `${grant}\u0000${key}`;
    let own = plan.kind === 'cached' ? ungranted.get(flight) : undefined;
    if (own === undefined) {
      own = (async () => {
        const gen = (found === undefined ? await lookupShared(run) : found)?.gen ?? null;
        return share(run, gen, settle(run, await runUpstream(run.ctx, run.raw, plan.latest)));
      })();
      if (plan.kind === 'cached') {
        ungranted.set(flight, own);
        const done = (): void => void ungranted.delete(flight);
        own.then(done, done);
      }
    }
    const fetched = await own;
    if (fetched.kind !== 'failure') {
      const current = generations.of(run.endpointKey, plan.latest);
      if (fetched.ttlMs > 0 && current === run.generation) runs.set(key, run.projectId, fetched.response, fetched.ttlMs);
    }
    return upstreamReply(run.ctx, fetched);
  }

  return { answer, uncached };
}
