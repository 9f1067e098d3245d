import { request } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

// Personal keys the sidecar has never seen are introspected upstream once, cached by digest, and checked
// against upstream's scope rules locally; refusals never reach upstream.
let upstream: FakeUpstream;
/** OAuth access tokens of upstream's shape (`pha_` + base 57 of 32 bytes), by what the fake lets them do. */
const oauth = {
  reader: `pha_${'Rdr2'.repeat(11)}`,
  writer: `pha_${'Wrt3'.repeat(11)}`,
  insights: `pha_${'Ins4'.repeat(11)}`,
  otherTeam: `pha_${'Oth5'.repeat(11)}`,
  noScopes: `pha_${'Nos6'.repeat(11)}`,
  expired: `pha_${'Exp7'.repeat(11)}`,
  unknown: `pha_${'Unk8'.repeat(11)}`,
};
let sidecar: TestSidecar | null = null;
const token = 'phc_authtoken';
const path = '/api/projects/1/feature_flags/local_evaluation/?send_cohorts';

beforeEach(async () => {
  upstream = await startFakeUpstream({
    projects: {
      1: { token, definitions: exampleDefinitions(), secretKey: 'phs_projectone' },
      2: { token: 'phc_two', definitions: exampleDefinitions(), secretKey: 'phs_projecttwo' },
    },
    keys: [upstreamKey],
    personalKeys: {
      phx_reader: { scopes: ['feature_flag:read'], scoped_teams: [1] },
      phx_stranger: { scopes: ['*'], member_of: [2] },
      phx_writer: { scopes: ['feature_flag:write'] },
      phx_other_team: { scopes: ['feature_flag:read'], scoped_teams: [2] },
      phx_activity_only: { scopes: ['activity_log:read'] },
      phx_legacy: { scopes: null },
      phx_scoped_old: { scopes: ['feature_flag:read'], scoped_teams: [1], refuseIntrospection: true },
      phx_noscope_old: { scopes: ['activity_log:read'], refuseIntrospection: true },
      phx_org_one: { scopes: ['feature_flag:read'], scoped_organizations: ['org-1'] },
      ...Object.fromEntries(Array.from({ length: 3 }, (_, i) => [`phx_concurrent_${i}`, { scopes: ['*'] }])),
    },
    oauthTokens: {
      [oauth.reader]: { scope: 'openid feature_flag:read' },
      [oauth.writer]: { scope: 'feature_flag:write insight:read', scoped_teams: [1] },
      [oauth.insights]: { scope: 'insight:read' },
      [oauth.otherTeam]: { scope: '*', scoped_teams: [2] },
      [oauth.noScopes]: { scope: '' },
      [oauth.expired]: { scope: 'feature_flag:read', expired: true },
    },
  });
});
afterEach(async () => {
  await sidecar?.stop();
  sidecar = null;
  await upstream.close();
});

const start = (extra: Record<string, string> = {}) =>
  startTestSidecar({
    FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
    FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
    FLAG_SIDECAR_PROJECTS: `1:${token},2:phc_two`,
    FLAG_SIDECAR_POLL_INTERVAL: '30s',
    FLAG_SIDECAR_UPSTREAM_TIMEOUT: '300ms',
    FLAG_SIDECAR_UPSTREAM_CONNECT_TIMEOUT: '300ms',
    ...extra,
  });

/** A GET on a connection of its own (no keep-alive reuse, so no per-connection memo). */
function getFresh(url: string, key: string): Promise<{ status: number; text: string; retryAfter?: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, headers: { authorization: `Bearer ${key}` } }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, retryAfter: res.headers['retry-after'] }));
    });
    req.on('error', reject);
    req.end();
  });
}

const ready = async (s: TestSidecar) => waitFor(() => s.store.ready(), 'first polls');
const detail = (text: string) => (JSON.parse(text) as { detail: string }).detail;

describe('personal keys introspected upstream', () => {
  const grant = '/api/projects/1/feature_flags/local_evaluation/?send_cohorts';
  const introspection = '/api/personal_api_keys/@current/';
  it.each([
    ['phx_reader', 200, null, [introspection, grant]],
    ['phx_writer', 200, null, [introspection, grant]],
    ['phx_legacy', 200, null, [introspection, grant]],
    ['phx_stranger', 403, "You don't have access to the project.", [introspection, grant]],
    ['phx_other_team', 403, 'API key does not have access to the requested project: ID 1.', [introspection]],
    ['phx_activity_only', 403, "API key missing required scope 'feature_flag:read'", [introspection]],
    ['phx_unknown', 401, 'Personal API key found in request Authorization header is invalid.', [introspection]],
  ])('%s → %d; upstream asked only what the sidecar cannot know, once', async (key, status, message, asked) => {
    const s = (sidecar = await start());
    await ready(s);
    const before = upstream.requests.length;
    for (let i = 0; i < 3; i++) {
      const res = await getFresh(s.apiUrl + path, key);
      expect(res.status).toBe(status);
      if (message !== null) expect(detail(res.text)).toBe(message);
    }
    const seen = upstream.requests.slice(before);
    expect(seen.map((r) => r.url)).toEqual(asked);
    expect(seen.every((r) => r.headers.authorization === `Bearer ${key}`)).toBe(true);
  });

  it('on a kept-alive connection, a key granted one project is asked about the next, not refused', async () => {
    const s = (sidecar = await start());
    await ready(s);
    const headers = { authorization: 'Bearer phx_writer' };
    expect((await fetch(s.apiUrl + path, { headers })).status).toBe(200);
    expect((await fetch(`${s.apiUrl}/api/projects/2/feature_flags/local_evaluation/?send_cohorts`, { headers })).status).toBe(200);
    expect((await fetch(s.apiUrl + path, { headers })).status).toBe(200);
    const stranger = { authorization: 'Bearer phx_stranger' };
    expect((await fetch(`${s.apiUrl}/api/projects/2/feature_flags/local_evaluation/?send_cohorts`, { headers: stranger })).status).toBe(200);
    expect((await fetch(s.apiUrl + path, { headers: stranger })).status).toBe(403);
  });

  it('asks again about a rejected key once per negative TTL', async () => {
    const s = (sidecar = await start({ FLAG_SIDECAR_AUTH_NEGATIVE_TTL: '300ms' }));
    await ready(s);
    await getFresh(s.apiUrl + path, 'phx_unknown');
    await getFresh(s.apiUrl + path, 'phx_unknown');
    expect(upstream.introspections()).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 350));
    await getFresh(s.apiUrl + path, 'phx_unknown');
    expect(upstream.introspections()).toHaveLength(2);
  });

  it('100 concurrent first requests with a new key cause one introspection', async () => {
    const s = (sidecar = await start());
    await ready(s);
    upstream.setMode({ kind: 'slow', delayMs: 100 });
    const results = await Promise.all(Array.from({ length: 100 }, () => getFresh(s.apiUrl + path, 'phx_concurrent_0')));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(upstream.introspections()).toHaveLength(1);
    expect(upstream.requests.filter((r) => r.headers.authorization === 'Bearer phx_concurrent_0')).toHaveLength(2);
  });

  it('keeps a cached principal through an outage within the grace period, and not after it', async () => {
    const s = (sidecar = await start({ FLAG_SIDECAR_AUTH_CACHE_TTL: '1s', FLAG_SIDECAR_AUTH_GRACE: '1s' }));
    await ready(s);
    expect((await getFresh(s.apiUrl + path, 'phx_reader')).status).toBe(200);
    await upstream.goDown();
    await new Promise((r) => setTimeout(r, 1200)); // past the TTL, within the grace
    expect((await getFresh(s.apiUrl + path, 'phx_reader')).status).toBe(200);
    expect(await s.registry.metrics()).toMatch(/flag_sidecar_principal_cache_total\{result="stale"\} [1-9]/);
    await new Promise((r) => setTimeout(r, 1000)); // past TTL + grace
    const after = await getFresh(s.apiUrl + path, 'phx_reader');
    expect(after.status).toBe(503);
    expect(JSON.parse(after.text)).toMatchObject({ type: 'server_error', attr: null });
  });

  it('answers 503, never allows, for a key it cannot verify while upstream is down', async () => {
    const s = (sidecar = await start());
    await ready(s);
    await upstream.goDown();
    const res = await getFresh(s.apiUrl + path, 'phx_writer');
    expect(res.status).toBe(503);
    expect(JSON.parse(res.text)).toEqual({
      type: 'server_error',
      code: 'service_unavailable',
      detail: 'This API key cannot be verified right now: upstream is unreachable. Try again shortly.',
      attr: null,
    });
    expect(await s.registry.metrics()).toMatch(/flag_sidecar_auth_denials_total\{reason="unverifiable"\} 1/);
  });

  it('asks upstream about at most 8 keys at once, and answers the rest 429 with Retry-After once they waited too long', async () => {
    const s = (sidecar = await start({ FLAG_SIDECAR_UPSTREAM_TIMEOUT: '10s' }));
    await ready(s);
    // Each introspection takes longer than a key may wait for its turn (3 s): the 8 asked first are all there are.
    upstream.setMode({ kind: 'slow', delayMs: 4500 });
    const keys = Array.from({ length: 80 }, (_, i) => `phx_flood_${i}`);
    const results = await Promise.all(keys.map((key) => getFresh(s.apiUrl + path, key)));
    expect(upstream.introspections()).toHaveLength(8);
    expect(results.filter((r) => r.status === 401)).toHaveLength(8);
    const busy = results.filter((r) => r.status === 429);
    expect(busy).toHaveLength(72);
    expect(busy.every((r) => Number(r.retryAfter) >= 1)).toBe(true);
    expect(busy.every((r) => /^Request was throttled: too many API keys are being verified at once\. Expected available in \d+ seconds?\.$/.test(detail(r.text)))).toBe(true);
  }, 30_000);
});

describe('project secret keys the sidecar does not know', () => {
  const verifications = () => upstream.requests.filter((r) => r.headers.authorization?.startsWith('Bearer phs_project'));

  it('are validated by one conditional upstream request per project, then served from the snapshot', async () => {
    const s = (sidecar = await start());
    await ready(s);
    for (let i = 0; i < 3; i++) expect((await getFresh(s.apiUrl + path, 'phs_projectone')).status).toBe(200);
    expect(verifications()).toHaveLength(1);
    expect(verifications()[0]?.headers['if-none-match']).toBe(upstream.etag(1));
    const sdk = await getFresh(`${s.apiUrl}/flags/definitions?token=${token}&send_cohorts`, 'phs_projectone');
    expect(sdk.status).toBe(200);
    expect(verifications()).toHaveLength(1);
  });

  it("refuse another project's secret key with upstream's 403, and an unknown one with its 401", async () => {
    const s = (sidecar = await start());
    await ready(s);
    const other = await getFresh(s.apiUrl + path, 'phs_projecttwo');
    expect([other.status, detail(other.text)]).toEqual([403, 'You do not have permission to perform this action.']);
    const unknown = await getFresh(s.apiUrl + path, 'phs_nobody');
    expect([unknown.status, detail(unknown.text)]).toEqual([401, 'Personal API key found in request Authorization header is invalid.']);
    await getFresh(s.apiUrl + path, 'phs_projecttwo');
    await getFresh(s.apiUrl + path, 'phs_nobody');
    expect(upstream.requests.filter((r) => /Bearer phs_(projecttwo|nobody)/.test(r.headers.authorization ?? ''))).toHaveLength(2);
  });

  it('are only secret keys in the Authorization header (as upstream: elsewhere they are tried as personal keys)', async () => {
    const s = (sidecar = await start());
    await ready(s);
    const res = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(`${s.apiUrl}${path}&personal_api_key=phs_projectone`, { agent: false }, (r) => {
        let text = '';
        r.on('data', (chunk: Buffer) => (text += chunk.toString()));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end();
    });
    expect([res.status, detail(res.text)]).toEqual([401, 'Personal API key found in request query string is invalid.']);
    expect(verifications().map((r) => r.url)).toEqual(['/api/personal_api_keys/@current/']);
  });

  it("pass upstream's 429 back unremembered, and take its 402 as a grant (the key passed before the quota check)", async () => {
    const s = (sidecar = await start());
    await ready(s);
    const throttled = '{"type":"throttled_error","code":"throttled","detail":"Request was throttled. Expected available in 3 seconds.","attr":null}';
    upstream.setMode({ kind: 'status', status: 429, body: throttled });
    expect(await getFresh(s.apiUrl + path, 'phs_projectone')).toEqual({ status: 429, text: throttled });
    upstream.setMode({ kind: 'status', status: 402, body: '{"type":"quota_limited","detail":"You have exceeded your feature flag request quota","code":"payment_required"}' });
    expect((await getFresh(s.apiUrl + path, 'phs_projectone')).status).toBe(200); // served from the snapshot
    upstream.setMode({ kind: 'normal' });
    await getFresh(s.apiUrl + path, 'phs_projectone');
    expect(verifications()).toHaveLength(2);
  });

  it('answer 503 when upstream cannot vouch for one', async () => {
    const s = (sidecar = await start());
    await ready(s);
    await upstream.goDown();
    expect((await getFresh(s.apiUrl + path, 'phs_projectone')).status).toBe(503);
  });
});

describe('personal keys upstream will not describe (older upstreams)', () => {
  it('fall back to a per-project grant: the first request is asked upstream, the answer remembered', async () => {
    const s = (sidecar = await start());
    await ready(s);
    for (let i = 0; i < 3; i++) expect((await getFresh(s.apiUrl + path, 'phx_scoped_old')).status).toBe(200);
    const other = await getFresh(`${s.apiUrl}/api/projects/2/feature_flags/local_evaluation/?send_cohorts`, 'phx_scoped_old');
    expect([other.status, detail(other.text)]).toEqual([403, 'API key does not have access to the requested project: ID 2.']);
    const denied = await getFresh(s.apiUrl + path, 'phx_noscope_old');
    expect([denied.status, detail(denied.text)]).toEqual([403, "API key missing required scope 'feature_flag:read'"]);
    await getFresh(s.apiUrl + path, 'phx_noscope_old');
    const asked = (key: string) => upstream.requests.filter((r) => r.headers.authorization === `Bearer ${key}`).map((r) => r.url);
    expect(asked('phx_scoped_old')).toEqual([
      '/api/personal_api_keys/@current/',
      '/api/projects/1/feature_flags/local_evaluation/?send_cohorts',
      '/api/projects/2/feature_flags/local_evaluation/?send_cohorts',
    ]);
    expect(asked('phx_noscope_old')).toEqual(['/api/personal_api_keys/@current/', '/api/projects/1/feature_flags/local_evaluation/?send_cohorts']);
  });
});

describe('personal keys scoped to organizations', () => {
  it("are checked per project by upstream (only it knows a project's organization)", async () => {
    const s = (sidecar = await start());
    await ready(s);
    expect((await getFresh(s.apiUrl + path, 'phx_org_one')).status).toBe(200);
    expect((await getFresh(s.apiUrl + path, 'phx_org_one')).status).toBe(200);
    const other = await getFresh(`${s.apiUrl}/api/projects/2/feature_flags/local_evaluation/?send_cohorts`, 'phx_org_one');
    expect([other.status, detail(other.text)]).toEqual([403, 'API key does not have access to the requested organization: ID org-2.']);
    expect(upstream.requests.filter((r) => r.headers.authorization === 'Bearer phx_org_one').map((r) => r.url)).toEqual([
      '/api/personal_api_keys/@current/',
      '/api/projects/1/feature_flags/local_evaluation/?send_cohorts',
      '/api/projects/2/feature_flags/local_evaluation/?send_cohorts',
    ]);
  });
});

describe('OAuth access tokens (pha_…)', () => {
  const grant = '/api/projects/1/feature_flags/local_evaluation/?send_cohorts';
  const asked = (token: string) => upstream.requests.filter((r) => r.headers.authorization === `Bearer ${token}`).map((r) => r.url);

  it('are vouched for by upstream per project with their scopes, remembered by digest, never introspected or logged', async () => {
    const s = (sidecar = await start());
    await ready(s);
    for (const token of [oauth.reader, oauth.writer]) {
      for (let i = 0; i < 3; i++) expect((await getFresh(s.apiUrl + path, token)).status).toBe(200);
      expect(asked(token)).toEqual([grant]);
    }
    // The writer's scoped teams are checked by upstream for the next project, and its refusal replayed.
    const other = await getFresh(`${s.apiUrl}/api/projects/2/feature_flags/local_evaluation/?send_cohorts`, oauth.writer);
    expect([other.status, detail(other.text)]).toEqual([403, 'API key does not have access to the requested project: ID 2.']);
    // Upstream's flags service knows no OAuth tokens: refused as a personal key there, upstream not asked.
    const sdk = await getFresh(`${s.apiUrl}/flags/definitions?token=${token}&send_cohorts`, oauth.reader);
    expect([sdk.status, detail(sdk.text)]).toEqual([401, 'Personal API key is invalid.']);
    expect(asked(oauth.reader)).toEqual([grant]);
    expect(upstream.introspections()).toHaveLength(0);
    expect(JSON.stringify(s.logs)).not.toMatch(/pha_/);
  });

  it("get upstream's own 401 body when upstream does not know them, remembered for the negative TTL", async () => {
    const s = (sidecar = await start());
    await ready(s);
    const expected = (text: string) => ({ type: 'authentication_error', code: 'authentication_failed', detail: text, attr: null });
    for (let i = 0; i < 2; i++) {
      const unknown = await getFresh(s.apiUrl + path, oauth.unknown);
      expect([unknown.status, JSON.parse(unknown.text)]).toEqual([401, expected('Invalid access token.')]);
      const expired = await getFresh(s.apiUrl + path, oauth.expired);
      expect([expired.status, JSON.parse(expired.text)]).toEqual([401, expected('Access token has expired.')]);
    }
    expect([asked(oauth.unknown), asked(oauth.expired)]).toEqual([[grant], [grant]]);
    // A token of a shape upstream never issues is refused here as upstream would, upstream not asked.
    const malformed = await getFresh(s.apiUrl + path, 'pha_not-a-token');
    expect([malformed.status, JSON.parse(malformed.text)]).toEqual([401, expected('Invalid access token.')]);
    expect(asked('pha_not-a-token')).toEqual([]);
  });

  it("get upstream's scope refusal when their scopes lack feature_flag:read, or they have none", async () => {
    const s = (sidecar = await start());
    await ready(s);
    for (const [token, message] of [
      [oauth.insights, "API key missing required scope 'feature_flag:read'"],
      [oauth.noScopes, 'OAuth token has no scopes and cannot access this resource'],
      [oauth.otherTeam, 'API key does not have access to the requested project: ID 1.'],
    ] as const) {
      for (let i = 0; i < 2; i++) {
        const res = await getFresh(s.apiUrl + path, token);
        expect([res.status, detail(res.text)], token).toEqual([403, message]);
      }
      expect(asked(token)).toEqual([grant]);
    }
  });

  it('read through with their own token on routes upstream answers itself, its refusals passed back', async () => {
    const s = (sidecar = await start());
    await ready(s);
    const list = '/api/projects/1/feature_flags/';
    expect((await getFresh(s.apiUrl + list, oauth.reader)).status).toBe(200);
    const denied = await getFresh(s.apiUrl + list, oauth.insights);
    expect([denied.status, detail(denied.text)]).toEqual([403, "API key missing required scope 'feature_flag:read'"]);
    // `@current` is a personal-key route upstream: what it answers for an OAuth token is passed back.
    const record = await getFresh(`${s.apiUrl}/api/personal_api_keys/@current/`, oauth.reader);
    expect([record.status, (JSON.parse(record.text) as { code: string }).code]).toEqual([401, 'not_authenticated']);
    expect([asked(oauth.reader), asked(oauth.insights)]).toEqual([[list, '/api/personal_api_keys/@current/'], [list]]);
  });
});
