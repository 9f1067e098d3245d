import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createPrincipalResolver, type Principal } from '../../src/auth/principal.js';
import { checkAccess, hasScope, isScopedRoute, routeAccess, type ScopedRoute } from '../../src/auth/scopes.js';
import { loadConfig } from '../../src/config/load.js';
import { createAccess } from '../../src/http/routes/access.js';
import { apiRoutes } from '../../src/http/routes/api.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createReadThroughCache } from '../../src/store/read-through.js';
import { createStore } from '../../src/store/store.js';
import { rootDir } from '../support/start-sidecar.js';

// The table as upstream's code states it (the actions' `required_scopes` in PostHog's `posthog/api/feature_flag.py`,
// `scope_object_*_actions` in `products/endpoints/backend/api.py`), written out again here so
// that a change to src/auth/scopes.ts must be made twice, on purpose. [required scope | null, secret key allowed]
const expected: Record<ScopedRoute, [string | null, boolean]> = {
  flag_list: ['feature_flag:read', false],
  flag_create: ['feature_flag:write', false],
  flag_retrieve: ['feature_flag:read', false],
  flag_update: ['feature_flag:write', false],
  flag_delete: ['feature_flag:write', false],
  flag_activity: ['activity_log:read', false],
  flag_create_static_cohort: [null, false],
  flag_dashboard: [null, false],
  flag_enrich_usage_dashboard: [null, false],
  flag_has_active_dependents: [null, false],
  flag_remote_config: ['feature_flag:read', true],
  flag_status: ['feature_flag:read', false],
  flags_activity: ['activity_log:read', false],
  flag_bulk_keys: ['feature_flag:read', false],
  flag_evaluation_reasons: ['feature_flag:read', false],
  local_evaluation: ['feature_flag:read', true],
  flag_my_flags: [null, false],
  flag_user_blast_radius: [null, false],
  endpoint_update: ['endpoint:write', false],
  endpoint_delete: ['endpoint:write', false],
  endpoint_materialization_status: ['endpoint:read', false],
  endpoint_openapi: ['endpoint:read', false],
  endpoint_run: ['endpoint:read', false],
  endpoint_versions: ['endpoint:read', false],
  endpoint_version: ['endpoint:read', false],
  endpoint_last_execution_times: ['endpoint:read', false],
  endpoint_list: ['endpoint:read', false],
  endpoint_create: ['endpoint:write', false],
  endpoint_retrieve: ['endpoint:read', false],
  legacy_local_evaluation: ['feature_flag:read', true],
  flag_definitions: ['feature_flag:read', true],
  ofrep_evaluate_flag: ['feature_flag:read', true],
  ofrep_evaluate_flags: ['feature_flag:read', true],
  ofrep_configuration: ['feature_flag:read', true],
  key_introspection: ['personal_api_key:read', false],
  method_not_allowed: [null, false],
};

const detail = (error: ReturnType<typeof checkAccess>) => (error === null ? null : `${error.status} ${error.detail}`);

describe('hasScope', () => {
  it.each([
    [['feature_flag:read'], 'feature_flag:read', true],
    [['feature_flag:write'], 'feature_flag:read', true],
    [['feature_flag:read'], 'feature_flag:write', false],
    [['*'], 'feature_flag:write', true],
    [['activity_log:read'], 'feature_flag:read', false],
    [['endpoint:write'], 'endpoint:read', true],
    [[], 'feature_flag:read', false],
  ])('%j grants %s: %s', (scopes, required, result) => expect(hasScope(new Set(scopes), required)).toBe(result));
});

describe('route → scope table', () => {
  it('has exactly the routes of the reference, with their scopes', () => {
    expect(Object.keys(routeAccess).sort()).toEqual(Object.keys(expected).sort());
    for (const [route, [scope, secret]] of Object.entries(expected)) {
      expect(routeAccess[route as ScopedRoute], route).toEqual({ scope, secretKeyAllowed: secret });
    }
  });

  it('covers every route the sidecar serves', () => {
    const config = loadConfig({}, { readFile: (path) => readFileSync(path, 'utf8'), rootDir });
    const store = createStore([]);
    const metrics = createMetrics(new Registry(), { version: 't', commit: 't' });
    const routes = apiRoutes({
      config,
      store,
      access: createAccess({ store, resolver: createPrincipalResolver({ ownKey: null, ownProjects: [], staticKeys: [] }), introspector: null, secretKeys: null, metrics, now: Date.now }),
      cache: createReadThroughCache({ maxBytes: 1 << 20, maxEntries: 10, staleMaxMs: 0, now: Date.now }),
      upstream: null,
      poller: null,
      logger: createLogger('silent'),
      metrics,
      now: Date.now,
    });
    // All 18 flag operations but local_evaluation's own row are here, plus the three SDK paths.
    expect(routes.length).toBeGreaterThanOrEqual(20);
    // The evaluation endpoints are public upstream too: a project token in the body, no API key.
    const publicRoutes = new Set(['flags_evaluate', 'decide_evaluate']);
    for (const route of routes) if (!publicRoutes.has(route.name)) expect(isScopedRoute(route.name), route.name).toBe(true);
    expect(routes.filter((r) => publicRoutes.has(r.name)).map((r) => r.template)).toEqual(['/flags', '/decide']);
  });
});

describe('checkAccess: every route × key kind × scopes × project scoping', () => {
  const scopeSets = [[], ['feature_flag:read'], ['feature_flag:write'], ['activity_log:read'], ['endpoint:read'], ['endpoint:write'], ['*']];
  const projectSets: Array<number[] | null> = [null, [1], [2]];
  const kinds = ['personal', 'oauth', 'secret'] as const;
  const cases: Array<[ScopedRoute, (typeof kinds)[number], string[], number[] | null]> = [];
  for (const route of Object.keys(expected) as ScopedRoute[]) {
    for (const kind of kinds) for (const scopes of scopeSets) for (const projects of projectSets) cases.push([route, kind, scopes, projects]);
  }

  /**
   * The rules of PostHog's `posthog/auth.py` and `APIScopePermission` (`posthog/permissions.py`), stated
   * independently of the implementation.
   */
  function oracle(route: ScopedRoute, kind: string, scopes: string[], projects: number[] | null): string | null {
    const [scope, secretAllowed] = expected[route];
    const granted = (s: string) => scopes.includes('*') || scopes.includes(s) || (s.endsWith(':read') && scopes.includes(s.replace(':read', ':write')));
    const inProject = projects === null || projects.includes(1);
    if (kind === 'secret') {
      if (!secretAllowed) return '401 Personal API key found in request Authorization header is invalid.';
      if (!inProject || (scope !== null && !granted(scope))) return '403 You do not have permission to perform this action.';
      return null;
    }
    if (scope === null) return '403 This action does not support Personal API Key access';
    if (!inProject) return '403 API key does not have access to the requested project: ID 1.';
    if (!granted(scope)) return `403 API key missing required scope '${scope}'`;
    return null;
  }

  it(`decides all ${32 * 3 * 7 * 3} combinations as upstream would`, () => {
    expect(cases).toHaveLength(Object.keys(expected).length * kinds.length * scopeSets.length * projectSets.length);
    for (const [route, kind, scopes, projects] of cases) {
      const principal: Principal = {
        label: 't',
        keyPrefix: '0',
        kind: 'static',
        scopes: new Set(scopes),
        projects: projects === null ? null : new Set(projects),
      };
      const got = detail(checkAccess(principal, { kind, source: 'header' }, route, 1));
      expect(got, `${route} ${kind} ${JSON.stringify(scopes)} ${JSON.stringify(projects)}`).toBe(oracle(route, kind, scopes, projects));
    }
  });

  it('names the query string for a secret key presented there on a route that does not take one', () => {
    const principal: Principal = { label: 't', keyPrefix: '0', kind: 'static', scopes: new Set(['*']), projects: null };
    expect(detail(checkAccess(principal, { kind: 'secret', source: 'query' }, 'flag_list', 1))).toBe(
      '401 Personal API key found in request query string is invalid.',
    );
  });
});
