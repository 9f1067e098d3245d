import { mkdtempSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostHog } from 'posthog-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';
import { removeDir } from '../support/temp-dir.js';

// The official SDK (posthog-node, pinned) evaluates flags locally from what the sidecar serves, and must get
// exactly what it gets when pointed at the upstream directly.
const token = 'phc_contracttoken';
const appKey = 'phx_contract_app_key';
let upstream: FakeUpstream;
let sidecar: TestSidecar;
let dir: string;
const clients: PostHog[] = [];

function sdk(host: string, key: string): PostHog {
  const client = new PostHog(token, { host, personalApiKey: key, featureFlagsPollingInterval: 60_000, disableGeoip: true, flushAt: 1 });
  clients.push(client);
  return client;
}

beforeAll(async () => {
  upstream = await startFakeUpstream({ projects: { 42: { token, definitions: exampleDefinitions() } }, keys: [upstreamKey] });
  dir = mkdtempSync(join(tmpdir(), 'flag-sidecar-contract-'));
  const keysFile = join(dir, 'keys.json');
  const sha256 = createHash('sha256').update(appKey).digest('hex');
  writeFileSync(keysFile, JSON.stringify({ keys: [{ sha256, label: 'contract app', scopes: ['feature_flag:read'], projects: [42] }] }));
  sidecar = await startTestSidecar({
    FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
    FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
    FLAG_SIDECAR_PROJECTS: `42:${token}`,
    FLAG_SIDECAR_KEYS_FILE: keysFile,
  });
  await waitFor(() => sidecar.store.ready(), 'sidecar ready');
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.shutdown()));
  await sidecar.stop();
  await upstream.close();
  removeDir(dir);
});

/** The example's inactive flags (retired-banner). */
const inactive = (exampleDefinitions().flags as Array<{ key: string; active: boolean }>).filter((f) => !f.active).map((f) => f.key);

const countries = ['US', 'CA', 'GB', 'DE', 'FR'];
const users = Array.from({ length: 200 }, (_, i) => ({
  distinctId: `user-${i}`,
  personProperties: {
    country: countries[i % countries.length] as string,
    email: i % 7 === 0 ? `dev${i}@example.com` : `person${i}@mail.test`,
    beta_opt_in: i % 3 === 0 ? 'true' : 'false',
    signup_year: String(2015 + (i % 10)),
    app_version: ['2.3.9', '2.4.0', '2.10.1'][i % 3] as string,
    plan: i % 5 === 0 ? 'pro' : 'free',
  },
  groups: { company: `company-${i % 4}` },
  groupProperties: { company: { plan: i % 4 === 0 ? 'enterprise' : 'startup' } },
}));

describe('posthog-node 5.70 with host = the sidecar', () => {
  it('evaluates every flag for 200 users exactly as against upstream directly', async () => {
    const direct = sdk(upstream.url, upstreamKey);
    const viaSidecar = sdk(sidecar.apiUrl, appKey);
    expect(await direct.waitForLocalEvaluationReady(5000)).toBe(true);
    expect(await viaSidecar.waitForLocalEvaluationReady(5000)).toBe(true);
    const upstreamBefore = upstream.requests.length;

    const seen = new Set<string>();
    for (const user of users) {
      const options = { personProperties: user.personProperties, groups: user.groups, groupProperties: user.groupProperties, onlyEvaluateLocally: true };
      const expected = await direct.getAllFlagsAndPayloads(user.distinctId, options);
      const actual = await viaSidecar.getAllFlagsAndPayloads(user.distinctId, options);
      expect(actual, user.distinctId).toEqual(expected);
      for (const [key, value] of Object.entries(expected.featureFlags ?? {})) seen.add(`${key}=${String(value)}`);
    }
    // The comparison is only meaningful if the users reach every kind of answer.
    for (const answer of ['new-checkout=true', 'new-checkout=false', 'pricing-experiment=control', 'pricing-experiment=annual-first',
      'internal-tools=true', 'beta-programme=true', 'beta-programme=false', 'enterprise-dashboards=true', 'retired-banner=false', 'fast-search=true']) {
      expect(seen, answer).toContain(answer);
    }
    // Evaluating 200 users × 7 flags through the sidecar cost upstream nothing (the sidecar polls every 30 s).
    expect(upstream.requests.slice(upstreamBefore)).toEqual([]);
  });

  it('revalidates with the ETag the sidecar served and gets a 304', async () => {
    const client = sdk(sidecar.apiUrl, appKey);
    await client.waitForLocalEvaluationReady(5000);
    await new Promise((resolve) => setTimeout(resolve, 20)); // let the first load's promise settle
    await client.reloadFeatureFlags();
    const text = await sidecar.registry.metrics();
    expect(text).toMatch(/flag_sidecar_http_requests_total\{route="flag_definitions",status="304"\} [1-9]/);
  });

  it('gets the same answers remotely from the sidecar\'s /flags as by evaluating locally, with no upstream request', async () => {
    const local = sdk(sidecar.apiUrl, appKey);
    const remote = new PostHog(token, { host: sidecar.apiUrl, disableGeoip: true, flushAt: 1 });
    clients.push(remote);
    expect(await local.waitForLocalEvaluationReady(5000)).toBe(true);
    const flagsCallsBefore = upstream.flagsCalls.length;
    for (const user of users.slice(0, 60)) {
      const options = { personProperties: user.personProperties, groups: user.groups, groupProperties: user.groupProperties };
      const expected = await local.getAllFlagsAndPayloads(user.distinctId, { ...options, onlyEvaluateLocally: true });
      // Where the SDK and the server differ: locally it lists an inactive flag as false; upstream's /flags (and so
      // the sidecar's) leaves it out, as its flags service evaluates only active flags.
      for (const key of inactive) delete expected.featureFlags?.[key];
      expect(await remote.getAllFlagsAndPayloads(user.distinctId, options), user.distinctId).toEqual(expected);
      for (const key of ['pricing-experiment', 'internal-tools']) {
        expect(await remote.getFeatureFlag(key, user.distinctId, { ...options, sendFeatureFlagEvents: false })).toEqual(expected.featureFlags?.[key]);
      }
    }
    expect(upstream.flagsCalls.length).toBe(flagsCallsBefore);
    // And an inactive flag asked for by key is undefined remotely (no entry), not false, as against PostHog.
    for (const key of inactive) expect(await remote.getFeatureFlag(key, 'user-1', { sendFeatureFlagEvents: false })).toBeUndefined();
    expect(upstream.flagsCalls.length).toBe(flagsCallsBefore);
  });

  it('has the flags the sidecar cannot decide evaluated upstream, in one call for just those keys', async () => {
    const remote = new PostHog(token, { host: sidecar.apiUrl, disableGeoip: true, flushAt: 1 });
    clients.push(remote);
    const before = upstream.flagsCalls.length;
    // No country: the pricing experiment's condition cannot be decided from what the caller gives.
    const result = await remote.getAllFlagsAndPayloads('user-without-country', { personProperties: { email: 'x@mail.test' } });
    expect(result.featureFlags?.['pricing-experiment']).toBe(true); // the fake upstream's answer
    expect(result.featureFlagPayloads?.['pricing-experiment']).toEqual({ from: 'server' });
    expect(result.featureFlags?.['internal-tools']).toBe(false); // decided locally
    const calls = upstream.flagsCalls.slice(before);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.query).toBe('?v=2');
    expect(calls[0]?.body.flag_keys_to_evaluate).toContain('pricing-experiment');
    expect(calls[0]?.body.flag_keys_to_evaluate).not.toContain('internal-tools');
  });
});
