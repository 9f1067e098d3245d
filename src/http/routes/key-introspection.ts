/**
 * `GET /api/personal_api_keys/@current/` (PostHog's `posthog/api/personal_api_key.py`) answered by the sidecar, so that
 * a sidecar whose upstream is this one (a relay: sidecar → relay → PostHog, docs/operations.md) can introspect its
 * callers' personal keys here, as it would upstream. As newer upstreams do, any valid personal key may read its own
 * record, whatever its scopes; a project secret key in the Authorization header is not a personal key (upstream's 401).
 *
 * The answer is what this sidecar itself trusts, and for no longer: a key introspected upstream is rendered from
 * the remembered answer (upstream asked once per TTL, as for any other route), with the seconds until it expires
 * in `X-Flag-Sidecar-Key-Expires-In` — negative while upstream is unreachable and the answer is used for its
 * grace, so the asking sidecar's grace ends with this one's; a key of the keys file, or the sidecar's own, from
 * what the sidecar grants it, announced for the auth cache TTL. A key upstream would not describe (a 403, or one
 * scoped to organizations) is asked upstream with the caller's own key and upstream's answer passed back, cached
 * per key like any other read; a key that reaches no project is a 403 (the asker then lets grants decide, which
 * this sidecar refuses). Nothing here ever puts the key itself in an answer.
 */
import { unverifiedPrincipal, type Caller } from '../../auth/authenticate.js';
import { keyExpiresInHeader } from '../../auth/introspect.js';
import type { Principal } from '../../auth/principal.js';
import { invalidPersonalKey, permissionDenied, unavailable } from '../../errors.js';
import { jsonReply } from '../respond.js';
import type { Reply, RequestContext, Route } from '../router.js';
import type { Access } from './access.js';
import type { ReadThroughRoutes, RouteTtl } from './read-through.js';

/** Dependencies of keyIntrospectionRoute. */
export interface KeyIntrospectionDeps {
  readonly access: Access;
  readonly reads: ReadThroughRoutes;
  /** Milliseconds until the remembered upstream answer about a key (by digest) expires (auth/introspect.ts); null offline. */
  readonly expiresIn: ((digest: string) => number | null) | null;
  /** Lifetime of a forwarded answer; also what a key known here (keys file, own key) is announced for. */
  readonly ttl: RouteTtl;
}

/**
 * A principal as upstream's key record renders it: what introspect.ts's principalFromRecord reads back into the
 * same scopes, project scoping and legacy flag (scopes null for a legacy key, as seed-era upstreams send them;
 * scoped_teams empty for no project restriction). Null for a key that reaches no project (a keys-file entry with
 * `projects: []`), which a record cannot express: empty scoped_teams would read as every project.
 */
export function keyRecordOf(principal: Principal): Record<string, unknown> | null {
  if (principal.projects !== null && principal.projects.size === 0) return null;
  return {
    label: principal.label,
    value: null,
    scopes: principal.legacy === true ? null : [...principal.scopes],
    scoped_teams: principal.projects === null ? [] : [...principal.projects],
    scoped_organizations: [],
  };
}

/** The route. */
export function keyIntrospectionRoute(deps: KeyIntrospectionDeps): Route {
  const { access, reads } = deps;

  function answer(caller: Caller, ctx: RequestContext): Reply | Promise<Reply> {
    if (caller.kind === 'secret') throw invalidPersonalKey(caller.source);
    if (caller.principal === unverifiedPrincipal) {
      const served = reads.lookup('key_introspection', ctx, deps.ttl, false, { caller, projectId: null });
      return served instanceof Promise ? served.then(reads.reply) : reads.reply(served);
    }
    const principal = caller.principal;
    const leftMs = principal.kind === 'introspected' ? (deps.expiresIn?.(caller.digest) ?? null) : deps.ttl.okMs;
    if (leftMs === null) throw unavailable('This API key cannot be verified right now: upstream is unreachable. Try again shortly.');
    const record = keyRecordOf(principal);
    if (record === null) throw permissionDenied();
    return jsonReply(200, Buffer.from(JSON.stringify(record)), {
      [keyExpiresInHeader]: String(Math.floor(leftMs / 1000)),
      'cache-control': 'no-store',
    });
  }

  return {
    name: 'key_introspection',
    methods: ['GET'],
    template: '/api/personal_api_keys/@current',
    handler: (ctx) => {
      const caller = access.identify(ctx);
      return caller instanceof Promise ? caller.then((c) => answer(c, ctx)) : answer(caller, ctx);
    },
  };
}
