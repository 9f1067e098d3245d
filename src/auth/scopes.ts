/**
 * Pure authorization: the route → required scope table and the check, in upstream's order
 * (reference/flags-api.md §2.2): project scoping first, then scopes, where `*` allows everything and
 * `<object>:write` implies `<object>:read`. Project secret keys reach only the routes that accept them.
 */
import { ApiError, missingScope, permissionDenied, projectNotInKeyScope } from '../errors.js';
import type { Principal } from './principal.js';

/** What a route requires of a caller. */
export interface RouteAccess {
  readonly scope: string;
  /** Whether a project secret key (`phs_…`) may call it (local_evaluation, remote_config, SDK polls). */
  readonly secretKeyAllowed: boolean;
}

/** The access rules of each route name. */
export const routeAccess = {
  local_evaluation: { scope: 'feature_flag:read', secretKeyAllowed: true },
  legacy_local_evaluation: { scope: 'feature_flag:read', secretKeyAllowed: true },
  flag_definitions: { scope: 'feature_flag:read', secretKeyAllowed: true },
} as const satisfies Record<string, RouteAccess>;

/** A route name with access rules. */
export type ScopedRoute = keyof typeof routeAccess;

/** True when `scopes` grant `required` (`*`, the scope itself, or write for read). */
export function hasScope(scopes: ReadonlySet<string>, required: string): boolean {
  if (scopes.has('*') || scopes.has(required)) return true;
  return required.endsWith(':read') && scopes.has(`${required.slice(0, -':read'.length)}:write`);
}

/** Null when `principal` (holding a key of `kind`) may call `route` on `projectId`, else upstream's refusal. */
export function checkAccess(
  principal: Principal,
  kind: 'secret' | 'oauth' | 'personal',
  route: ScopedRoute,
  projectId: number,
): ApiError | null {
  const access: RouteAccess = routeAccess[route];
  if (kind === 'secret') {
    if (!access.secretKeyAllowed) return permissionDenied();
    if (principal.projects !== null && !principal.projects.has(projectId)) return permissionDenied();
  } else if (principal.projects !== null && !principal.projects.has(projectId)) {
    return projectNotInKeyScope(projectId);
  }
  if (!hasScope(principal.scopes, access.scope)) return missingScope(access.scope);
  return null;
}
