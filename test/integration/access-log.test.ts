/**
 * The access log as an operator reads it: one line per request on every kind of route — snapshot reads, SDK
 * paths, evaluation, captures, read-through, ops — with the route, status, key kind and digest prefix, and a
 * reason for each refusal; and no key or project token in any line, not even a part of one.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { upstreamKey } from '../support/fixtures.js';
import { pollingEnv, projectOneToken, startProjectOneUpstream } from '../support/polling-env.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

const reader = 'phx_accesslogreader7f3a9c2e1b';
const stranger = 'phx_accesslogstranger4d8e6f0a2c';
const inQuery = 'phx_accesslogquerykey9b1c3d5e7f';
const inBody = 'phx_accesslogbodykey2a4c6e8b0d';
const keys = [reader, stranger, inQuery, inBody, upstreamKey];
const sha8 = (key: string): string => createHash('sha256').update(key).digest('hex').slice(0, 8);

let upstream: FakeUpstream;
let sidecar: TestSidecar;
beforeAll(async () => {
  upstream = await startProjectOneUpstream({ [reader]: { scopes: ['*'] }, [inQuery]: { scopes: ['*'] }, [inBody]: { scopes: ['*'] } });
  sidecar = await startTestSidecar({ ...pollingEnv(upstream), FLAG_SIDECAR_EVENTS_URL: upstream.url, FLAG_SIDECAR_ACCESS_LOG: 'all', FLAG_SIDECAR_EVENTS_LINGER: '0ms' });
  await waitFor(() => sidecar.store.ready(), 'the first poll');
});
afterAll(async () => {
  await sidecar.stop();
  await upstream.close();
});

const accessLines = () => sidecar.logs.filter((l) => l.access === true && typeof l.route === 'string');
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

describe('the access log', () => {
  it('one line per request on every kind of route, refusals with their reason; never a key or a token', async () => {
    const api = sidecar.apiUrl;
    const json = { 'content-type': 'application/json' };
    const calls: Array<[string, RequestInit, number]> = [
      [`${api}/api/projects/1/feature_flags/local_evaluation/?send_cohorts`, { headers: bearer(reader) }, 200],
      [`${api}/api/projects/1/feature_flags/local_evaluation/?send_cohorts`, { headers: bearer(upstreamKey) }, 200],
      [`${api}/api/projects/1/feature_flags/local_evaluation/?send_cohorts`, { headers: bearer(stranger) }, 401],
      [`${api}/api/projects/1/feature_flags/local_evaluation/?send_cohorts&personal_api_key=${inQuery}`, {}, 200],
      [`${api}/flags/definitions?token=${projectOneToken}&send_cohorts`, { headers: bearer(reader) }, 200],
      [`${api}/flags/definitions?token=phc_notaprojectofours&send_cohorts`, { headers: bearer(reader) }, 401],
      [`${api}/flags?v=2`, { method: 'POST', headers: json, body: JSON.stringify({ token: projectOneToken, distinct_id: 'u1' }) }, 200],
      [`${api}/api/projects/1/feature_flags/`, { method: 'POST', headers: json, body: JSON.stringify({ personal_api_key: inBody, key: 'created-by-body-key' }) }, 201],
      [`${api}/batch/`, { method: 'POST', headers: json, body: JSON.stringify({ api_key: projectOneToken, batch: [{ event: 'e', distinct_id: 'd' }] }) }, 200],
      [`${api}/api/projects/1/feature_flags/`, { headers: bearer(reader) }, 200],
      [`${sidecar.opsUrl}/status`, {}, 200],
    ];
    const before = accessLines().length;
    for (const [url, init, status] of calls) {
      const res = await fetch(url, init);
      await res.arrayBuffer();
      expect([url, res.status]).toEqual([url, status]);
    }
    await waitFor(() => accessLines().length >= before + calls.length, 'an access line per request');
    const lines = accessLines().slice(before);
    expect(lines.map((l) => [l.route, l.status])).toEqual(calls.map(([, , status], i) => [lines[i]?.route, status]));
    const refused = lines.find((l) => l.status === 401 && l.keySha256 === sha8(stranger));
    expect(refused).toMatchObject({ level: 'info', msg: 'request refused', route: 'local_evaluation', keyKind: 'personal', reason: 'unknown_key' });
    expect(lines.find((l) => l.keySha256 === sha8(inQuery))).toMatchObject({ status: 200, keyKind: 'personal' });
    expect(lines.find((l) => l.keySha256 === sha8(upstreamKey))).toMatchObject({ status: 200, keyKind: 'secret' });
    expect(lines.filter((l) => l.route === 'flag_definitions').map((l) => l.reason ?? null)).toEqual([null, 'authentication_failed']);
    expect(lines.at(-1)).toMatchObject({ route: 'status', level: 'debug' });
    const everything = JSON.stringify(sidecar.logs);
    for (const secret of [...keys, projectOneToken, 'phc_notaprojectofours']) {
      expect(everything).not.toContain(secret.slice(4, 16)); // not even a part of one
    }
  });
});
