/**
 * OAuth access tokens (`pha_…`) as the fake PostHog's Django routes take them, after upstream's source:
 * - posthog/auth.py, OAuthAccessTokenAuthentication: only a Bearer token in the Authorization header that starts
 *   with `pha_`, looked up as given; unknown → 401 "Invalid access token.", expired → 401 "Access token has
 *   expired." (and PersonalAPIKeyAuthentication skips a `pha_` header token, so where OAuth is not among the
 *   authenticators — `/api/personal_api_keys/@current/` — upstream answers 401 not_authenticated);
 * - posthog/permissions.py, APIScopePermission.has_permission: the token's space-separated `scope`, no scopes →
 *   403 "OAuth token has no scopes and cannot access this resource"; then check_team_and_org_permissions (the
 *   token's scoped_teams, then scoped_organizations); then `*`, or the scope with write implying read; then
 *   TeamMemberAccessPermission (the token's user must reach the project).
 */

/** An OAuth access token the fake knows. */
export interface FakeOAuthToken {
  /** Space-separated scopes, as OAuthAccessToken.scope stores them. */
  scope: string;
  scoped_teams?: number[];
  /** Organization scoping (the fake gives every project one organization, `org-<project id>`). */
  scoped_organizations?: string[];
  /** Past its `expires`. */
  expired?: boolean;
  /** Projects whose member the token's user is (default: all). */
  member_of?: number[];
}

/** An answer of the fake: status and JSON body. */
export interface OAuthRefusal {
  status: 401 | 403;
  body: { type: 'authentication_error'; code: string; detail: string; attr: null };
}

const fail = (status: 401 | 403, code: string, detail: string): OAuthRefusal => ({ status, body: { type: 'authentication_error', code, detail, attr: null } });

/** The presented Authorization header's token when it is one upstream's OAuth authenticator takes, else undefined. */
export function oauthToken(authorization: string | undefined): string | undefined {
  const token = /^Bearer\s+(\S.+)$/.exec(authorization ?? '')?.[1]?.trim();
  return token?.startsWith('pha_') ? token : undefined;
}

/**
 * Upstream's refusal of OAuth token `token` on a project route needing `scope` (null: an action without one)
 * on `projectId`, or null when it may call it.
 */
export function oauthRefusal(tokens: ReadonlyMap<string, FakeOAuthToken>, token: string, projectId: number, scope: string | null): OAuthRefusal | null {
  const found = tokens.get(token);
  if (found === undefined) return fail(401, 'authentication_failed', 'Invalid access token.');
  if (found.expired === true) return fail(401, 'authentication_failed', 'Access token has expired.');
  const scopes = found.scope.split(/\s+/).filter((s) => s !== '');
  if (scopes.length === 0) return fail(403, 'permission_denied', 'OAuth token has no scopes and cannot access this resource');
  // (The wording of the upstream whose personal-key refusals the rest of the fake replays.)
  if (scope === null) return fail(403, 'permission_denied', 'This action does not support Personal API Key access');
  const teams = found.scoped_teams ?? [];
  if (teams.length > 0 && !teams.includes(projectId)) return fail(403, 'permission_denied', `API key does not have access to the requested project: ID ${projectId}.`);
  const orgs = found.scoped_organizations ?? [];
  if (orgs.length > 0 && !orgs.includes(`org-${projectId}`)) return fail(403, 'permission_denied', `API key does not have access to the requested organization: ID org-${projectId}.`);
  const writeOf = scope.replace(/:read$/, ':write');
  if (!scopes.some((s) => s === '*' || s === scope || s === writeOf)) return fail(403, 'permission_denied', `API key missing required scope '${scope}'`);
  if (found.member_of && !found.member_of.includes(projectId)) return fail(403, 'permission_denied', "You don't have access to the project.");
  return null;
}
