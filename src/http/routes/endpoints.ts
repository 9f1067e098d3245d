/**
 * Named query endpoints (reference/interface.md operations 19–27, plus list, create and retrieve;
 * reference/endpoints-api.md), under `/api/projects/:id/endpoints` and upstream's alias
 * `/api/environments/:id/endpoints`:
 * - read through with the caller's key: list, retrieve, materialization_status (21), openapi.json (22),
 *   versions (25), and versions/:n (26) kept for FLAG_SIDECAR_ENDPOINT_VERSION_TTL (a version never changes);
 * - forwarded: create, PATCH/PUT (19), DELETE (20); after one that may have applied, the project's cached reads
 *   are dropped, and so are the endpoint's cached runs of its latest version (PATCH leaving it active) or all of
 *   them (DELETE, or a PATCH that deactivates it or whose outcome is unknown);
 * - last_execution_times (27): a POST that reads, so identical bodies from one key share a short-lived answer;
 * - run (23 GET, 24 POST): results shared between callers, see below.
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
 * served a result any of them computed; a key without a grant anywhere still runs upstream. `retire` drops an
 * endpoint's runs here when another sidecar wrote to it.
 */
import { LRUCache } from 'lru-cache';
import type { Caller } from '../../auth/authenticate.js';
import { extractCredential } from '../../auth/credential.js';
import type { ScopedRoute } from '../../auth/scopes.js';
import { ApiError, offline, upstreamFailure } from '../../errors.js';
import type { EndpointRunCounts, Metrics } from '../../metrics/metrics.js';
import type { SharedLookup, SharedRuns } from '../../fleet/shared-runs.js';
import type { Fetched, ReadThroughCache, Served } from '../../store/read-through.js';
import type { Store } from '../../store/store.js';
import type { UpstreamClient, UpstreamRequest } from '../../upstream/client.js';
import { bodyKeyOf, isJsonType, isRecord, parseJsonBody, readBody, readBodyThen } from '../body.js';
import { forwardedHeaders, responseFrom, upstreamTarget } from '../forward.js';
import { later, type Handler, type Reply, type RequestContext, type Route, type RouteHandler } from '../router.js';
import type { Access } from './access.js';
import { buildReply, createReplyMemo, type ReadThroughRoutes, type RouteTtl } from './read-through.js';
import type { WriteRoutes } from './flag-writes.js';

/** Dependencies of endpointRoutes. */
export interface EndpointRouteDeps {
  readonly access: Access;
  readonly store: Store;
  readonly reads: ReadThroughRoutes;
  readonly writes: WriteRoutes;
  /** The shared read-through cache (last_execution_times answers live there, per key). */
  readonly cache: ReadThroughCache;
  /** The run cache: shared between keys, separately bounded. */
  readonly runs: ReadThroughCache;
  readonly client: UpstreamClient | null;
  readonly ttl: RouteTtl;
  readonly versionTtlMs: number;
  readonly runTtlMs: number;
  readonly grantTtlMs: number;
  readonly maxBodyBytes: number;
  readonly metrics: Metrics;
  readonly now: () => number;
  /** Fleet mode: runs and grants shared through Redis; absent or null otherwise. */
  readonly shared?: SharedRuns | null;
}

/** Run body keys upstream accepts (seed era, plus `debug` which its code reads); others get its 400. */
const runKeys = new Set(['client_query_id', 'refresh', 'variables', 'query_override', 'filters_override', 'version', 'debug']);
const cachedRefresh = new Set([undefined, 'blocking', 'async_except_on_cache_miss']);


/** JSON with object keys sorted at every level: equal values, equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** How a run request is answered. */
export type RunPlan =
  | { readonly kind: 'cached'; readonly key: string; readonly latest: boolean }
  | { readonly kind: 'force'; readonly key: string; readonly latest: boolean }
  | { readonly kind: 'uncached' };

/**
 * The plan for a run of `name` with `body` (POST; null for GET) and `?version`: which cache entry it is, or
 * none when upstream must judge the request. The key still lacks the project and generation prefix.
 */
export function planRun(name: string, body: unknown, queryVersion: string | undefined): RunPlan {
  const request = body === null ? {} : body;
  if (!isRecord(request)) return { kind: 'uncached' };
  for (const key of Object.keys(request)) if (!runKeys.has(key)) return { kind: 'uncached' };
  let version: string;
  if (request.version !== undefined && request.version !== null) {
    if (typeof request.version !== 'number' || !Number.isInteger(request.version)) return { kind: 'uncached' };
    version = String(request.version);
  } else if (queryVersion !== undefined) {
    if (!isDigits(queryVersion)) return { kind: 'uncached' };
    version = String(Number(queryVersion));
  } else version = 'latest';
  const refresh = request.refresh;
  if (refresh !== 'force_blocking' && !cachedRefresh.has(refresh as string | undefined)) return { kind: 'uncached' };
  if (request.debug !== undefined && typeof request.debug !== 'boolean') return { kind: 'uncached' };
  const key = [
    name,
    version,
    request.debug === true ? 'debug' : '',
    canonicalJson(request.variables ?? null),
    canonicalJson(request.filters_override ?? null),
    canonicalJson(request.query_override ?? null),
  ].join('\u0000');
  const latest = version === 'latest';
  return refresh === 'force_blocking' ? { kind: 'force', key, latest } : { kind: 'cached', key, latest };
}

/** Whether an update's answer shows the endpoint still active (`is_active: true`); anything else: not known to be. */
function stillActive(body: Buffer | null): boolean {
  if (body === null) return false;
  try {
    const value = JSON.parse(body.toString('utf8')) as unknown;
    return isRecord(value) && value.is_active === true;
  } catch {
    return false;
  }
}

/**
 * A run request's body as read (see readRun), with what its last request worked out: the endpoint's metric
 * tally, the entry key (valid while no endpoint's generation moved) and the caller's grant (valid while no grant
 * changed).
 */
interface RunRead {
  readonly parsed: unknown;
  readonly bodyKey: string | undefined;
  readonly plan: RunPlan;
  counts: EndpointRunCounts | null;
  lastServed: Served | null;
  lastReply: Reply | null;
  lastKey: { readonly projectId: number; readonly endpointKey: string; readonly generation: number; epoch: number; readonly key: string } | null;
  lastGrant: { readonly projectId: number; readonly digest: string; readonly kind: string; readonly key: string; epoch: number; until: number } | null;
}

/** A cacheable run as decided for one request. */
interface RunTarget {
  readonly ctx: RequestContext;
  readonly raw: Buffer | undefined;
  readonly plan: Extract<RunPlan, { kind: 'cached' | 'force' }>;
  readonly projectId: number;
  readonly endpointKey: string;
  readonly generation: number;
  readonly key: string;
  readonly grant: string;
  readonly counts: EndpointRunCounts;
}

/** Longest a run result is served as fresh: upstream's longest `cache_age_seconds` (a day). */
const maxRunFreshnessMs = 24 * 3_600_000;

/** How long a run answer stays fresh: until upstream's `cache_target_age` when it gives one, else `fallbackMs`. */
export function runFreshness(body: Buffer, fetchedAt: number, fallbackMs: number, maxMs: number): number {
  // Upstream puts `results` first and its cache fields after them: only the body's tail is searched.
  const text = (body.length > 65_536 ? body.subarray(body.length - 65_536) : body).toString('utf8');
  const match = /"cache_target_age"\s*:\s*"([^"]+)"/.exec(text);
  if (match === null) return fallbackMs;
  const target = Date.parse(match[1] as string);
  if (!Number.isFinite(target)) return fallbackMs;
  return Math.max(0, Math.min(target - fetchedAt, maxMs));
}

/** Whether `text` is all ASCII digits (and not empty): a project id rather than `@current`, a version number. */
function isDigits(text: string): boolean {
  if (text.length === 0) return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** Per (project, endpoint): generations that retire cached runs; evicted records raise a floor instead. */
function createGenerations(max: number) {
  let counter = 0;
  let floor = 0;
  /** Moves with every bump: a generation read at an unchanged epoch is still current. */
  let epoch = 0;
  const records = new LRUCache<string, { latest: number; all: number }>({
    max,
    dispose: (record) => {
      floor = Math.max(floor, record.latest, record.all);
    },
  });
  const get = (key: string): { latest: number; all: number } => records.get(key) ?? { latest: floor, all: floor };
  return {
    /** The generation runs of the latest version (`latest`), or of any version, are stored under. */
    of: (key: string, latest: boolean): number => (latest ? get(key).latest : get(key).all),
    get epoch(): number {
      return epoch;
    },
    /** Retire the latest version's runs (a PATCH), or every run (a DELETE). */
    bump(key: string, all: boolean): void {
      const current = get(key);
      counter = Math.max(counter, floor) + 1;
      records.set(key, { latest: counter, all: all ? counter : current.all });
      epoch += 1;
    },
  };
}

/** Metric label for an endpoint name: an allow-list, else the first `firstN` names seen; the rest `other`. */
function createNameLabels(allowed: readonly string[], firstN: number) {
  const names = new Set(allowed);
  const fixed = allowed.length > 0;
  return (name: string): string => {
    if (names.has(name)) return name;
    if (!fixed && names.size < firstN) {
      names.add(name);
      return name;
    }
    return 'other';
  };
}

/** The endpoint routes, under both of upstream's prefixes, and `retire(project, name)`: drop an endpoint's cached runs. */
export function endpointRoutes(deps: EndpointRouteDeps, metricNames: readonly string[]): { routes: Route[]; retire: (projectId: number, name: string) => void } {
  const { access, reads, writes, client, runs, now } = deps;
  const shared = deps.shared ?? null;
  const generations = createGenerations(10_000);
  /** Grants: until when a key may be served an endpoint's cached runs. */
  const grants = new LRUCache<string, number>({ max: 50_000 });
  /** Moves with every grant given or withdrawn (and so with every eviction): a grant read at an unchanged epoch holds. */
  let grantEpoch = 0;
  /** Runs upstream for a key without a grant, by grant and entry key, while they are in flight. */
  const ungranted = new Map<string, Promise<Fetched>>();
  const label = createNameLabels(metricNames, 20);
  const countsOf = (name: string): EndpointRunCounts => deps.metrics.endpointRuns(label(name));

  const grantKey = (caller: Caller, projectId: number, name: string): string => `${caller.digest}:${caller.kind}\u0000${projectId}\u0000${name}`;

  /** Projects a write addresses: the path's numeric id, else (`@current`) every served project. */
  const projectsOf = (param: string | undefined): readonly number[] =>
    param !== undefined && isDigits(param) ? [Number(param)] : deps.store.projectIds();

  /**
   * One run upstream with the caller's credential (HEAD asked as GET, as the read-through does, so no empty body
   * is ever cached). Fresh for upstream's `cache_target_age` when the run names a version (immutable); a run of
   * the latest version for at most FLAG_SIDECAR_ENDPOINT_RUN_TTL besides, since the endpoint can be edited
   * outside the sidecar.
   */
  async function runUpstream(ctx: RequestContext, body: Buffer | undefined, latest: boolean): Promise<Fetched> {
    if (client === null) return { kind: 'failure', error: offline() };
    const result = await client.request({
      operation: 'endpoint_run',
      method: (ctx.method === 'HEAD' ? 'GET' : ctx.method) as UpstreamRequest['method'],
      path: upstreamTarget(ctx),
      headers: forwardedHeaders(ctx),
      body,
    });
    if (result.kind === 'failure') return { kind: 'failure', error: upstreamFailure(result.cause) };
    const response = responseFrom(result);
    const ok = response.status >= 200 && response.status < 300;
    const freshness = ok ? runFreshness(response.body, now(), deps.runTtlMs, maxRunFreshnessMs) : 0;
    const ttlMs = latest ? Math.min(freshness, deps.runTtlMs) : freshness;
    return { kind: 'answer', response, ttlMs, failed: response.status >= 500 || response.status === 429 };
  }

  /**
   * A run request's body as read: parsed (undefined: not JSON, upstream judges it), the personal key it carries,
   * and its plan. Keyed by what decides them (name, `?version`, Content-Type, the body bytes), so apps repeating
   * a run skip the JSON parse and canonical key; bounded, small bodies only.
   */
  const bodies = new LRUCache<string, RunRead>({ max: 2_000 });

  function readRun(name: string, ctx: RequestContext, raw: Buffer | undefined): RunRead | ApiError {
    const memoKey = raw === undefined || raw.length > 2_048 ? null : `${name}\u0000${ctx.query.get('version') ?? '\u0001'}\u0000${ctx.headers['content-type'] ?? ''}\u0000${raw.toString('latin1')}`;
    const known = memoKey === null ? undefined : bodies.get(memoKey);
    if (known !== undefined) return known;
    let parsed: unknown = null;
    if (raw !== undefined && raw.length > 0) {
      if (isJsonType(ctx.headers['content-type'])) {
        try {
          parsed = parseJsonBody(raw);
        } catch (error) {
          return error as ApiError;
        }
        // A literal `null` body is not the empty body: upstream's request model refuses it, so upstream says so.
        if (parsed === null) parsed = undefined;
      } else parsed = undefined; // not declared JSON (upstream answers 415 to a body without a type): upstream judges it
    }
    const bodyKey = bodyKeyOf(parsed);
    const plan: RunPlan = parsed === undefined || bodyKey !== undefined ? { kind: 'uncached' } : planRun(name, parsed, ctx.query.get('version'));
    const read: RunRead = { parsed, bodyKey, plan, counts: null, lastServed: null, lastReply: null, lastKey: null, lastGrant: null };
    // A body carrying a key is never kept past its request (as the listener treats a query carrying one).
    if (memoKey !== null && bodyKey === undefined) bodies.set(memoKey, read);
    return read;
  }

  /** Replies for cache hits, one per Served object (the cache reuses those per entry and second of age). */
  const hitReply = createReplyMemo();

  /** The last run body each keep-alive connection sent (by its auth memo), to skip even the memo's hashing. */
  const lastBodies = new WeakMap<object, { name: string; version: string | undefined; type: string | undefined; raw: Buffer; read: RunRead }>();

  function readRunOnConnection(name: string, ctx: RequestContext, raw: Buffer | undefined): RunRead | ApiError {
    if (raw === undefined) return readRun(name, ctx, raw);
    const version = ctx.query.get('version');
    const type = ctx.headers['content-type'];
    const last = lastBodies.get(ctx.authMemo);
    if (last !== undefined && last.name === name && last.version === version && last.type === type && last.raw.equals(raw)) return last.read;
    const read = readRun(name, ctx, raw);
    // A copy: the body may be a slice of the socket's whole read buffer, which must not be kept alive with it.
    if (!(read instanceof ApiError) && read.bodyKey === undefined && raw.length <= 2_048) lastBodies.set(ctx.authMemo, { name, version, type, raw: Buffer.from(raw), read });
    return read;
  }

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
    const read = readRunOnConnection(ctx.params[1] as string, ctx, raw);
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
    const counts = (read.counts ??= countsOf(name));
    if (plan.kind === 'uncached' || projectId === null) return runUncached(ctx, raw, counts);
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
      grant = { projectId, digest: caller.digest, kind: caller.kind, key: grantKey(caller, projectId, name), epoch: -1, until: 0 };
      read.lastGrant = grant;
    }
    if (grant.epoch !== grantEpoch) {
      grant.until = grants.get(grant.key) ?? 0;
      grant.epoch = grantEpoch;
    }
    const at = now();
    const granted = grant.until > at;
    if (plan.kind === 'cached' && granted) {
      const hit = runs.hit(last.key, projectId, at);
      if (hit !== undefined) {
        counts.cache += 1;
        // The reply of the last hit with this body, while the cache hands out the same Served object.
        if (read.lastServed !== hit) {
          read.lastServed = hit;
          read.lastReply = hitReply(hit);
        }
        return read.lastReply as Reply;
      }
    }
    const run: RunTarget = { ctx, raw, plan, projectId, endpointKey: last.endpointKey, generation: last.generation, key: last.key, grant: grant.key, counts };
    if (plan.kind !== 'cached') return runOwn(run, undefined);
    if (granted || shared === null) return granted ? runGranted(run, undefined) : runOwn(run, undefined);
    // Not granted here: the fleet may hold a grant for the key (kept here too from then on).
    return lookupShared(run).then((found) => {
      if (found === null || found.grantUntil <= now()) return runOwn(run, found);
      grants.set(run.grant, Math.min(found.grantUntil, now() + deps.grantTtlMs));
      grantEpoch += 1;
      return runGranted(run, found);
    });
  }

  /** Fleet mode: the run's generation, result and grant in Redis (null: not known). */
  const lookupShared = (run: RunTarget): Promise<SharedLookup | null> =>
    shared === null ? Promise.resolve(null) : shared.lookup(run.projectId, run.ctx.params[1] as string, run.plan.key, run.grant);

  /**
   * A granted caller's run: from the run cache, the fleet's (fleet mode; `found`: already looked up), or
   * upstream, shared with concurrent callers.
   */
  function runGranted(run: RunTarget, found: SharedLookup | null | undefined): Reply | Promise<Reply> {
    const { ctx, raw, plan, projectId, counts } = run;
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
      counts.failed += 1;
      throw error;
    }
    if (!(served instanceof Promise)) return servedReply(run, served, ranOwn);
    return served.then(
      (result) => servedReply(run, result, ranOwn),
      (error: unknown) => {
        counts.failed += 1;
        throw error;
      },
    );
  }


  /** The answer a granted caller got from the run cache (or a fetch it joined). */
  function servedReply(run: RunTarget, served: Served, ranOwn: boolean): Reply | Promise<Reply> {
    // An error answered to another key's run it joined (that key's 403, its per-key 429) is not this caller's:
    // it runs with its own key.
    if (!ranOwn && served.source === 'upstream' && (served.response.status < 200 || served.response.status >= 300)) return runOwn(run, undefined);
    run.counts[served.source] += 1;
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
    if (status >= 200 && status < 300) {
      const until = now() + deps.grantTtlMs;
      grants.set(run.grant, until);
      grantEpoch += 1;
      void shared?.setGrant(run.projectId, run.grant, until);
    } else if (status === 401 || status === 403 || status === 404) {
      grants.delete(run.grant);
      grantEpoch += 1;
      void shared?.setGrant(run.projectId, run.grant, null);
    }
    // (A pinned version's 404 usually means only that version is unknown: nothing else is retired for it.)
    if (status === 404 && run.plan.latest) {
      generations.bump(run.endpointKey, true);
      void shared?.retire(run.projectId, run.ctx.params[1] as string);
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
    void shared.store(run.projectId, run.ctx.params[1] as string, run.plan.key, gen, fetched.response, fetched.ttlMs);
    return fetched;
  }

  async function runUncached(ctx: RequestContext, raw: Buffer | undefined, counts: EndpointRunCounts): Promise<Reply> {
    const fetched = await runUpstream(ctx, raw, true);
    if (fetched.kind === 'failure') {
      counts.failed += 1;
      throw fetched.error;
    }
    counts.upstream += 1;
    return buildReply({ response: fetched.response, source: 'upstream', ageMs: 0 });
  }

  /**
   * The caller's own run upstream (no grant yet, a forced refresh, or a joined run that failed for its own key),
   * whose answer refreshes the entry. Concurrent identical runs of one key share it (not forced ones: each must
   * run).
   */
  async function runOwn(run: RunTarget, found: SharedLookup | null | undefined): Promise<Reply> {
    const { plan, key, grant, counts } = run;
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
    if (fetched.kind === 'failure') {
      counts.failed += 1;
      throw fetched.error;
    }
    const current = generations.of(run.endpointKey, plan.latest);
    if (fetched.ttlMs > 0 && current === run.generation) runs.set(key, run.projectId, fetched.response, fetched.ttlMs);
    counts.upstream += 1;
    return buildReply({ response: fetched.response, source: 'upstream', ageMs: 0 });
  }

  /**
   * PATCH/PUT and DELETE: forwarded; then the endpoint's cached runs are retired: of the latest version after an
   * update that leaves the endpoint active, else all (upstream answers 404 to any run of an inactive endpoint).
   */
  const endpointWrite =
    (route: ScopedRoute, all: boolean): Handler =>
    async (ctx) => {
      let reply: Reply;
      try {
        reply = await writes.forward(route, 'cached', ctx);
      } catch (error) {
        // No answer (a 502/504 here): the write may have been applied, so every cached run of it is retired.
        for (const id of projectsOf(ctx.params[0])) generations.bump(`${id}\u0000${ctx.params[1] as string}`, true);
        throw error;
      }
      // As for flag writes: a write that may have been applied (2xx/3xx, 5xx) retires what it may have changed.
      if (reply.status < 400 || reply.status >= 500) {
        const retireAll = all || !(reply.status >= 200 && reply.status < 300 && stillActive(reply.body));
        for (const id of projectsOf(ctx.params[0])) generations.bump(`${id}\u0000${ctx.params[1] as string}`, retireAll);
      }
      return reply;
    };

  /** last_execution_times: identical bodies from one key within the TTL share one upstream answer. */
  async function lastExecutionTimes(ctx: RequestContext): Promise<Reply> {
    const raw = await readBody(ctx.request, deps.maxBodyBytes);
    let parsed: unknown = undefined;
    if (isJsonType(ctx.headers['content-type'])) {
      try {
        parsed = parseJsonBody(raw);
      } catch {
        parsed = undefined;
      }
    }
    const bodyKey = bodyKeyOf(parsed);
    if (parsed === undefined || bodyKey !== undefined) return writes.forward('endpoint_last_execution_times', 'none', ctx, raw);
    const { caller, projectId } = await access.authorize('endpoint_last_execution_times', 'upstream', ctx, ctx.params[0] ?? null);
    if (client === null) throw offline();
    const path = ctx.path.endsWith('/') ? ctx.path.slice(0, -1) : ctx.path;
    const key = `${caller.digest}:${caller.kind}\u0000endpoint_last_execution_times\u0000${path}\u0000${ctx.rawQuery}\u0000${canonicalJson(parsed)}`;
    const served = await deps.cache.get(key, projectId, async () => {
      const result = await client.request({
        operation: 'endpoint_last_execution_times',
        method: 'POST',
        path: upstreamTarget(ctx),
        headers: forwardedHeaders(ctx),
        body: raw,
      });
      if (result.kind === 'failure') return { kind: 'failure', error: upstreamFailure(result.cause) };
      const response = responseFrom(result);
      const ok = response.status >= 200 && response.status < 300;
      return { kind: 'answer', response, ttlMs: ok ? Math.min(deps.ttl.okMs, 5_000) : 0, failed: response.status >= 500 };
    });
    return buildReply(served);
  }

  const versionTtl: RouteTtl = { okMs: deps.versionTtlMs, notFoundMs: deps.ttl.notFoundMs };
  const table: Array<[ScopedRoute, string[], string, RouteHandler]> = [
    ['endpoint_list', ['GET'], '', reads.handler('endpoint_list', deps.ttl)],
    ['endpoint_create', ['POST'], '', writes.handler('endpoint_create', 'cached')],
    ['endpoint_last_execution_times', ['POST'], '/last_execution_times', lastExecutionTimes],
    ['endpoint_retrieve', ['GET'], '/:name', reads.handler('endpoint_retrieve', deps.ttl)],
    ['endpoint_update', ['PATCH', 'PUT'], '/:name', endpointWrite('endpoint_update', false)],
    ['endpoint_delete', ['DELETE'], '/:name', endpointWrite('endpoint_delete', true)],
    ['endpoint_materialization_status', ['GET'], '/:name/materialization_status', reads.handler('endpoint_materialization_status', deps.ttl)],
    ['endpoint_openapi', ['GET'], '/:name/openapi.json', reads.handler('endpoint_openapi', deps.ttl)],
    ['endpoint_run', ['GET', 'POST'], '/:name/run', run],
    ['endpoint_versions', ['GET'], '/:name/versions', reads.handler('endpoint_versions', deps.ttl)],
    ['endpoint_version', ['GET'], '/:name/versions/:version_number', reads.handler('endpoint_version', versionTtl)],
  ];
  const routes: Route[] = [];
  for (const prefix of ['/api/projects/:project_id/endpoints', '/api/environments/:project_id/endpoints']) {
    for (const [name, methods, path, handler] of table) routes.push({ name, methods, template: prefix + path, handler });
  }
  return { routes, retire: (projectId, name) => generations.bump(`${projectId}\u0000${name}`, true) };
}
