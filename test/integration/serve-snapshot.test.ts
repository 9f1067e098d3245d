import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream } from '../support/fake-upstream.js';
import { bearer, exampleKey, exampleToken, get } from '../support/fixtures.js';
import { rootDir, startTestSidecar, type TestSidecar } from '../support/start-sidecar.js';

// Offline sidecar on the example snapshot and keys (what `npm start` serves), called as SDKs and tools call it.
let sidecar: TestSidecar;
const exampleBody = (() => {
  const file = JSON.parse(readFileSync(join(rootDir, 'config/snapshot.example.json'), 'utf8')) as {
    projects: Array<{ local_evaluation: unknown }>;
  };
  return JSON.stringify(file.projects[0]?.local_evaluation);
})();

beforeAll(async () => {
  sidecar = await startTestSidecar({});
});
afterAll(async () => {
  await sidecar.stop();
});

const auth = bearer(exampleKey);
const error = (type: string, code: string, detail: string) => JSON.stringify({ type, code, detail, attr: null });

describe('local_evaluation served from the snapshot', () => {
  it.each([
    '/api/projects/1/feature_flags/local_evaluation/?send_cohorts',
    '/api/projects/1/feature_flags/local_evaluation?send_cohorts',
    '/api/projects/1/feature_flags/local_evaluation/?send_cohorts=false',
    `/flags/definitions?token=${exampleToken}`,
    '/api/projects/@current/feature_flags/local_evaluation/?send_cohorts',
    `/api/projects/999/feature_flags/local_evaluation/?send_cohorts&token=${exampleToken}`,
    `/api/feature_flag/local_evaluation?token=${exampleToken}&send_cohorts`,
    `/api/feature_flag/local_evaluation/?send_cohorts`,
    `/flags/definitions?token=${exampleToken}&send_cohorts`,
  ])('GET %s → 200 with the snapshot bytes and its ETag', async (path) => {
    const res = await get(sidecar.apiUrl + path, auth);
    expect(res.status).toBe(200);
    expect(res.text).toBe(exampleBody);
    expect(res.headers.get('etag')).toMatch(/^W\/"[0-9a-f]{16}"$/);
    expect(res.headers.get('cache-control')).toBe('private, must-revalidate');
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-flag-sidecar-source')).toBe('bootstrap');
    expect(Number(res.headers.get('age'))).toBeGreaterThan(0);
  });

  it('answers If-None-Match with 304, no body, ETag and Cache-Control, in every accepted form', async () => {
    const first = await get(`${sidecar.apiUrl}/flags/definitions?token=${exampleToken}&send_cohorts`, auth);
    const etag = first.headers.get('etag') as string;
    const bare = etag.replace(/^W\//, '').replace(/"/g, '');
    for (const form of [etag, `"${bare}"`, bare, `"other", ${etag}`]) {
      const res = await get(`${sidecar.apiUrl}/flags/definitions?token=${exampleToken}&send_cohorts`, { ...auth, 'if-none-match': form });
      expect(res.status, form).toBe(304);
      expect(res.text).toBe('');
      expect(res.headers.get('etag')).toBe(etag);
      expect(res.headers.get('cache-control')).toBe('private, must-revalidate');
    }
    const stale = await get(`${sidecar.apiUrl}/flags/definitions?token=${exampleToken}&send_cohorts`, { ...auth, 'if-none-match': 'W/"0000000000000000"' });
    expect(stale.status).toBe(200);
  });

  it('serves HEAD like GET without a body', async () => {
    const res = await fetch(`${sidecar.apiUrl}/api/projects/1/feature_flags/local_evaluation/?send_cohorts`, { method: 'HEAD', headers: auth });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(exampleBody)));
    expect(await res.text()).toBe('');
  });

  it('serves the with-cohorts body, marked, when no body without cohorts is known offline', async () => {
    const res = await get(`${sidecar.apiUrl}/api/projects/1/feature_flags/local_evaluation/`, auth);
    expect(res.status).toBe(200);
    expect(res.text).toBe(exampleBody);
    expect(res.headers.get('x-flag-sidecar-variant')).toBe('with-cohorts');
  });
});

describe('refusals with upstream bodies', () => {
  const path = '/api/projects/1/feature_flags/local_evaluation/?send_cohorts';
  it.each([
    ['no credential', path, {}, 401, error('authentication_error', 'not_authenticated', 'Authentication credentials were not provided.')],
    ['a project token alone', `/flags/definitions?token=${exampleToken}`, {}, 401, error('authentication_error', 'not_authenticated', 'Authentication credentials were not provided.')],
    ['/flags/definitions without a token', '/flags/definitions?send_cohorts', auth, 400, 'Failed to deserialize query string: missing field `token`'],
    ['a scheme other than Bearer', path, { authorization: `Basic ${exampleKey}` }, 401, error('authentication_error', 'not_authenticated', 'Authentication credentials were not provided.')],
    ['an unknown key', path, bearer('phx_unknown'), 401, error('authentication_error', 'authentication_failed', 'Personal API key found in request Authorization header is invalid.')],
    ['an unknown key in the query', `${path}&personal_api_key=phx_unknown`, {}, 401, error('authentication_error', 'authentication_failed', 'Personal API key found in request query string is invalid.')],
    // The flags service's TokenValidationError (rust/feature-flags api/errors.rs).
    ['an unknown token', `/flags/definitions?token=phc_nope&send_cohorts`, auth, 401, error('authentication_error', 'authentication_failed', 'The provided API key is invalid or has expired. Please check your API key and try again.')],
    // The service looks the token up before any key (flag_definitions.rs, fetch_team_by_token first).
    ['an unknown token without a key', `/flags/definitions?token=phc_nope`, {}, 401, error('authentication_error', 'authentication_failed', 'The provided API key is invalid or has expired. Please check your API key and try again.')],
    ['an unknown project', '/api/projects/2/feature_flags/local_evaluation/', auth, 404, error('invalid_request', 'not_found', 'Project not found.')],
    ['a non-numeric project', '/api/projects/abc/feature_flags/local_evaluation/', auth, 404, error('invalid_request', 'not_found', 'Project not found.')],
    ['an unknown path', '/api/projects/1/nothing_here/', auth, 404, error('invalid_request', 'not_found', 'Not found.')],
    // Upstream authenticates and finds no action (so no scope) before it looks at the method.
    ['a POST', path, auth, 403, error('authentication_error', 'permission_denied', 'This action does not support Personal API Key access')],
  ])('%s', async (_name, url, headers, status, body) => {
    const res = await fetch(sidecar.apiUrl + url, { headers, method: _name === 'a POST' ? 'POST' : 'GET' });
    expect(res.status).toBe(status);
    expect(await res.text()).toBe(body);
  });

  it('answers an unknown /flags/definitions token as the fake upstream does, before looking at the key', async () => {
    const upstream = await startFakeUpstream({ projects: { 1: { token: exampleToken, definitions: { flags: [] } } }, keys: [exampleKey] });
    try {
      for (const headers of [{}, auth, bearer('phx_unknown'), bearer('phs_unknown')]) {
        const ours = await get(`${sidecar.apiUrl}/flags/definitions?token=phc_nope`, headers);
        const theirs = await get(`${upstream.url}/flags/definitions?token=phc_nope`, headers);
        expect([ours.status, ours.text], JSON.stringify(headers)).toEqual([theirs.status, theirs.text]);
        expect(ours.status).toBe(401);
      }
    } finally {
      await upstream.close();
    }
  });

  it('accepts the key in the query string and tolerates spacing in the header', async () => {
    expect((await get(`${sidecar.apiUrl}${path}&personal_api_key=${exampleKey}`)).status).toBe(200);
    expect((await get(sidecar.apiUrl + path, { authorization: `  Bearer    ${exampleKey}  ` })).status).toBe(200);
  });

  it('counts denials by reason', async () => {
    const text = await sidecar.registry.metrics();
    expect(text).toMatch(/flag_sidecar_auth_denials_total\{reason="no_credential"\} [1-9]/);
    expect(text).toMatch(/flag_sidecar_auth_denials_total\{reason="unknown_key"\} [1-9]/);
  });
});

describe('one keep-alive connection, several keys and routes', () => {
  it('decides each request for its own key, route and project (the connection remembers only the last)', async () => {
    const { Client } = await import('undici');
    const { writeFileSync } = await import('node:fs');
    const { tempDir } = await import('../support/temp-dir.js');
    const { createHash } = await import('node:crypto');
    const dir = tempDir('flag-sidecar-keys-');
    const entry = (key: string, scopes: string[]) => ({ sha256: createHash('sha256').update(key).digest('hex'), label: key, scopes, projects: [1] });
    writeFileSync(join(dir, 'keys.json'), JSON.stringify({ keys: [entry('phx_flags_reader', ['feature_flag:read']), entry('phx_activity_reader', ['activity_log:read'])] }));
    const own = await startTestSidecar({ FLAG_SIDECAR_KEYS_FILE: join(dir, 'keys.json') });
    const client = new Client(own.apiUrl, { pipelining: 1, connections: 1 } as never);
    const flags = '/api/projects/1/feature_flags/local_evaluation/?send_cohorts';
    const steps: Array<[string, string, number]> = [
      ['phx_flags_reader', flags, 200],
      ['phx_flags_reader', flags, 200],
      // Read-through routes (offline here: 503 once authorized), same mode and no query: route and project decide.
      ['phx_flags_reader', '/api/projects/1/feature_flags/1/', 503],
      ['phx_flags_reader', '/api/projects/1/feature_flags/1/activity/', 403], // activity_log:read
      ['phx_flags_reader', '/api/projects/1/feature_flags/1/', 503],
      ['phx_flags_reader', '/api/projects/2/feature_flags/1/', 404],
      ['phx_flags_reader', '/api/projects/1/feature_flags/1/', 503],
      ['phx_flags_reader', flags, 200],
      ['phx_activity_reader', flags, 403],
      ['phx_activity_reader', flags, 403],
      ['phx_flags_reader', flags, 200],
      ['phx_flags_reader', '/api/projects/2/feature_flags/local_evaluation/?send_cohorts', 404], // not served
      ['phx_flags_reader', `/flags/definitions?token=${exampleToken}`, 200],
      ['phx_flags_reader', '/flags/definitions?token=phc_unknown', 401],
      ['phx_flags_reader', flags, 200],
    ];
    const seen: Array<[string, string, number]> = [];
    try {
      for (const [key, path, _status] of steps) {
        const res = await client.request({ path, method: 'GET', headers: bearer(key) });
        await res.body.text();
        seen.push([key, path, res.statusCode]);
      }
    } finally {
      await client.close();
      await own.stop();
    }
    expect(seen).toEqual(steps);
  });
});
