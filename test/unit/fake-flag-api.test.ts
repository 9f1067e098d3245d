import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { bearer, exampleDefinitions, upstreamKey } from '../support/fixtures.js';

// The fake's flag management API behaves like upstream (PostHog's `posthog/api/feature_flag.py`).
let upstream: FakeUpstream;
const token = 'phc_flagapi';
const base = () => `${upstream.url}/api/projects/1/feature_flags`;

beforeAll(async () => {
  const definitions = exampleDefinitions();
  definitions.flags = (definitions.flags as unknown[]).slice(0, 5);
  upstream = await startFakeUpstream({
    projects: { 1: { token, definitions, secretKey: 'phs_one' }, 2: { token: 'phc_two', definitions: { flags: [], group_type_mapping: {}, cohorts: {} } } },
    keys: [upstreamKey],
    personalKeys: { phx_reader: { scopes: ['feature_flag:read'] }, phx_writer: { scopes: ['feature_flag:write', 'activity_log:read'] }, phx_legacy: { scopes: null } },
  });
});
afterAll(async () => upstream.close());

async function call(url: string, key: string, init: RequestInit = {}) {
  const response = await fetch(url, { ...init, headers: { ...bearer(key), 'content-type': 'application/json' } });
  return { status: response.status, text: await response.text() };
}
const json = (text: string) => JSON.parse(text) as Record<string, unknown>;

describe('fake flag management API', () => {
  it('paginates with absolute, sorted links and per-key can_edit', async () => {
    const page = json((await call(`${base()}/?offset=2&limit=2`, 'phx_reader')).text);
    expect(page.count).toBe(5);
    expect(page.next).toBe(`${base()}/?limit=2&offset=4`);
    expect(page.previous).toBe(`${base()}/?limit=2`);
    expect((page.results as Array<{ can_edit: boolean }>).map((f) => f.can_edit)).toEqual([false, false]);
    const searched = json((await call(`${base()}?search=CHECKOUT&limit=1`, 'phx_writer')).text);
    expect(searched).toMatchObject({ count: 1, next: null, previous: null, results: [{ key: 'new-checkout', can_edit: true, version: 3 }] });
  });

  it('answers 404s like upstream', async () => {
    expect(await call(`${base()}/999/`, 'phx_reader')).toEqual({ status: 404, text: '{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}' });
    expect(json((await call(`${upstream.url}/api/projects/9/feature_flags/`, upstreamKey)).text).detail).toBe('Project not found.');
    expect(await call(`${base()}/999/activity/`, 'phx_writer')).toEqual({ status: 404, text: '' });
    expect((await call(`${base()}/1/nope/`, 'phx_reader')).status).toBe(404);
  });

  it('PATCH bumps the version, logs activity and republishes local_evaluation', async () => {
    const patched = await call(`${base()}/1/`, 'phx_writer', { method: 'PATCH', body: JSON.stringify({ active: false, name: 'Renamed' }) });
    expect(patched.status).toBe(200);
    expect(json(patched.text)).toMatchObject({ id: 1, version: 4, active: false, name: 'Renamed' });
    const defs = json((await call(`${upstream.url}/api/projects/1/feature_flags/local_evaluation/`, upstreamKey)).text);
    expect((defs.flags as Array<Record<string, unknown>>)[0]).toMatchObject({ id: 1, version: 4, active: false, name: 'Renamed' });
    expect(defs.group_type_mapping).toEqual(exampleDefinitions().group_type_mapping);
    const log = json((await call(`${base()}/1/activity?limit=1`, 'phx_writer')).text);
    expect(log).toMatchObject({ total_count: 1, next: null, previous: null, results: [{ activity: 'updated', item_id: '1' }] });
    expect(upstream.flagApi.flags(1).find((f) => f.id === 1)?.version).toBe(4);
  });

  it('publishes after the configured lag', async () => {
    upstream.flagApi.setDefinitionsLag(150);
    const created = await call(`${base()}/`, 'phx_writer', { method: 'POST', body: JSON.stringify({ key: 'late-flag' }) });
    expect(json(created.text)).toMatchObject({ key: 'late-flag', version: 1, filters: { groups: [{ properties: [], rollout_percentage: null }] } });
    const keys = async () => ((json((await call(`${upstream.url}/api/projects/1/feature_flags/local_evaluation/`, upstreamKey)).text).flags as Array<{ key: string }>).map((f) => f.key));
    expect(await keys()).not.toContain('late-flag');
    await new Promise((r) => setTimeout(r, 250));
    expect(await keys()).toContain('late-flag');
    upstream.flagApi.setDefinitionsLag(0);
  });

  it('refuses like upstream: validation, scopes, DELETE', async () => {
    const dup = await call(`${base()}/`, 'phx_writer', { method: 'POST', body: JSON.stringify({ key: 'new-checkout' }) });
    expect(dup).toEqual({ status: 400, text: '{"type":"validation_error","code":"unique","detail":"There is already a feature flag with this key.","attr":"key"}' });
    expect((await call(`${base()}/`, 'phx_writer', { method: 'POST', body: '{"key":' })).text).toMatch(/^\{"type":"invalid_request","code":"parse_error","detail":"JSON parse error - /);
    const denied = await call(`${base()}/2/`, 'phx_reader', { method: 'PATCH', body: '{"active":false}' });
    expect(denied).toEqual({ status: 403, text: `{"type":"authentication_error","code":"permission_denied","detail":"API key missing required scope 'feature_flag:write'","attr":null}` });
    expect(json((await call(`${base()}/bulk_keys/`, 'phx_writer', { method: 'POST', body: '{"ids":[1]}' })).text).detail).toBe('This action does not support Personal API Key access');
    expect(json((await call(`${base()}/bulk_keys/`, 'phx_legacy', { method: 'POST', body: '{"ids":[1,"x"]}' })).text)).toEqual({ keys: { 1: 'new-checkout' }, warning: "Invalid flag IDs ignored: ['x']" });
    expect(await call(`${base()}/2/`, 'phx_writer', { method: 'DELETE' })).toEqual({ status: 405, text: '' });
    expect(await call(`${base()}/2/`, 'phx_unknown')).toEqual({ status: 401, text: '{"type":"authentication_error","code":"authentication_failed","detail":"Personal API key found in request Authorization header is invalid.","attr":null}' });
    expect(upstream.flagApi.counts().destroy).toBe(1);
  });

  it('serves remote config double-encoded, redacted for secret keys, and 404 with an empty body', async () => {
    upstream.flagApi.setRemoteConfig(1, 'rc-flag', { payload: '{"test": true}' });
    const viaToken = `${upstream.url}/api/projects/@current/feature_flags/rc-flag/remote_config?token=${token}`;
    expect(await call(viaToken, 'phx_reader')).toEqual({ status: 200, text: '"{\\"test\\": true}"' });
    upstream.flagApi.setRemoteConfig(1, 'rc-flag', { payload: '{"test": true}', encrypted: true });
    expect((await call(viaToken, 'phs_one')).text).toBe('"********* (encrypted)"');
    expect((await call(viaToken, 'phx_reader')).text).toBe('"{\\"test\\": true}"');
    expect(await call(`${base()}/new-checkout/remote_config`, 'phx_reader')).toEqual({ status: 404, text: '' });
    expect((await call(`${upstream.url}/api/projects/2/feature_flags/rc-flag/remote_config`, 'phs_one')).status).toBe(403);
    expect((await call(`${base()}/`, 'phs_one')).status).toBe(401);
  });
});
