/**
 * The topology for large fleets (docs/operations.md, "Large fleets: the relay tier"): app pods' sidecars, without
 * Redis, poll a relay Service; behind it two relay replicas (real processes of src/main.ts) share the run's Redis
 * in fleet mode, so PostHog sees the polls of one of them, the leader. The pods serve and evaluate flags from
 * memory, forward writes through the relay with read-your-writes, and keep serving when the leader relay is killed:
 * the Service sends their new connections to the survivor, which takes the lease and polls from then on; a pod
 * pointed at the dead replica alone keeps its last snapshot.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { digestKey } from '../../src/auth/principal.js';
import { startFakeService, type FakeService } from '../support/fake-service.js';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { call, json, personalKeys, tokenOne } from '../support/flag-api-env.js';
import { exampleDefinitions } from '../support/fixtures.js';
import { runRedisUrl, testPrefix } from '../support/redis.js';
import { spawnSidecar, type SidecarProcess } from '../support/spawn-sidecar.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';
import { tempDir } from '../support/temp-dir.js';

// Each relay replica polls with a key of its own (the fleet secret lets them share anyway), so the fake upstream
// can tell whose polls it sees.
const relayKeys = ['phs_relayzerokey', 'phs_relayonekey'] as const;
const fleetSecret = 'relay-tier-test-fleet-secret-0123456789';
/** The pods' own upstream key: known to the relays' keys file only, so app pods hold no PostHog credential. */
const podKey = 'pod_fleet_key';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Relay {
  readonly process: SidecarProcess;
  readonly api: string;
  readonly ops: string;
}

async function startRelay(upstream: FakeUpstream, index: 0 | 1, keysFile: string, prefix: string): Promise<Relay> {
  const process = spawnSidecar({
    FLAG_SIDECAR_LISTEN: '127.0.0.1:0',
    FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
    FLAG_SIDECAR_UPSTREAM_KEY: relayKeys[index],
    FLAG_SIDECAR_PROJECTS: `1:${tokenOne}`,
    FLAG_SIDECAR_KEYS_FILE: keysFile,
    FLAG_SIDECAR_REDIS_URL: runRedisUrl,
    FLAG_SIDECAR_REDIS_PREFIX: prefix,
    FLAG_SIDECAR_FLEET_SECRET: fleetSecret,
    FLAG_SIDECAR_FLEET_LEASE: '1s',
    FLAG_SIDECAR_POLL_INTERVAL: '300ms',
    FLAG_SIDECAR_LOG_LEVEL: 'info',
  });
  cleanups.push(async () => {
    if (process.child.exitCode === null && process.child.signalCode === null) process.child.kill('SIGKILL');
    await process.exited;
  });
  const { api, ops } = await process.listening;
  return { process, api, ops };
}

/** A pod's sidecar: no Redis, its upstream the relay tier at `url`. */
async function startPod(url: string): Promise<TestSidecar> {
  const pod = await startTestSidecar({
    FLAG_SIDECAR_UPSTREAM_URL: url,
    FLAG_SIDECAR_UPSTREAM_KEY: podKey,
    FLAG_SIDECAR_PROJECTS: `1:${tokenOne}`,
    FLAG_SIDECAR_POLL_INTERVAL: '300ms',
    FLAG_SIDECAR_UPSTREAM_TIMEOUT: '1s',
    FLAG_SIDECAR_UPSTREAM_CONNECT_TIMEOUT: '300ms',
    FLAG_SIDECAR_LOG_LEVEL: 'warn',
  });
  cleanups.push(() => pod.stop());
  await waitFor(() => pod.store.ready(), 'the pod ready from the relay', 10_000);
  return pod;
}

const roleOf = async (relay: Relay): Promise<string | undefined> => {
  const status = (await (await fetch(`${relay.ops}/status`)).json()) as { projects: Array<{ fleet: { role: string } | null }> };
  return status.projects[0]?.fleet?.role;
};
const relayPolls = (upstream: FakeUpstream, index: 0 | 1): number => upstream.polls().filter((r) => r.headers.authorization === `Bearer ${relayKeys[index]}`).length;
const metric = async (url: string, pattern: RegExp): Promise<number> => Number(pattern.exec(await (await fetch(`${url}/metrics`)).text())?.[1] ?? 0);

// As posthog-node sends it (internal-tools is a server-only flag; it matches this person while it is active), for
// flags decided from the definitions alone (beta-programme's cohort would be asked of upstream's /flags).
const person = {
  token: tokenOne,
  distinct_id: 'user-7',
  person_properties: { email: 'dev@example.com', country: 'US' },
  evaluation_runtime: 'server',
  flag_keys_to_evaluate: ['internal-tools', 'new-checkout', 'pricing-experiment'],
};
/** The pod's /flags answer: which flags are enabled. */
async function enabledFlags(pod: TestSidecar): Promise<string[]> {
  const answer = await call(`${pod.apiUrl}/flags?v=2`, null, { method: 'POST', body: JSON.stringify(person) });
  expect(answer.status).toBe(200);
  const flags = json(answer.text).flags as Record<string, { enabled: boolean }>;
  return Object.keys(flags).filter((key) => flags[key]?.enabled).sort();
}

describe('pods → relay Service → relay replicas sharing Redis → PostHog', () => {
  it('one relay polls PostHog; pods evaluate locally, write with read-your-writes, and outlive the leader relay', async () => {
    const upstream = await startFakeUpstream({
      projects: { 1: { token: tokenOne, definitions: exampleDefinitions() } },
      keys: [...relayKeys],
      personalKeys,
    });
    cleanups.push(() => upstream.close());
    const keysFile = join(tempDir('relay-tier-'), 'keys.json');
    writeFileSync(keysFile, JSON.stringify({ keys: [{ sha256: digestKey(podKey), label: 'app pods', scopes: ['feature_flag:read'], projects: null }] }));
    const prefix = testPrefix();

    // The first replica takes the lease; the second starts as a follower, ready from the fleet's snapshot.
    const leader = await startRelay(upstream, 0, keysFile, prefix);
    await waitFor(async () => (await roleOf(leader)) === 'leader', 'the first relay to lead', 15_000);
    const follower = await startRelay(upstream, 1, keysFile, prefix);
    await waitFor(async () => (await roleOf(follower)) === 'follower' && (await fetch(`${follower.ops}/readyz`)).status === 200, 'the second relay to follow, ready', 15_000);

    const service: FakeService = await startFakeService([leader.api, follower.api]);
    cleanups.push(() => service.close());
    const pods = [await startPod(service.url), await startPod(service.url), await startPod(service.url)];
    const onFollower = await startPod(follower.api); // writes through the replica that does not poll
    const onLeaderOnly = await startPod(leader.api); // what a pod pointed at one replica's address sees when it dies
    const everyPod = [...pods, onFollower, onLeaderOnly];

    // Flags served and evaluated by every pod from memory: no /flags call reaches a relay or PostHog.
    const flagsAnswered = /^flag_sidecar_http_requests_total\{route="flags_evaluate",status="200"\} (\d+)$/m;
    for (const pod of everyPod) {
      expect(await enabledFlags(pod)).toContain('internal-tools');
      expect(await metric(pod.opsUrl, flagsAnswered)).toBe(1);
      expect(await metric(pod.opsUrl, /^flag_sidecar_flag_evaluations_total\{source="local"\} (\d+)$/m)).toBeGreaterThan(0);
    }
    expect(upstream.flagsCalls).toHaveLength(0);
    for (const relay of [leader, follower]) expect(await metric(relay.ops, flagsAnswered)).toBe(0);

    // PostHog sees the polls of the leader relay only: five pods and two replicas cost it one poller.
    await waitFor(() => relayPolls(upstream, 0) >= 3, 'the leader relay to keep polling');
    expect(relayPolls(upstream, 1)).toBe(0);
    expect(upstream.requests.some((r) => String(r.headers.authorization).includes(podKey))).toBe(false);

    // A write through a pod whose relay is the follower: forwarded with the caller's key, read back at once.
    upstream.flagApi.setDefinitionsLag(150);
    const patched = await call(`${onFollower.apiUrl}/api/projects/1/feature_flags/3/`, 'phx_writer', { method: 'PATCH', body: JSON.stringify({ active: false }) });
    expect(patched.status).toBe(200);
    expect(upstream.requests.filter((r) => r.method === 'PATCH').map((r) => r.headers.authorization)).toEqual(['Bearer phx_writer']);
    expect(await enabledFlags(onFollower)).not.toContain('internal-tools');
    // ...and it reaches every other pod within their polls of the relay tier.
    await waitFor(async () => (await Promise.all(everyPod.map(enabledFlags))).every((flags) => !flags.includes('internal-tools')), 'every pod to see the write', 10_000);
    expect(relayPolls(upstream, 1)).toBe(0);

    // The leader relay dies (kill -9). The survivor takes the lease within one lease and polls PostHog.
    leader.process.child.kill('SIGKILL');
    await leader.process.exited;
    await waitFor(async () => (await roleOf(follower)) === 'leader', 'the survivor to lead', 10_000);
    const patchedAtPostHog = await call(`${upstream.url}/api/projects/1/feature_flags/3/`, 'phx_writer', { method: 'PATCH', body: JSON.stringify({ active: true }) });
    expect(patchedAtPostHog.status).toBe(200);
    // Pods behind the Service reach the survivor and see the change made in PostHog after the kill.
    await waitFor(async () => (await Promise.all([...pods, onFollower].map(enabledFlags))).every((flags) => flags.includes('internal-tools')), 'pods behind the Service to see a change polled by the survivor', 15_000);
    expect(relayPolls(upstream, 1)).toBeGreaterThan(0);

    // The pod pointed at the dead replica alone: ready, serving its last snapshot, and saying so.
    await waitFor(async () => {
      const status = (await (await fetch(`${onLeaderOnly.opsUrl}/status`)).json()) as { projects: Array<{ serving_stale: boolean; last_poll: { outcome: string } }> };
      return status.projects[0]?.serving_stale === true && status.projects[0]?.last_poll.outcome === 'failed';
    }, 'the pinned pod to report its relay unreachable', 10_000);
    expect((await fetch(`${onLeaderOnly.opsUrl}/readyz`)).status).toBe(200);
    expect(await enabledFlags(onLeaderOnly)).not.toContain('internal-tools');
  }, 90_000);
});
