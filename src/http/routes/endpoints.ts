/**
 * Named query endpoints (operations 19–27 of docs/api-compatibility.md, plus list, create and retrieve;
 * PostHog's `products/endpoints/backend/api.py`), under `/api/projects/:id/endpoints` and upstream's alias
 * `/api/environments/:id/endpoints`:
 * - read through with the caller's key: list, retrieve, materialization_status (21), openapi.json (22),
 *   versions (25), and versions/:n (26) kept for FLAG_SIDECAR_ENDPOINT_VERSION_TTL (a version never changes);
 * - forwarded: create, PATCH/PUT (19), DELETE (20); after one that may have applied, the project's cached reads
 *   are dropped, and so are the endpoint's cached runs of its latest version (PATCH leaving it active) or all of
 *   them (DELETE, or a PATCH that deactivates it or whose outcome is unknown);
 * - last_execution_times (27): a POST that reads, so identical bodies from one key share a short-lived answer;
 * - run (23 GET, 24 POST): results shared between callers (endpoint-run.ts).
 *
 * Fleet mode: `retire` drops an endpoint's runs here when another sidecar wrote to it.
 */
import type { ScopedRoute } from '../../auth/scopes.js';
import { offline, upstreamFailure } from '../../errors.js';
import type { ReadThroughCache } from '../../store/read-through.js';
import { createRunGenerations } from '../../store/run-generations.js';
import type { Store } from '../../store/store.js';
import { bodyKeyOf, isJsonType, isRecord, parseJsonBody, readBody } from '../body.js';
import { forwardedHeaders, responseFrom, upstreamTarget } from '../forward.js';
import type { Handler, Reply, RequestContext, Route, RouteHandler } from '../router.js';
import { createEndpointRun, type EndpointRunDeps } from './endpoint-run.js';
import { canonicalJson, isDigits } from './endpoint-run-plan.js';
import type { WriteRoutes } from './flag-writes.js';
import { buildReply, type ReadThroughRoutes, type RouteTtl } from './read-through.js';

/** Dependencies of endpointRoutes: those of the run handler, and the reads and writes beside it. */
export interface EndpointRouteDeps extends EndpointRunDeps {
  readonly store: Store;
  readonly reads: ReadThroughRoutes;
  readonly writes: WriteRoutes;
  /** The shared read-through cache (last_execution_times answers live there, per key). */
  readonly cache: ReadThroughCache;
  readonly ttl: RouteTtl;
  readonly versionTtlMs: number;
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

/** The endpoint routes, under both of upstream's prefixes, and `retire(project, name)`: drop an endpoint's cached runs. */
export function endpointRoutes(deps: EndpointRouteDeps, metricNames: readonly string[]): { routes: Route[]; retire: (projectId: number, name: string) => void } {
  const { access, reads, writes, client } = deps;
  const generations = createRunGenerations(10_000);
  const run = createEndpointRun(deps, generations, metricNames);

  /** Projects a write addresses: the path's numeric id, else (`@current`) every served project. */
  const projectsOf = (param: string | undefined): readonly number[] =>
    param !== undefined && isDigits(param) ? [Number(param)] : deps.store.projectIds();

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
