import { PostHog } from 'posthog-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { exampleDefinitions, get, upstreamKey } from '../support/fixtures.js';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

// The 402 ETag trap (issue 15 item 7): posthog-node 5.70 drops its flags on a 402 but keeps its ETag. When the
// quota lifts with the same definitions, a 304 to its next conditional request would leave it without flags
// until the definitions change; the sidecar serves a new ETag once the project leaves the quota-limited state,
// so the SDK's next poll gets the full body.
const token = 'phc_quotatoken';
let upstream: FakeUpstream;
let sidecar: TestSidecar | null = null;
let client: PostHog | null = null;

beforeEach(async () => {
  upstream = await startFakeUpstream({ projects: { 1: { token, definitions: exampleDefinitions() } }, keys: [upstreamKey] });
  vi.spyOn(console, 'warn').mockImplementation(() => undefined); // the SDK warns on every 402
});
afterEach(async () => {
  await client?.shutdown();
  client = null;
  await sidecar?.stop();
  sidecar = null;
  await upstream.close();
  vi.restoreAllMocks();
});

const quotaLimited = async (s: TestSidecar): Promise<boolean> => {
  const body = (await (await fetch(`${s.opsUrl}/status`)).json()) as { projects: Array<{ quota_limited: boolean }> };
  return body.projects[0]?.quota_limited === true;
};
const user = { personProperties: { country: 'US', email: 'dev1@example.com', plan: 'pro' }, onlyEvaluateLocally: true };
const flagCount = async (sdk: PostHog): Promise<number> => Object.keys(await sdk.getAllFlags('user-1', user)).length;
const definitionsPath = `/flags/definitions?token=${token}&send_cohorts`;

describe('posthog-node after a 402', () => {
  it('gets its flags back on its next poll once upstream recovers with the same definitions', async () => {
    const s = (sidecar = await startTestSidecar(
      {
        FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
        FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
        FLAG_SIDECAR_PROJECTS: `1:${token}`,
        FLAG_SIDECAR_POLL_INTERVAL: '150ms',
      },
      { random: () => 0.5 },
    ));
    await waitFor(() => s.store.ready(), 'the first poll', 10_000);
    const before = await get(s.apiUrl + definitionsPath, { authorization: `Bearer ${upstreamKey}` });
    expect(before.headers.get('etag')).toBe(upstream.etag(1));

    const sdk = (client = new PostHog(token, { host: s.apiUrl, personalApiKey: upstreamKey, featureFlagsPollingInterval: 200, disableGeoip: true }));
    expect(await sdk.waitForLocalEvaluationReady(10_000)).toBe(true);
    const flags = await flagCount(sdk);
    expect(flags).toBeGreaterThan(0);

    // Quota limited: the sidecar answers 402 as upstream does, and the SDK drops its flags (keeping its ETag).
    upstream.setQuotaLimited(1, true);
    await waitFor(() => quotaLimited(s), 'the sidecar to see the 402', 10_000);
    await waitFor(async () => (await flagCount(sdk)) === 0, 'the SDK to drop its flags', 10_000);

    // The quota lifts, the definitions are the same: upstream answers the sidecar's poll with 304.
    upstream.setQuotaLimited(1, false);
    await waitFor(async () => !(await quotaLimited(s)), 'the sidecar to leave the quota-limited state', 10_000);
    await waitFor(async () => (await flagCount(sdk)) === flags, "the SDK's flags to come back", 10_000);

    // Served: a new ETag for the same bytes, stable from then on; an old ETag gets the full body.
    const after = await get(s.apiUrl + definitionsPath, { authorization: `Bearer ${upstreamKey}` });
    expect(after.text).toBe(before.text);
    expect(after.headers.get('etag')).not.toBe(before.headers.get('etag'));
    const stale = await get(s.apiUrl + definitionsPath, { authorization: `Bearer ${upstreamKey}`, 'if-none-match': String(before.headers.get('etag')) });
    expect(stale.status).toBe(200);
    const fresh = await get(s.apiUrl + definitionsPath, { authorization: `Bearer ${upstreamKey}`, 'if-none-match': String(after.headers.get('etag')) });
    expect(fresh.status).toBe(304);
    // The sidecar still asks upstream with upstream's own ETag, and upstream still answers 304.
    const last = upstream.polls().at(-1);
    expect(last?.headers['if-none-match']).toBe(upstream.etag(1));
  });
});
