import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { bearer, upstreamKey } from '../support/fixtures.js';

// The fake's named query endpoints API behaves like the seed-era upstream (`products/endpoints/backend/api.py`).
let upstream: FakeUpstream;
const base = (project = 1) => `${upstream.url}/api/projects/${project}/endpoints`;
const empty = { flags: [], group_type_mapping: {}, cohorts: {} };

beforeAll(async () => {
  upstream = await startFakeUpstream({
    projects: { 1: { token: 'phc_one', definitions: empty, secretKey: 'phs_one' }, 2: { token: 'phc_two', definitions: empty } },
    keys: [upstreamKey],
    personalKeys: {
      phx_reader: { scopes: ['endpoint:read'] },
      phx_writer: { scopes: ['endpoint:write'] },
      phx_flags: { scopes: ['feature_flag:read'] },
      phx_two: { scopes: ['*'], scoped_teams: [2] },
      phx_legacy: { scopes: null },
    },
  });
});
afterAll(async () => upstream.close());
beforeEach(() => upstream.endpointsApi.reset());

async function call(url: string, key: string | null, init: { method?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = { ...(key === null ? {} : bearer(key)), 'content-type': 'application/json' };
  const body = init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
  const response = await fetch(url, { method: init.method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>) };
}
const errorBody = (type: string, code: string, detail: string, attr: string | null = null) => ({ type, code, detail, attr });
const hogql = (query: string, extra: Record<string, unknown> = {}) => ({ kind: 'HogQLQuery', query, ...extra });
const withVariable = (sql: string, code: string, value: unknown) => hogql(sql, { variables: { 'var-1': { variableId: 'var-1', code_name: code, value } } });

describe('fake endpoints API', () => {
  it('create → retrieve → PATCH query → versions → run a version → DELETE → 404', async () => {
    const created = await call(`${base()}/`, 'phx_writer', { body: { name: 'daily_signups', query: hogql('SELECT 1'), description: 'Signups', cache_age_seconds: 600 } });
    expect(created.status).toBe(201);
    expect(Object.keys(created.json ?? {})).toEqual([
      'id', 'name', 'description', 'query', 'parameters', 'is_active', 'cache_age_seconds', 'endpoint_path', 'created_at', 'updated_at',
      'created_by', 'is_materialized', 'current_version', 'versions_count', 'derived_from_insight', 'materialization',
    ]);
    expect(created.json).toMatchObject({
      name: 'daily_signups', description: 'Signups', parameters: {}, is_active: true, cache_age_seconds: 600, endpoint_path: '/api/environments/1/endpoints/daily_signups/run',
      is_materialized: false, current_version: 1, versions_count: 1, derived_from_insight: null, materialization: { can_materialize: true, reason: null },
      query: { kind: 'HogQLQuery', query: 'SELECT 1', explain: null, variables: null, version: null },
    });
    expect(created.json?.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);

    const retrieved = await call(`${upstream.url}/api/environments/1/endpoints/daily_signups`, 'phx_reader');
    expect(retrieved.json).toEqual(created.json);

    // Same query (nulls omitted): no new version; description alone: none either.
    const same = await call(`${base()}/daily_signups`, 'phx_writer', { method: 'PATCH', body: { query: hogql('SELECT 1'), description: 'Still signups' } });
    expect(same.json).toMatchObject({ current_version: 1, versions_count: 1, description: 'Still signups' });
    const changed = await call(`${base()}/daily_signups/`, 'phx_writer', { method: 'PATCH', body: { query: hogql('SELECT 2'), name: 'ignored' } });
    expect(changed.json).toMatchObject({ name: 'daily_signups', current_version: 2, versions_count: 2, query: { query: 'SELECT 2' } });

    const versions = await call(`${base()}/daily_signups/versions`, 'phx_reader');
    expect(Array.isArray(versions.json)).toBe(true);
    const list = versions.json as unknown as Array<Record<string, unknown>>;
    expect(list.map((v) => [v.version, (v.query as { query: string }).query])).toEqual([[2, 'SELECT 2'], [1, 'SELECT 1']]);
    expect(list[0]?.created_at).toMatch(/\.\d{6}\+00:00$/);
    expect((await call(`${base()}/daily_signups/versions/1/`, 'phx_reader')).json).toEqual(list[1]);
    expect(await call(`${base()}/daily_signups/versions/7`, 'phx_reader')).toMatchObject({ status: 404, text: '{"error":"Version 7 not found"}' });

    const v1 = await call(`${base()}/daily_signups/run?version=1`, 'phx_reader');
    expect(Object.keys(v1.json ?? {})[0]).toBe('results');
    expect(v1.json).toMatchObject({ results: [['daily_signups', 1, 1, '{}', 'null', 'null']], endpoint_version: 1, is_cached: false, timezone: 'UTC' });
    const latest = await call(`${base()}/daily_signups/run`, 'phx_reader', { body: {} });
    expect(latest.json).toMatchObject({ results: [['daily_signups', 2, 2, '{}', 'null', 'null']], endpoint_version: 2, is_cached: false });
    expect(latest.json?.endpoint_version_created_at).toBe(list[0]?.created_at);
    expect(latest.json).not.toHaveProperty('cache_key');

    const deleted = await call(`${base()}/daily_signups`, 'phx_writer', { method: 'DELETE' });
    expect(deleted).toMatchObject({ status: 204, text: '' });
    for (const path of ['', '/versions', '/run', '/openapi.json']) {
      expect(await call(`${base()}/daily_signups${path}`, 'phx_reader')).toMatchObject({ status: 404, json: errorBody('invalid_request', 'not_found', 'Not found.') });
    }
    expect(upstream.endpointsApi.runs(1, 'daily_signups')).toBe(2);
    expect(upstream.endpointsApi.counts()).toMatchObject({ create: 1, retrieve: 2, partial_update: 2, versions: 2, version_detail: 2, run: 3, destroy: 1 });
  });

  it('caches runs for cache_age_seconds; force_blocking and other inputs run again', async () => {
    const api = upstream.endpointsApi;
    api.seed(1, { name: 'weekly', query: withVariable('SELECT {variables.country}', 'country', 'US'), cache_age_seconds: 300 });
    const run = (body: unknown) => call(`${base()}/weekly/run`, 'phx_reader', { body });
    const first = await run({ variables: { country: 'FR' } });
    expect(first.json).toMatchObject({ results: [['weekly', 1, 1, '{"country":"FR"}', 'null', 'null']], is_cached: false });
    const again = await run({ variables: { country: 'FR' }, client_query_id: 'abc' });
    expect(again.json).toMatchObject({ results: [['weekly', 1, 1, '{"country":"FR"}', 'null', 'null']], is_cached: true, last_refresh: first.json?.last_refresh });
    const refresh = Date.parse(String(first.json?.last_refresh));
    expect(Date.parse(String(first.json?.cache_target_age)) - refresh).toBe(300_000);
    expect(Date.parse(String(first.json?.next_allowed_client_refresh)) - refresh).toBe(60_000);

    expect((await run({})).json?.results).toEqual([['weekly', 1, 2, '{"country":"US"}', 'null', 'null']]);
    expect((await run({ variables: { country: 'FR' }, refresh: 'force_blocking' })).json).toMatchObject({ is_cached: false, results: [['weekly', 1, 3, '{"country":"FR"}', 'null', 'null']] });
    api.advance(240_000);
    expect((await run({ variables: { country: 'FR' } })).json).toMatchObject({ is_cached: true, results: [['weekly', 1, 3, '{"country":"FR"}', 'null', 'null']] });
    api.advance(120_000);
    expect((await run({ variables: { country: 'FR' } })).json).toMatchObject({ is_cached: false, results: [['weekly', 1, 4, '{"country":"FR"}', 'null', 'null']] });
    expect((await run({ variables: { nope: 1 } })).json).toEqual(errorBody('validation_error', 'invalid_input', "Variable 'nope' not found in query"));
    expect(api.runs(1, 'weekly')).toBe(4);
    expect(api.runCalls().map((c) => [c.status, c.cached, c.runNumber])).toEqual([[200, false, 1], [200, true, 1], [200, false, 2], [200, false, 3], [200, true, 3], [200, false, 4], [400, null, null]]);
    expect(api.runCalls()[1]?.body).toEqual({ variables: { country: 'FR' }, client_query_id: 'abc' });

    const times = await call(`${base()}/last_execution_times`, 'phx_reader', { body: { names: ['weekly', 'never'] } });
    expect(times.json).toMatchObject({ query_status: { team_id: 1, complete: true, error: false } });
    const rows = (times.json?.query_status as { results: Array<[string, string]> }).results;
    expect(rows.map((r) => r[0])).toEqual(['weekly']);
    expect(Number.isNaN(Date.parse(rows[0]?.[1] ?? ''))).toBe(false);
    expect((await call(`${base()}/last_execution_times/`, 'phx_reader', { body: { names: [] } })).json).toMatchObject({ query_status: { results: null } });
    expect((await call(`${base()}/last_execution_times`, 'phx_reader', { body: { names: ['1bad'] } })).json).toEqual(errorBody('validation_error', 'invalid_input', 'Invalid endpoint name: 1bad'));
  });

  it('refuses runs like upstream', async () => {
    const api = upstream.endpointsApi;
    api.seed(1, { name: 'sql', query: hogql('SELECT 1'), previousQueries: [hogql('SELECT 0')] });
    api.seed(1, { name: 'trend', query: { kind: 'TrendsQuery', series: [], interval: 'day' } });
    api.seed(1, { name: 'off', is_active: false });
    const run = (name: string, body?: unknown, query = '') => call(`${base()}/${name}/run${query}`, 'phx_reader', body === undefined ? {} : { body });
    expect((await run('off')).json).toEqual(errorBody('invalid_request', 'not_found', 'Not found.'));
    expect((await call(`${base()}/off`, 'phx_reader')).status).toBe(200);
    const extra = await run('sql', { foo: 1 });
    expect(extra.status).toBe(400);
    expect(extra.json).toMatchObject({ type: 'invalid_request', code: 'parse_error', attr: null });
    expect(String(extra.json?.detail)).toMatch(/^JSON parse error - 1 validation error for EndpointRunRequest\nfoo\n {2}Extra inputs are not permitted/);
    expect((await run('sql', '{"version":')).json).toMatchObject({ code: 'parse_error' });
    expect((await run('sql', { query_override: { a: 1 } })).json?.detail).toBe('Only variables and filters_override are allowed when executing a HogQL query');
    expect((await run('trend', { variables: { a: 1 } })).json?.detail).toBe('Only query_override and filters_override are allowed when executing an Insight query');
    expect(await run('sql', undefined, '?version=abc')).toMatchObject({ status: 400, text: '{"error":"Invalid version parameter: abc"}' });
    expect(await run('sql', { version: 999 })).toMatchObject({ status: 404, json: { error: "Version 999 not found for endpoint 'sql'", current_version: 2 } });
    expect((await run('sql', { refresh: 'async' })).json).toEqual(errorBody('validation_error', 'invalid_input', 'Only sync modes are supported (refresh param)'));
    expect((await run('sql', { version: 1 }, '?version=2')).json).toMatchObject({ endpoint_version: 1, results: [['sql', 1, 1, '{}', 'null', 'null']] });
    expect((await run('trend', { query_override: { interval: 'week' }, debug: true })).json).toMatchObject({ results: [['trend', 1, 1, '{}', 'null', '{"interval":"week"}']], cache_key: expect.any(String) });

    api.setRunLimit(2);
    expect((await run('sql')).status).toBe(200);
    expect((await call(`${base()}/sql/run`, 'phx_legacy')).status).toBe(200);
    expect((await run('sql')).status).toBe(200);
    const throttled = await run('sql');
    expect(throttled.status).toBe(429);
    expect(throttled.json).toEqual(errorBody('throttled_error', 'throttled', 'Request was throttled. Expected available in 60 seconds.'));
    expect(throttled.headers.get('retry-after')).toBe('60');
    expect((await call(`${base()}/sql`, 'phx_reader')).status).toBe(200);
    api.advance(45_000);
    expect((await run('sql')).json?.detail).toBe('Request was throttled. Expected available in 15 seconds.');
    api.advance(15_000);
    expect((await run('sql')).status).toBe(200);
  });

  it('validates writes like upstream', async () => {
    const post = (body: unknown) => call(`${base()}/`, 'phx_writer', { body });
    expect((await post({ name: 'x' })).json).toEqual(errorBody('validation_error', 'invalid_input', 'Must specify query'));
    expect((await post({ query: hogql('SELECT 1') })).json).toEqual(errorBody('validation_error', 'invalid_input', 'Endpoint must have a name.'));
    expect((await post({ name: '1x', query: hogql('SELECT 1') })).json?.detail).toMatch(/^Endpoint name must start with a letter/);
    expect((await post({ name: 'x', query: hogql('SELECT 1'), cache_age_seconds: 10 })).json).toEqual(
      errorBody('validation_error', 'invalid_input', 'Cache age must be between 300 and 86400 seconds.', 'cache_age_seconds'),
    );
    expect((await post({ name: 'x', query: hogql('SELECT 1') })).status).toBe(201);
    expect((await post({ name: 'x', query: hogql('SELECT 1') })).json).toEqual(errorBody('validation_error', 'invalid_input', 'Failed to create endpoint.'));
    expect((await post('{"name":')).json).toMatchObject({ type: 'invalid_request', code: 'parse_error' });

    const patch = (body: unknown) => call(`${base()}/x`, 'phx_writer', { method: 'PATCH', body });
    expect((await patch({ cache_age_seconds: 90000 })).json?.attr).toBe('cache_age_seconds');
    expect((await patch({ cache_age_seconds: 900, is_active: false })).json).toMatchObject({ cache_age_seconds: 900, is_active: false, current_version: 1 });
    expect((await patch({ cache_age_seconds: null })).json).toMatchObject({ cache_age_seconds: null });
    expect((await patch({ is_materialized: true })).json).toEqual(errorBody('validation_error', 'invalid_input', 'Cannot enable materialization on inactive endpoint.', 'is_materialized'));
    expect((await call(`${base()}/x`, 'phx_writer', { method: 'PUT', body: { is_active: true, is_materialized: true, sync_frequency: '12hour' } })).json).toMatchObject({
      is_materialized: true,
      materialization: { status: 'Unknown', can_materialize: true, last_materialized_at: null, error: '', sync_frequency: '12hour' },
    });
    expect((await patch({ query: withVariable('SELECT {variables.a}', 'a', 1) })).json).toEqual(errorBody('validation_error', 'invalid_input', 'Failed to update endpoint.'));
    expect((await patch({ is_materialized: false })).json).toMatchObject({ is_materialized: false, materialization: { can_materialize: true, reason: null } });
    expect((await call(`${base()}/nope`, 'phx_writer', { method: 'PATCH', body: {} })).status).toBe(404);

    const list = await call(`${base()}?is_active=true`, 'phx_reader');
    expect(Object.keys(list.json ?? {})).toEqual(['results']);
    expect((list.json?.results as Array<{ name: string }>).map((e) => e.name)).toEqual(['x']);
    expect((await call(`${base()}?is_active=false`, 'phx_reader')).json).toEqual({ results: [] });
  });

  it('materialization status, materialized runs and the OpenAPI document', async () => {
    const api = upstream.endpointsApi;
    api.seed(1, { name: 'with-vars', query: withVariable('SELECT {variables.a}', 'a', 1), description: 'Vars' });
    api.seed(1, { name: 'plain', query: hogql('SELECT 1'), previousQueries: [hogql('SELECT 0')] });
    expect((await call(`${base()}/with-vars/materialization_status`, 'phx_reader')).json).toEqual({ can_materialize: false, reason: 'Queries with variables cannot be materialized.' });
    api.setMaterialization(1, 'plain', { status: 'Completed', sync_frequency: '1hour' });
    const status = (await call(`${base()}/plain/materialization_status/`, 'phx_reader')).json;
    expect(status).toMatchObject({ status: 'Completed', can_materialize: true, error: '', sync_frequency: '1hour' });
    const materialized = await call(`${base()}/plain/run`, 'phx_reader');
    expect(materialized.json).toMatchObject({ endpoint_materialized: true, endpoint_materialized_at: status?.last_materialized_at, endpoint_version: 2 });
    expect((await call(`${base()}/plain/run?version=2`, 'phx_reader')).json).not.toHaveProperty('endpoint_materialized');

    const spec = (await call(`${base()}/with-vars/openapi.json`, 'phx_reader')).json as Record<string, any>;
    expect(spec.openapi).toBe('3.0.3');
    expect(spec.info).toEqual({ title: 'with-vars', description: 'Vars', version: '1' });
    const operation = spec.paths['/api/environments/1/endpoints/with-vars/run'].post;
    expect(operation).toMatchObject({ operationId: 'run_with_vars', summary: 'Execute with-vars', security: [{ PersonalAPIKey: [] }] });
    expect(spec.components.schemas.Variables.properties).toEqual({ a: { description: 'Variable: a' } });
    expect(((await call(`${base()}/plain/openapi.json`, 'phx_reader')).json as Record<string, any>).info).toEqual({ title: 'plain', description: 'PostHog Endpoint: plain', version: '2' });
  });

  it('authenticates and scopes like upstream (lenient PATCH, status and last_execution_times)', async () => {
    upstream.endpointsApi.seed(1, { name: 'e1' });
    const denied = (scope: string) => errorBody('authentication_error', 'permission_denied', `API key missing required scope '${scope}'`);
    expect((await call(`${base()}/e1`, 'phx_flags')).json).toEqual(denied('endpoint:read'));
    expect((await call(`${base()}/e1`, 'phx_reader', { method: 'PATCH', body: {} })).json).toEqual(denied('endpoint:write'));
    expect((await call(`${base()}/e1`, 'phx_reader', { method: 'DELETE' })).status).toBe(403);
    expect((await call(`${base()}/e1`, 'phx_writer', { method: 'PATCH', body: { description: 'ok' } })).status).toBe(200);
    expect((await call(`${base()}/e1/run`, 'phx_writer')).status).toBe(200);
    expect((await call(`${base()}/e1/materialization_status`, 'phx_reader')).status).toBe(200);
    expect((await call(`${base()}/last_execution_times`, 'phx_reader', { body: { names: ['e1'] } })).status).toBe(200);
    expect((await call(`${base()}/e1`, 'phx_two')).json).toEqual(errorBody('authentication_error', 'permission_denied', 'API key does not have access to the requested project: ID 1.'));
    expect((await call(`${base(2)}/e1`, 'phx_two')).status).toBe(404);
    expect((await call(`${base(9)}/e1`, 'phx_legacy')).json).toEqual(errorBody('invalid_request', 'not_found', 'Project not found.'));
    expect((await call(`${base()}/e1`, upstreamKey)).status).toBe(200);
    expect((await call(`${base()}/e1`, 'phs_one')).json).toEqual(errorBody('authentication_error', 'authentication_failed', 'Personal API key found in request Authorization header is invalid.'));
    expect((await call(`${base()}/e1`, null)).json).toEqual(errorBody('authentication_error', 'not_authenticated', 'Authentication credentials were not provided.'));
    expect((await call(`${base()}/e1`, 'phx_legacy', { method: 'POST', body: {} })).json).toEqual(errorBody('invalid_request', 'method_not_allowed', 'Method "POST" not allowed.'));
    expect((await call(`${base()}/e1/versions/abc`, 'phx_reader')).json).toEqual(errorBody('invalid_request', 'not_found', 'Endpoint not found.'));
  });
});
