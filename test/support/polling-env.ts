/**
 * One project polled from a fake upstream: the setting of the polling, persistence and upstream-fault tests.
 * Project 1 serves the example definitions under `projectOneToken`; `pollingEnv` polls it every 150 ms with
 * 300 ms timeouts, so faults and recoveries show within a test.
 */
import { afterEach } from 'vitest';
import { startFakeUpstream, type FakePersonalKey, type FakeUpstream } from './fake-upstream.js';
import { exampleDefinitions, upstreamKey } from './fixtures.js';
import type { TestSidecar } from './start-sidecar.js';

/** Project 1's token. */
export const projectOneToken = 'phc_projectonetoken';
/** Project 1's snapshot (the local_evaluation read with cohorts). */
export const snapshotPath = '/api/projects/1/feature_flags/local_evaluation/?send_cohorts';

/** Start the fake upstream: project 1 with the example definitions, the sidecar's own key, and `personalKeys` if given. */
export function startProjectOneUpstream(personalKeys?: Record<string, FakePersonalKey>): Promise<FakeUpstream> {
  return startFakeUpstream({
    projects: { 1: { token: projectOneToken, definitions: exampleDefinitions() } },
    keys: [upstreamKey],
    ...(personalKeys ? { personalKeys } : {}),
  });
}

/** Sidecar env polling project 1 of `upstream` every 150 ms, with 300 ms upstream and connect timeouts. */
export const pollingEnv = (upstream: FakeUpstream): Record<string, string> => ({
  FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
  FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
  FLAG_SIDECAR_PROJECTS: `1:${projectOneToken}`,
  FLAG_SIDECAR_POLL_INTERVAL: '150ms',
  FLAG_SIDECAR_UPSTREAM_TIMEOUT: '300ms',
  FLAG_SIDECAR_UPSTREAM_CONNECT_TIMEOUT: '300ms',
});

/** The sidecar's /status body. */
export const status = async (s: TestSidecar) => (await (await fetch(`${s.opsUrl}/status`)).json()) as { projects: Array<Record<string, any>> };

/** The example definitions plus flag `flagKey` (id 99), on for everyone. */
export const withFlag = (flagKey: string) => {
  const defs = exampleDefinitions();
  (defs.flags as unknown[]).push({ id: 99, key: flagKey, active: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
  return defs;
};

/** Holders for a test's fake upstream and sidecar: after each test the sidecar is stopped, the upstream closed, both cleared. */
export function perTestServers(): { upstream: FakeUpstream | null; sidecar: TestSidecar | null } {
  const held: { upstream: FakeUpstream | null; sidecar: TestSidecar | null } = { upstream: null, sidecar: null };
  afterEach(async () => {
    await held.sidecar?.stop();
    await held.upstream?.close();
    held.sidecar = null;
    held.upstream = null;
  });
  return held;
}
