/**
 * The README's first request, as curl sends it to what `npm start` serves on a fresh clone (offline, the example
 * snapshot): every flag decided locally, no error. And when a request leaves a flag undecidable offline, the
 * answer says errorsWhileComputingFlags and one warning per flag says why, naming what its conditions read.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { leftOutMessage } from '../../src/http/offline-left-out.js';
import { exampleToken } from '../support/fixtures.js';
import { startTestSidecar, type TestSidecar } from '../support/start-sidecar.js';

let sidecar: TestSidecar | null = null;
afterEach(async () => {
  await sidecar?.stop();
  sidecar = null;
});

/** `curl -X POST '<api>/flags?v=2' -H 'Content-Type: application/json' -d '<body>'`: curl's User-Agent (a server runtime). */
async function curlFlags(api: string, body: string): Promise<{ flags: Record<string, { enabled: boolean; variant: string | null; reason: { code: string } }>; errorsWhileComputingFlags: boolean }> {
  const res = await fetch(`${api}/flags?v=2`, { method: 'POST', headers: { 'content-type': 'application/json', 'user-agent': 'curl/8.5.0' }, body });
  expect(res.status).toBe(200);
  return (await res.json()) as Awaited<ReturnType<typeof curlFlags>>;
}

/** The README's example request body. */
const readmeBody = JSON.stringify({
  token: exampleToken,
  distinct_id: 'user-1',
  person_properties: { email: 'a@example.com', country: 'US', plan: 'pro', beta_opt_in: true, signup_year: 2021 },
});

describe('first contact: POST /flags offline on the example snapshot', () => {
  it("the README's request: every flag decided from the snapshot, no error, nothing to explain", async () => {
    const s = (sidecar = await startTestSidecar({}));
    const answer = await curlFlags(s.apiUrl, readmeBody);
    expect(answer.errorsWhileComputingFlags).toBe(false);
    // Without the header curl sends form data: read as base64, as upstream reads it, and refused.
    const asForm = await fetch(`${s.apiUrl}/flags?v=2`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'curl/8.5.0' }, body: readmeBody });
    expect([asForm.status, await asForm.text()]).toEqual([400, 'Failed to decode request: Base64 decoding error: Invalid symbol 123, offset 0.. Please check your request format and try again.']);
    expect(Object.fromEntries(Object.entries(answer.flags).map(([key, f]) => [key, [f.enabled, f.variant, f.reason.code]]))).toEqual({
      'new-checkout': [false, null, 'out_of_rollout_bound'],
      'pricing-experiment': [true, 'control', 'condition_match'],
      'internal-tools': [true, null, 'condition_match'],
      'beta-programme': [true, null, 'condition_match'],
      'enterprise-dashboards': [false, null, 'no_group_type'],
      'fast-search': [true, null, 'condition_match'],
    });
    // retired-banner is inactive: upstream's flags service leaves it out of every answer.
    expect(s.logs.filter((l) => l.msg === leftOutMessage)).toEqual([]);
  });

  it('a flag the request leaves undecidable: left out with errorsWhileComputingFlags, and one warning per flag naming what it reads', async () => {
    const s = (sidecar = await startTestSidecar({}));
    const onlyEmail = JSON.stringify({ token: exampleToken, distinct_id: 'user-1', person_properties: { email: 'a@example.com' } });
    const answer = await curlFlags(s.apiUrl, onlyEmail);
    expect(answer.errorsWhileComputingFlags).toBe(true);
    expect(Object.keys(answer.flags).sort()).toEqual(['enterprise-dashboards', 'internal-tools', 'new-checkout']);
    await curlFlags(s.apiUrl, onlyEmail); // asked again: nothing more is said
    const warnings = s.logs.filter((l) => l.msg === leftOutMessage);
    expect(warnings.map((l) => [l.level, l.project, l.flag, l.reads])).toEqual([
      ['warn', 1, 'pricing-experiment', { person: ['country'], groups: {}, cohorts: [] }],
      ['warn', 1, 'beta-programme', { person: ['beta_opt_in', 'signup_year'], groups: {}, cohorts: [7] }],
      ['warn', 1, 'fast-search', { person: ['app_version', 'plan'], groups: {}, cohorts: [] }],
    ]);
    expect(warnings[0]?.hint).toContain('person_properties');
  });

  it('flag keys the snapshot does not hold are left out without a warning, so made-up keys cannot use up the warnings', async () => {
    const s = (sidecar = await startTestSidecar({}));
    const madeUp = JSON.stringify({ token: exampleToken, distinct_id: 'user-1', flag_keys: ['no-such-flag', 'another-made-up-flag'] });
    const answer = await curlFlags(s.apiUrl, madeUp);
    expect(Object.keys(answer.flags)).toEqual([]);
    expect(s.logs.filter((l) => l.msg === leftOutMessage)).toEqual([]);
  });
});
