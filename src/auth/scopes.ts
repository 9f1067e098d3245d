/**
 * Pure authorization: the route → required scope table for every operation of docs/api-compatibility.md (1–27),
 * the endpoint list/create/retrieve routes and the SDK paths, and the check, in upstream's order
 * (`APIScopePermission` in PostHog's `posthog/permissions.py`): operations without a scope refuse personal keys, then
 * project scoping, then scopes, where `*` allows everything and `<object>:write` implies `<object>:read`. Project
 * secret keys (`phs_…`) reach only the routes that accept them, and only their own projects.
 */
import {
  ApiError,
  invalidPersonalKey,
  missingScope,
  permissionDenied,
  personalKeyNotSupported,
  projectNotInKeyScope,
  type KeySource,
} from '../errors.js';
import type { Principal } from './principal.js';

/** What a route requires of a caller. */
export interface RouteAccess {
  /** The scope a personal key needs; null: upstream refuses personal keys for this operation. */
  readonly scope: string | null;
  /** Whether a project secret key (`phs_…`) may call it (local_evaluation, remote_config, SDK polls). */
  readonly secretKeyAllowed: boolean;
}

const read = (scope: string, secretKeyAllowed = false): RouteAccess => ({ scope, secretKeyAllowed });
const none: RouteAccess = { scope: null, secretKeyAllowed: false };

/**
 * Every route name of the sidecar → its access rule. Operation numbers are those of docs/api-compatibility.md.
 * Where the sidecar answers from the snapshot (bulk_keys, evaluation_reasons) it asks `feature_flag:read`.
 * Endpoint operations 19, 21 and 27 take the scopes current upstream gives them (`scope_object_read_actions` and
 * `scope_object_write_actions` of PostHog's `products/endpoints/backend/api.py`),
 * not the seed era's refusal: a forwarded request is decided by upstream anyway. The evaluation endpoints
 * (/flags, /decide) are not here: like upstream's they take a project token, not a key (routes/evaluate.ts).
 */
export const routeAccess = {
  flag_list: read('feature_flag:read'), // 1
  flag_create: read('feature_flag:write'), // 2
  flag_retrieve: read('feature_flag:read'), // 3
  flag_update: read('feature_flag:write'), // 4 (PATCH, PUT)
  flag_delete: read('feature_flag:write'), // 5 (then 405)
  flag_activity: read('activity_log:read'), // 6
  flag_create_static_cohort: none, // 7
  flag_dashboard: none, // 8
  flag_enrich_usage_dashboard: none, // 9
  flag_has_active_dependents: none, // 10
  flag_remote_config: read('feature_flag:read', true), // 11
  flag_status: read('feature_flag:read'), // 12
  flags_activity: read('activity_log:read'), // 13
  flag_bulk_keys: read('feature_flag:read'), // 14 (served from the snapshot)
  flag_evaluation_reasons: read('feature_flag:read'), // 15 (evaluated locally)
  local_evaluation: read('feature_flag:read', true), // 16
  flag_my_flags: none, // 17
  flag_user_blast_radius: none, // 18
  endpoint_update: read('endpoint:write'), // 19
  endpoint_delete: read('endpoint:write'), // 20
  endpoint_materialization_status: read('endpoint:read'), // 21
  endpoint_openapi: read('endpoint:read'), // 22
  endpoint_run: read('endpoint:read'), // 23, 24 (GET and POST)
  endpoint_versions: read('endpoint:read'), // 25
  endpoint_version: read('endpoint:read'), // 26
  endpoint_last_execution_times: read('endpoint:read'), // 27
  endpoint_list: read('endpoint:read'),
  endpoint_create: read('endpoint:write'),
  endpoint_retrieve: read('endpoint:read'),
  legacy_local_evaluation: read('feature_flag:read', true),
  flag_definitions: read('feature_flag:read', true),
  // OpenFeature (OFREP): checked only for projects that require a key (FLAG_SIDECAR_OFREP_REQUIRE_KEY); the key
  // kinds that may read the definitions may read their values.
  ofrep_evaluate_flag: read('feature_flag:read', true),
  ofrep_evaluate_flags: read('feature_flag:read', true),
  ofrep_configuration: read('feature_flag:read', true),
  // `/api/personal_api_keys/@current/`: older upstreams ask this scope; newer ones (and the sidecar,
  // routes/key-introspection.ts) let any valid personal key read its own record.
  key_introspection: read('personal_api_key:read'),
  // A method the route does not map: upstream finds no action, hence no scope, before it answers 405.
  method_not_allowed: none,
} as const satisfies Record<string, RouteAccess>;

/**
 * Routes whose upstream is PostHog's flags service (rust/feature-flags, `api/auth.rs`), not Django: it knows
 * project secret keys and personal keys only, so an OAuth access token there is looked up as a personal key and
 * refused (401). On every other route upstream's Django stack takes OAuth tokens (posthog/api/routing.py,
 * TeamAndOrgViewSetMixin.get_authenticators: OAuthAccessTokenAuthentication).
 */
export const oauthRefusedRoutes: ReadonlySet<string> = new Set(['flag_definitions']);

/** A route name with access rules. */
export type ScopedRoute = keyof typeof routeAccess;

/** True when `route` has an access rule (every API route must). */
export const isScopedRoute = (route: string): route is ScopedRoute => Object.hasOwn(routeAccess, route);

/** True when `scopes` grant `required` (`*`, the scope itself, or write for read). */
export function hasScope(scopes: ReadonlySet<string>, required: string): boolean {
  if (scopes.has('*') || scopes.has(required)) return true;
  return required.endsWith(':read') && scopes.has(`${required.slice(0, -':read'.length)}:write`);
}

/** How the caller presented which kind of key. */
export interface KeyUse {
  readonly kind: 'secret' | 'oauth' | 'personal';
  readonly source: KeySource;
}

/**
 * Null when `principal` may call `route` on `projectId`, else upstream's refusal. A null `projectId` (a request
 * forwarded with `@current` that upstream resolves) skips the project check: upstream makes it.
 */
export function checkAccess(principal: Principal, key: KeyUse, route: ScopedRoute, projectId: number | null): ApiError | null {
  const access: RouteAccess = routeAccess[route];
  if (key.kind === 'secret') {
    // Upstream's secret-key authenticator only runs on these routes; elsewhere the key is tried as a personal one.
    if (!access.secretKeyAllowed) return invalidPersonalKey(key.source);
    if (projectId !== null && principal.projects !== null && !principal.projects.has(projectId)) return permissionDenied();
    return access.scope === null || hasScope(principal.scopes, access.scope) ? null : permissionDenied();
  }
  if (access.scope === null) return principal.legacy === true ? null : personalKeyNotSupported();
  if (projectId !== null && principal.projects !== null && !principal.projects.has(projectId)) return projectNotInKeyScope(projectId);
  if (!hasScope(principal.scopes, access.scope)) return missingScope(access.scope);
  return null;
}
