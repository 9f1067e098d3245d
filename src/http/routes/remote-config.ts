/**
 * remote_config (op 11): `GET …/feature_flags/:id/remote_config` by flag id or key, upstream's body verbatim
 * (a JSON string, an empty 200, or an empty 404). A flag whose remote config some caller has read is kept warm
 * (upstream/remote-config-warmer.ts: fetched and refreshed with the sidecar's own key) and served from memory to
 * every caller of that key's credential kind whom the sidecar itself has verified for the project (as for
 * local_evaluation: feature_flag:read on that project, confirmed by upstream for keys the sidecar cannot
 * describe). Everything else, and every read until the warm entry exists, reads through the per-key cache.
 */
import type { Metrics } from '../../metrics/metrics.js';
import { credentialClass, type RemoteConfigWarmer, type WarmEntry } from '../../upstream/remote-config-warmer.js';
import type { Handler, Reply, RequestContext } from '../router.js';
import type { Access, Authorized } from './access.js';
import type { ReadThroughRoutes, RouteTtl } from './read-through.js';

/** Dependencies of remoteConfigHandler. */
export interface RemoteConfigDeps {
  readonly access: Access;
  readonly reads: ReadThroughRoutes;
  /** null offline or when nothing is kept warm. */
  readonly warmer: RemoteConfigWarmer | null;
  readonly ttl: RouteTtl;
  readonly metrics: Metrics;
  readonly now: () => number;
}

/** Query parameters that do not change upstream's answer (project selection and the credential). */
const neutralParams = new Set(['token', 'api_key', 'personal_api_key']);

/** The remote_config handler. */
export function remoteConfigHandler(deps: RemoteConfigDeps): Handler {
  const { access, reads, warmer, ttl, metrics, now } = deps;
  const route = 'flag_remote_config';

  function warmReply(entry: WarmEntry): Reply {
    return reads.reply({ response: entry.response, source: 'cache', ageMs: Math.max(0, now() - entry.fetchedAt) });
  }

  async function serve(ctx: RequestContext, authorized: Authorized): Promise<Reply> {
    const { caller, projectId } = authorized;
    const flag = ctx.params[1] as string;
    if (warmer !== null && projectId !== null && [...ctx.query.keys()].every((name) => neutralParams.has(name))) {
      const cls = credentialClass(caller.kind);
      const warm = warmer.get(projectId, flag, cls);
      if (warm !== undefined) {
        // Served from what the sidecar's own key fetched: the caller must be verified here, not only by upstream.
        await access.authorize(route, 'local', ctx, ctx.params[0] ?? null);
        metrics.cacheLookups.inc({ cache: 'remote_config', result: 'hit' });
        return warmReply(warm);
      }
      metrics.cacheLookups.inc({ cache: 'remote_config', result: 'miss' });
      if (cls === warmer.ownClass) warmer.want(projectId, flag);
    }
    return reads.reply(await reads.lookup(route, ctx, ttl, false, authorized));
  }

  return (ctx) => {
    const authorized = access.authorize(route, 'upstream', ctx, ctx.params[0] ?? null);
    return authorized instanceof Promise ? authorized.then((a) => serve(ctx, a)) : serve(ctx, authorized);
  };
}
