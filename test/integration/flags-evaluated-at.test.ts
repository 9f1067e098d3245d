/**
 * `evaluatedAt` on the sidecar's /flags and /decide answers, as upstream's flags service stamps every body (ms since
 * the epoch; the SDKs send it as `$feature_flag_evaluated_at`): the sidecar's clock when it decided a flag, upstream's
 * own when the whole answer is upstream's. The sidecar's clock runs an hour behind the fake upstream's here, so a
 * test can tell which clock a value came from.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFlagUpstream, tokenOne } from '../support/flag-api-env.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { upstreamKey } from '../support/fixtures.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

const hour = 3_600_000;
let upstream: FakeUpstream;
let sidecar: TestSidecar;

beforeAll(async () => {
  upstream = await startFlagUpstream();
  sidecar = await startTestSidecar(
    { FLAG_SIDECAR_UPSTREAM_URL: upstream.url, FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey, FLAG_SIDECAR_PROJECTS: `1:${tokenOne}`, FLAG_SIDECAR_UPSTREAM_TIMEOUT: '2s' },
    { now: () => Date.now() - hour },
  );
  await waitFor(() => sidecar.store.ready(), 'snapshot');
});

afterAll(async () => {
  await sidecar.stop();
  await upstream.close();
});

const person = { country: 'US', email: 'dev@example.com', app_version: '2.4.1', plan: 'pro' };
const decidable = { token: tokenOne, distinct_id: 'user-7', person_properties: person, evaluation_runtime: 'server' };

/** The answer's evaluatedAt, and the window of real time around the request. */
async function stamp(path: string, body: unknown): Promise<{ evaluatedAt: unknown; from: number; to: number; keys: string[] }> {
  const from = Date.now();
  const response = await fetch(`${sidecar.apiUrl}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  expect(response.status).toBe(200);
  const answer = (await response.json()) as Record<string, unknown>;
  return { evaluatedAt: answer.evaluatedAt, from, to: Date.now(), keys: Object.keys((answer.flags ?? answer.featureFlags) as Record<string, unknown>) };
}

describe('evaluatedAt on /flags and /decide answers', () => {
  it.each([
    ['/flags?v=2', {}],
    ['/flags?v=1', {}],
    ['/decide?v=3', {}],
    ['/decide?v=4', {}],
    ['/flags?v=2', { flag_keys_to_evaluate: ['internal-tools', 'not-in-snapshot'] }],
    ['/flags?v=2', { disable_flags: true }],
  ])('%s %j: the time the sidecar evaluated, in ms since the epoch', async (path, extra) => {
    const { evaluatedAt, from, to } = await stamp(path, { ...decidable, ...extra });
    expect(Number.isSafeInteger(evaluatedAt)).toBe(true);
    expect(evaluatedAt).toBeGreaterThanOrEqual(from - hour - 1);
    expect(evaluatedAt).toBeLessThanOrEqual(to - hour);
  });

  it('upstream\'s own evaluatedAt when every flag in the answer is upstream\'s', async () => {
    const { evaluatedAt, from, to, keys } = await stamp('/flags?v=2', { ...decidable, flag_keys_to_evaluate: ['not-in-snapshot'] });
    expect(keys).toEqual(['not-in-snapshot']);
    expect(evaluatedAt).toBeGreaterThanOrEqual(from);
    expect(evaluatedAt).toBeLessThanOrEqual(to);
  });
});
