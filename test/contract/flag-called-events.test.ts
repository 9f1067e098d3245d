import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostHog, type PostHogOptions } from 'posthog-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CapturedEvent } from '../support/fake-capture.js';
import { comparable, shape } from '../support/flag-called.js';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';
import { removeDir } from '../support/temp-dir.js';

// The `$feature_flag_called` events posthog-node builds with host = the sidecar must be the events it builds with
// host = PostHog (here the fake upstream), and reach PostHog as they were sent. The direct run's client has the
// fake upstream as its host for everything; the sidecar run's client has the sidecar as its host for everything —
// flag definitions, /flags, and its /batch/ POSTs, which the sidecar relays (default settings: its events URL is
// the upstream URL) to the same fake upstream. Every event must arrive there exactly once by uuid.
// What legitimately differs between the two runs is listed in test/support/flag-called.ts (`comparable`): each
// event's uuid and timestamp (checked unique and present instead), `$feature_flag_evaluated_at` and
// `$feature_flag_definitions_loaded_at` (times, in the test's window), `$feature_flag_request_id` (non-empty).
// Flag values the sidecar decides while the fake upstream's /flags answers `true` for everything differ too: those
// events are compared by shape (each property's name and type).
const token = 'phc_eventcontract';
// A project opted into slim `$feature_flag_called` events (minimal_flag_called_events).
const slimToken = 'phc_eventcontract_slim';
const appKey = 'phx_event_contract_app_key';
let upstream: FakeUpstream;
let sidecar: TestSidecar;
let dir: string;
const clients: PostHog[] = [];

beforeAll(async () => {
  const definitions = exampleDefinitions();
  const flags = definitions.flags as Array<Record<string, unknown>>;
  // As upstream's definitions carry it; a flag without it would be true (upstream's default, see flags-response tests).
  for (const flag of flags) flag.has_experiment = flag.key === 'pricing-experiment';
  const slim = { ...structuredClone(definitions), minimal_flag_called_events: true };
  upstream = await startFakeUpstream({ projects: { 42: { token, definitions }, 43: { token: slimToken, definitions: slim } }, keys: [upstreamKey] });
  dir = mkdtempSync(join(tmpdir(), 'flag-sidecar-events-contract-'));
  const keysFile = join(dir, 'keys.json');
  const sha256 = createHash('sha256').update(appKey).digest('hex');
  writeFileSync(keysFile, JSON.stringify({ keys: [{ sha256, label: 'events contract', scopes: ['feature_flag:read'], projects: [42, 43] }] }));
  sidecar = await startTestSidecar({
    FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
    FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
    FLAG_SIDECAR_PROJECTS: `42:${token},43:${slimToken}`,
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

type Via = 'upstream' | 'sidecar';

/** A client whose host (for everything) is `via`. */
function sdk(via: Via, local: boolean, projectToken = token): PostHog {
  const options: PostHogOptions = { host: via === 'upstream' ? upstream.url : sidecar.apiUrl, disableGeoip: true, flushAt: 1, featureFlagsPollingInterval: 60_000 };
  if (local) options.personalApiKey = via === 'upstream' ? upstreamKey : appKey;
  const client = new PostHog(projectToken, options);
  clients.push(client);
  return client;
}

/** Events the sidecar accepted and has not forwarded yet. */
async function relayQueued(): Promise<number> {
  const status = (await (await fetch(`${sidecar.opsUrl}/status`)).json()) as { events: { queue: { events: number } } };
  return status.events.queue.events;
}

/**
 * The `$feature_flag_called` events for `distinctId` the fake upstream received after the first `since`, by flag
 * key: exactly `count` of them, with distinct uuids, once the sidecar has nothing left to forward.
 */
async function flagCalls(client: PostHog, since: number, distinctId: string, count: number): Promise<Map<string, CapturedEvent>> {
  await client.flush();
  const mine = (): CapturedEvent[] => upstream.events().slice(since).filter((e) => e.event === '$feature_flag_called' && e.distinctId === distinctId);
  await waitFor(async () => mine().length >= count && (await relayQueued()) === 0, `${count} $feature_flag_called events for ${distinctId}`);
  const events = mine();
  expect(events.length).toBe(count);
  expect(new Set(events.map((e) => e.uuid)).size).toBe(count);
  expect(events.every((e) => typeof e.uuid === 'string' && typeof e.timestamp === 'string')).toBe(true);
  return new Map(events.map((e) => [String(e.properties.$feature_flag), e]));
}

const user = { distinctId: 'event-contract-user', personProperties: { country: 'US', email: 'dev@example.com', plan: 'pro', app_version: '2.10.1' } };
// No country: the sidecar cannot decide pricing-experiment and asks upstream for it; internal-tools it decides.
const partialUser = { distinctId: 'event-contract-partial', personProperties: { email: 'x@mail.test' } };
const keys = ['new-checkout', 'pricing-experiment', 'internal-tools', 'fast-search', 'retired-banner'];

describe('posthog-node $feature_flag_called events: host = the sidecar vs host = upstream', () => {
  it('are the same when the SDK evaluates locally', async () => {
    const from = Date.now();
    const runs = new Map<Via, Map<string, CapturedEvent>>();
    for (const via of ['upstream', 'sidecar'] as const) {
      const client = sdk(via, true);
      expect(await client.waitForLocalEvaluationReady(5000)).toBe(true);
      const since = upstream.events().length;
      const flags = await client.evaluateFlags(user.distinctId, { personProperties: user.personProperties, onlyEvaluateLocally: true });
      for (const key of keys) flags.getFlag(key);
      runs.set(via, await flagCalls(client, since, user.distinctId, keys.length));
    }
    const window = { from, to: Date.now() };
    for (const key of keys) {
      const direct = runs.get('upstream')?.get(key);
      const through = runs.get('sidecar')?.get(key);
      expect(direct?.properties.locally_evaluated, key).toBe(true);
      expect(direct?.properties.$feature_flag_evaluated_at, key).toEqual(expect.any(Number));
      expect(comparable(through?.properties ?? {}, window), key).toEqual(comparable(direct?.properties ?? {}, window));
    }
  });

  it('carry $feature_flag_evaluated_at and the rest of upstream\'s answer when the SDK asks /flags remotely', async () => {
    const from = Date.now();
    const runs = new Map<Via, { all: Map<string, CapturedEvent>; partial: Map<string, CapturedEvent> }>();
    for (const via of ['upstream', 'sidecar'] as const) {
      const client = sdk(via, false);
      const since = upstream.events().length;
      // One /flags call for every flag (evaluateFlags), and one per flag (getFeatureFlag), with flag events on.
      const flags = await client.evaluateFlags(user.distinctId, { personProperties: user.personProperties });
      for (const key of keys) flags.getFlag(key);
      for (const key of ['pricing-experiment', 'internal-tools']) await client.getFeatureFlag(key, partialUser.distinctId, { personProperties: partialUser.personProperties });
      runs.set(via, { all: await flagCalls(client, since, user.distinctId, keys.length), partial: await flagCalls(client, since, partialUser.distinctId, 2) });
    }
    const window = { from, to: Date.now() };
    const direct = runs.get('upstream');
    const through = runs.get('sidecar');
    // The SDK sends upstream's evaluatedAt (ms since the epoch) as $feature_flag_evaluated_at for remote answers.
    for (const event of [...(direct?.all.values() ?? []), ...(through?.all.values() ?? []), ...(through?.partial.values() ?? [])]) {
      expect(event.properties.locally_evaluated).toBe(false);
      expect(comparable(event.properties, window).$feature_flag_evaluated_at, String(event.properties.$feature_flag)).toBe('<ms in window>');
    }
    // Flags the sidecar decided itself: the fake upstream answers every flag `true` ("server"), so values differ;
    // every property the SDK sends from upstream's answer must be there, with the same type.
    for (const key of keys) {
      expect(shape(through?.all.get(key)?.properties ?? {}), key).toEqual(shape(direct?.all.get(key)?.properties ?? {}));
      // retired-banner is inactive: neither answer has an entry for it (upstream evaluates only active flags), so
      // neither event says has_experiment.
      const hasExperiment = key === 'retired-banner' ? undefined : key === 'pricing-experiment';
      expect(through?.all.get(key)?.properties.$feature_flag_has_experiment, key).toBe(hasExperiment);
      expect(direct?.all.get(key)?.properties.$feature_flag_has_experiment, key).toBe(hasExperiment);
    }
    expect(shape(through?.partial.get('internal-tools')?.properties ?? {})).toEqual(shape(direct?.partial.get('internal-tools')?.properties ?? {}));
    // The flag the sidecar asked upstream for: the very event the SDK builds from upstream's own answer.
    const asked = through?.partial.get('pricing-experiment')?.properties ?? {};
    expect(asked.$feature_flag_reason).toBe('server');
    expect(comparable(asked, window)).toEqual(comparable(direct?.partial.get('pricing-experiment')?.properties ?? {}, window));
  });

  it('are slim, as against upstream, when the project opted into minimal flag events', async () => {
    const runs = new Map<Via, Map<string, CapturedEvent>>();
    for (const via of ['upstream', 'sidecar'] as const) {
      const client = sdk(via, false, slimToken);
      const since = upstream.events().length;
      const flags = await client.evaluateFlags(user.distinctId, { personProperties: user.personProperties });
      for (const key of keys) flags.getFlag(key);
      runs.set(via, await flagCalls(client, since, user.distinctId, keys.length));
    }
    const direct = runs.get('upstream');
    // The comparison means something only if upstream's answer made the SDK drop properties (not for an experiment).
    expect(Object.keys(direct?.get('new-checkout')?.properties ?? {})).not.toContain('$feature/new-checkout');
    expect(Object.keys(direct?.get('pricing-experiment')?.properties ?? {})).toContain('$feature/pricing-experiment');
    for (const key of keys) expect(shape(runs.get('sidecar')?.get(key)?.properties ?? {}), key).toEqual(shape(direct?.get(key)?.properties ?? {}));
  });

  it('went through the sidecar\'s relay, every event reaching upstream exactly once by uuid', async () => {
    const counter = async (name: string): Promise<number> => {
      const metrics = await (await fetch(`${sidecar.opsUrl}/metrics`)).text();
      return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics)?.[1] ?? Number.NaN);
    };
    const receivedBefore = await counter('flag_sidecar_events_received_total');
    const since = upstream.events().length;
    // This test's own run (it does not lean on the tests above): captures and flag events, host = the sidecar.
    const client = sdk('sidecar', false);
    const distinctId = 'event-contract-relay';
    for (let i = 0; i < 20; i += 1) client.capture({ distinctId, event: 'relay check', properties: { i } });
    const flags = await client.evaluateFlags(distinctId, { personProperties: user.personProperties });
    for (const key of keys) flags.getFlag(key);
    const calls = await flagCalls(client, since, distinctId, keys.length);
    expect(calls.size).toBe(keys.length);
    await waitFor(() => upstream.events().slice(since).filter((e) => e.distinctId === distinctId).length >= 20 + keys.length, 'the relayed events upstream');
    const mine = upstream.events().slice(since).filter((e) => e.distinctId === distinctId);
    expect(mine.filter((e) => e.event === 'relay check').map((e) => e.properties.i).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(mine.length).toBe(20 + keys.length);
    // Every event came through the relay (the client's only host is the sidecar), and the relay kept none back.
    expect(await counter('flag_sidecar_events_received_total')).toBeGreaterThanOrEqual(receivedBefore + 20 + keys.length);
    expect(await counter('flag_sidecar_events_forwarded_total')).toBe(await counter('flag_sidecar_events_received_total'));
    const uuids = upstream.events().map((e) => e.uuid);
    expect(new Set(uuids).size).toBe(uuids.length);
  });
});
