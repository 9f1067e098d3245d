/**
 * The setting of the shared key check tests (fleet mode, issue 16 item 3): a fake upstream with two projects
 * (project 1 as in the example bootstrap file, so a sidecar serves it with upstream down), personal and secret
 * keys, and sidecars in fleet mode on one Redis prefix. Helpers name the Redis keys of a key's shared records and
 * read the shared-cache metric.
 */
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { digestKey } from '../../src/auth/principal.js';
import { fleetKeys } from '../../src/fleet/keys.js';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream.js';
import { exampleDefinitions, exampleToken, upstreamKey } from './fixtures.js';
import { redisCall, runRedisPort } from './redis.js';
import { rootDir, startTestSidecar, waitFor, type TestSidecar } from './start-sidecar.js';

/** Project 1's local_evaluation (served from the snapshot once a key is vouched for). */
export const projectOnePath = '/api/projects/1/feature_flags/local_evaluation/?send_cohorts';
/** Project 2's local_evaluation. */
export const projectTwoPath = '/api/projects/2/feature_flags/local_evaluation/?send_cohorts';
/** Project 1's secret key. */
export const secretKeyOne = 'phs_sharedprojectone';

/** Personal keys the fake knows, each for one test (all may read every project). */
export const personalKeyNames = ['phx_reader', 'phx_second', 'phx_revoked', 'phx_after_outage', 'phx_slow_redis'] as const;

/** Start the fake upstream. */
export function startSharedKeysUpstream(): Promise<FakeUpstream> {
  return startFakeUpstream({
    projects: {
      1: { token: exampleToken, definitions: exampleDefinitions(), secretKey: secretKeyOne },
      2: { token: 'phc_sharedtwo', definitions: exampleDefinitions(), secretKey: 'phs_sharedprojecttwo' },
    },
    keys: [upstreamKey],
    personalKeys: Object.fromEntries(personalKeyNames.map((k) => [k, { scopes: ['feature_flag:read'] }])),
  });
}

/** Start a sidecar in fleet mode on `redisUrl` with `prefix`, serving the example bootstrap until it polls; stopped when the test ends. */
export async function startFleetSidecar(upstream: FakeUpstream, redisUrl: string, prefix: string, extra: Record<string, string> = {}): Promise<TestSidecar> {
  const sidecar = await startTestSidecar({
    FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
    FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
    FLAG_SIDECAR_PROJECTS: `1:${exampleToken},2:phc_sharedtwo`,
    FLAG_SIDECAR_BOOTSTRAP_FILE: join(rootDir, 'config/snapshot.example.json'),
    FLAG_SIDECAR_POLL_INTERVAL: '30s',
    FLAG_SIDECAR_UPSTREAM_TIMEOUT: '300ms',
    FLAG_SIDECAR_UPSTREAM_CONNECT_TIMEOUT: '300ms',
    FLAG_SIDECAR_REDIS_URL: redisUrl,
    FLAG_SIDECAR_REDIS_PREFIX: prefix,
    FLAG_SIDECAR_LOG_LEVEL: 'warn',
    ...extra,
  });
  onTestFinished(() => sidecar.stop());
  return sidecar;
}

/** Whether the sidecar's Redis is connected and answering. */
export async function redisUp(sidecar: TestSidecar): Promise<boolean> {
  const text = await sidecar.registry.getSingleMetricAsString('flag_sidecar_redis_up');
  return /flag_sidecar_redis_up 1$/m.test(text);
}

/** Wait until the sidecar's Redis is connected. */
export const redisReady = (sidecar: TestSidecar): Promise<void> => waitFor(() => redisUp(sidecar), 'redis up', 15_000);

/** The value of flag_sidecar_fleet_shared_cache_total for (cache, result), 0 when not counted yet. */
export async function sharedCacheCount(sidecar: TestSidecar, cache: string, result: string): Promise<number> {
  const text = await sidecar.registry.getSingleMetricAsString('flag_sidecar_fleet_shared_cache_total');
  const line = text.split('\n').find((l) => l.includes(`cache="${cache}"`) && l.includes(`result="${result}"`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

/** The Redis keys of a key's shared records: about the key, and about it on `projectId`. */
export function sharedNames(upstream: FakeUpstream, prefix: string, key: string, projectId = 1): { key: string; grant: string } {
  const names = fleetKeys(prefix, new URL(upstream.url));
  const digest = digestKey(key);
  return { key: names.keyRecord(digest), grant: names.grant(digest, projectId) };
}

/** The raw value of a Redis key on the run's Redis (or the one on `port`), '' when absent. */
export async function redisValue(name: string, port = runRedisPort): Promise<string> {
  const reply = await redisCall(port, 'GET', name);
  return reply.startsWith('$-1') ? '' : reply.slice(reply.indexOf('\r\n') + 2, -2);
}

/** Upstream requests made with `key` (introspections and grant checks). */
export const requestsWith = (upstream: FakeUpstream, key: string): number =>
  upstream.requests.filter((r) => r.headers.authorization === `Bearer ${key}`).length;

/** A principal record as a sidecar shares it (unsealed), for `digest`, vouched for at `at`: scopes `*`, every project. */
export const principalJson = (digest: string, at: number, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({
    type: 'principal',
    digest,
    vouched_at: new Date(at).toISOString(),
    expires_at: new Date(at + 300_000).toISOString(),
    grace_until: new Date(at + 3_900_000).toISOString(),
    label: 'planted',
    scopes: ['*'],
    projects: null,
    legacy: false,
    ...extra,
  });
