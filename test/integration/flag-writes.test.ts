import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { call, json, startFlagSidecar, startFlagUpstream } from '../support/flag-api-env.js';
import type { TestSidecar } from '../support/start-sidecar.js';

// Writes through the sidecar go upstream once with the caller's key; after a success the caller's very next
// local_evaluation shows the write, even though upstream updates its definitions asynchronously.
let upstream: FakeUpstream;
let sidecar: TestSidecar | null = null;

beforeEach(async () => {
  upstream = await startFlagUpstream();
});
afterEach(async () => {
  await sidecar?.stop();
  sidecar = null;
  await upstream.close();
});

const flagsPath = '/api/projects/1/feature_flags';
const localEvaluation = async (key: string) => {
  const answer = await call(`${sidecar?.apiUrl}${flagsPath}/local_evaluation?send_cohorts`, key);
  return json(answer.text).flags as Array<{ id: number; key: string; active: boolean; version: number }>;
};

describe('forwarded writes with read-your-writes', () => {
  it('shows a PATCH of active in the very next local_evaluation, though upstream applies it late', async () => {
    sidecar = await startFlagSidecar(upstream);
    upstream.flagApi.setDefinitionsLag(300);
    expect((await localEvaluation('phx_writer')).find((f) => f.id === 4)?.active).toBe(true);
    const patched = await call(`${sidecar.apiUrl}${flagsPath}/4/`, 'phx_writer', { method: 'PATCH', body: JSON.stringify({ active: false }) });
    expect(patched.status).toBe(200);
    expect(json(patched.text)).toMatchObject({ id: 4, active: false, version: 2 });
    expect(patched.headers.get('x-flag-sidecar-synced')).toBe('true');
    expect((await localEvaluation('phx_writer')).find((f) => f.id === 4)).toMatchObject({ active: false, version: 2 });
  });

  it('shows a soft delete and a create at once, and drops the cached reads they made wrong', async () => {
    sidecar = await startFlagSidecar(upstream);
    upstream.flagApi.setDefinitionsLag(150);
    const listBefore = json((await call(`${sidecar.apiUrl}${flagsPath}/`, 'phx_writer')).text);
    const deleted = await call(`${sidecar.apiUrl}${flagsPath}/5`, 'phx_writer', { method: 'PATCH', body: JSON.stringify({ deleted: true }) });
    expect(deleted.status).toBe(200);
    expect((await localEvaluation('phx_writer')).some((f) => f.id === 5)).toBe(false);
    const created = await call(`${sidecar.apiUrl}${flagsPath}/`, 'phx_writer', { method: 'POST', body: JSON.stringify({ key: 'brand-new', filters: { groups: [{ properties: [], rollout_percentage: 10 }] } }) });
    expect(created.status).toBe(201);
    const id = json(created.text).id as number;
    expect((await localEvaluation('phx_writer')).find((f) => f.id === id)?.key).toBe('brand-new');
    const listAfter = await call(`${sidecar.apiUrl}${flagsPath}/`, 'phx_writer');
    expect(listAfter.headers.get('x-flag-sidecar-cache')).toBe('miss');
    expect(json(listAfter.text).count).toBe(listBefore.count);
  });

  it('passes upstream validation and conflict errors through untouched', async () => {
    sidecar = await startFlagSidecar(upstream);
    const duplicate = await call(`${sidecar.apiUrl}${flagsPath}/`, 'phx_writer', { method: 'POST', body: JSON.stringify({ key: 'new-checkout' }) });
    expect([duplicate.status, duplicate.text]).toEqual([400, '{"type":"validation_error","code":"unique","detail":"There is already a feature flag with this key.","attr":"key"}']);
    const throttled = '{"type":"throttled_error","code":"throttled","detail":"Request was throttled. Expected available in 1 second.","attr":null}';
    upstream.setMode({ kind: 'status', status: 429, body: throttled });
    const limited = await call(`${sidecar.apiUrl}${flagsPath}/1`, 'phx_writer', { method: 'PATCH', body: '{"name":"x"}' });
    expect([limited.status, limited.text]).toEqual([429, throttled]);
  });

  it('refuses before upstream: missing scope, bad JSON, oversized bodies, personal keys on unscoped actions', async () => {
    sidecar = await startFlagSidecar(upstream, { FLAG_SIDECAR_MAX_REQUEST_BODY: '1KiB' });
    const readOnly = await call(`${sidecar.apiUrl}${flagsPath}/1`, 'phx_reader', { method: 'PATCH', body: '{"active":false}' });
    expect([readOnly.status, json(readOnly.text).detail]).toEqual([403, "API key missing required scope 'feature_flag:write'"]);
    const malformed = await call(`${sidecar.apiUrl}${flagsPath}/1`, 'phx_writer', { method: 'PATCH', body: '{"active":' });
    expect([malformed.status, json(malformed.text).code, json(malformed.text).type]).toEqual([400, 'parse_error', 'invalid_request']);
    const large = await call(`${sidecar.apiUrl}${flagsPath}/1`, 'phx_writer', { method: 'PATCH', body: JSON.stringify({ name: 'x'.repeat(2000) }) });
    expect([large.status, json(large.text).code]).toEqual([413, 'request_too_large']);
    const cohort = await call(`${sidecar.apiUrl}${flagsPath}/1/create_static_cohort_for_flag`, 'phx_writer', { method: 'POST', body: '{}' });
    expect([cohort.status, json(cohort.text).detail]).toEqual([403, 'This action does not support Personal API Key access']);
    const counts = upstream.flagApi.counts();
    expect([counts.partial_update, counts.create_static_cohort_for_flag]).toEqual([undefined, undefined]);
  });

  it('forwards unscoped actions for legacy keys, and takes a key from the JSON body', async () => {
    sidecar = await startFlagSidecar(upstream);
    const cohort = await call(`${sidecar.apiUrl}${flagsPath}/1/create_static_cohort_for_flag/`, 'phx_legacy', { method: 'POST', body: '{}' });
    expect([cohort.status, (json(cohort.text).cohort as { is_static: boolean }).is_static]).toEqual([201, true]);
    const blast = await call(`${sidecar.apiUrl}${flagsPath}/user_blast_radius`, null, {
      method: 'POST',
      body: JSON.stringify({ personal_api_key: 'phx_legacy', condition: { properties: [] } }),
    });
    expect([blast.status, blast.text]).toEqual([200, '{"users_affected":100,"total_users":100}']);
    const noKey = await call(`${sidecar.apiUrl}${flagsPath}/user_blast_radius`, null, { method: 'POST', body: '{"condition":{}}' });
    expect(noKey.status).toBe(401);
  });

  it("judges a write by the path's project: upstream reads ?token= on GET only", async () => {
    sidecar = await startFlagSidecar(upstream);
    const write = await call(`${sidecar.apiUrl}/api/projects/2/feature_flags/1/?token=phc_flagsone`, 'phx_project_two', {
      method: 'PATCH',
      body: '{"name":"x"}',
    });
    expect([write.status, json(write.text).detail]).toEqual([404, 'Not found.']); // upstream's: flag 1 is not project 2's
  });

  it('answers DELETE with an empty 405 after the scope check, locally', async () => {
    sidecar = await startFlagSidecar(upstream);
    const denied = await call(`${sidecar.apiUrl}${flagsPath}/1/`, 'phx_reader', { method: 'DELETE' });
    expect([denied.status, json(denied.text).detail]).toEqual([403, "API key missing required scope 'feature_flag:write'"]);
    const refused = await call(`${sidecar.apiUrl}${flagsPath}/1/`, 'phx_writer', { method: 'DELETE' });
    expect([refused.status, refused.text]).toEqual([405, '']);
    expect(upstream.flagApi.counts().destroy).toBeUndefined();
    // A key upstream would not describe: upstream decides (its scope check, then the same 405).
    const old = await call(`${sidecar.apiUrl}${flagsPath}/1/`, 'phx_old_reader', { method: 'DELETE' });
    expect([old.status, json(old.text).detail]).toEqual([403, "API key missing required scope 'feature_flag:write'"]);
  });

  it('writes one audit line per forwarded write, with the key digest prefix and never the key', async () => {
    sidecar = await startFlagSidecar(upstream);
    await call(`${sidecar.apiUrl}${flagsPath}/2`, 'phx_writer', { method: 'PATCH', body: '{"name":"Audit me"}' });
    const audit = sidecar.logs.filter((l) => l.audit === 'write');
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ route: 'flag_update', method: 'PATCH', project: 1, flag: '2', status: 200, principal: 'fake key', synced: true });
    expect(audit[0]?.keyPrefix).toMatch(/^[0-9a-f]{12}$/);
    expect(JSON.stringify(sidecar.logs)).not.toContain('phx_writer');
  });

  it('answers 502 naming the cause when upstream cannot be reached, and does not retry', async () => {
    sidecar = await startFlagSidecar(upstream);
    await call(`${sidecar.apiUrl}${flagsPath}/1`, 'phx_writer'); // the key is known before upstream goes away
    upstream.setMode({ kind: 'reset' });
    const before = upstream.requests.length;
    const reset = await call(`${sidecar.apiUrl}${flagsPath}/1`, 'phx_writer', { method: 'PATCH', body: '{"name":"lost"}' });
    expect([reset.status, json(reset.text).detail]).toEqual([502, 'Upstream closed the connection (reset).']);
    expect(upstream.requests.slice(before).filter((r) => r.method === 'PATCH')).toHaveLength(1);
  });
});

describe('methods a route does not map', () => {
  it('refuse the caller as upstream does before the 405: 401 without a key, 403 for a scoped key, 405 for a legacy one', async () => {
    sidecar = await startFlagSidecar(upstream);
    const url = `${sidecar.apiUrl}${flagsPath}/activity/`;
    expect(json((await call(url, null, { method: 'PATCH', body: '{}' })).text).code).toBe('not_authenticated');
    const scoped = await call(url, 'phx_reader', { method: 'PATCH', body: '{}' });
    expect([scoped.status, json(scoped.text).detail]).toEqual([403, 'This action does not support Personal API Key access']);
    const legacy = await call(url, 'phx_legacy', { method: 'PATCH', body: '{}' });
    expect([legacy.status, json(legacy.text).detail]).toEqual([405, 'Method "PATCH" not allowed.']);
  });
});

describe('bulk_keys from the snapshot', () => {
  it('answers from memory when every id is known, else asks upstream', async () => {
    sidecar = await startFlagSidecar(upstream);
    const local = await call(`${sidecar.apiUrl}/api/projects/1/feature_flags/bulk_keys/`, 'phx_reader', {
      method: 'POST',
      body: JSON.stringify({ ids: [1, '2', 'x'] }),
    });
    expect([local.status, local.text]).toEqual([200, '{"keys":{"1":"new-checkout","2":"pricing-experiment"},"warning":"Invalid flag IDs ignored: [\'x\']"}']);
    expect(upstream.flagApi.counts().bulk_keys).toBeUndefined();
    const forwarded = await call(`${sidecar.apiUrl}${flagsPath}/bulk_keys`, 'phx_legacy', { method: 'POST', body: JSON.stringify({ ids: [1, 999] }) });
    expect([forwarded.status, forwarded.text]).toEqual([200, '{"keys":{"1":"new-checkout"}}']);
    expect(upstream.flagApi.counts().bulk_keys).toBe(1);
  });
});
