/**
 * Static cohorts in fleet mode, in-process on the run's Redis (a random prefix per test): the project's leader
 * alone asks upstream's cohorts API and shares the member lists through Redis; followers decide the cohort's
 * flags locally from them. Over unchanged definitions a fleet of four costs upstream the cohort requests of one
 * sidecar without fleet mode, counted at the fake upstream. Lists in Redis that are not what a leader writes
 * are refused and the ones held are kept.
 */
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { fleetKeys } from '../../src/fleet/keys.js';
import { createSealer, sealContext } from '../../src/seal.js';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { redisCall, runRedisPort, runRedisUrl, testPrefix } from '../support/redis.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

const token = 'phc_fleetcohorts';
const ownKey = 'phx_fleet_cohort_reader';
const definitions = {
  flags: [{ id: 6, team_id: 1, key: 'beta-cohort', name: 'beta', active: true, version: 1, filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 77 }], rollout_percentage: 100 }] } }],
  group_type_mapping: {},
  cohorts: {},
};
const persons = [['member-1', 'member-1-alias'], ['member-2']];

const running: TestSidecar[] = [];
const fakes: FakeUpstream[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop()));
  await Promise.all(fakes.splice(0).map((f) => f.close()));
});

async function upstream(): Promise<FakeUpstream> {
  const fake = await startFakeUpstream({ projects: { 1: { token, definitions, staticCohorts: { 77: { persons: persons.map((p) => [...p]) } } } }, keys: [ownKey] });
  fakes.push(fake);
  return fake;
}

async function sidecars(count: number, fake: FakeUpstream, fleet: Record<string, string>): Promise<TestSidecar[]> {
  const env = { FLAG_SIDECAR_UPSTREAM_URL: fake.url, FLAG_SIDECAR_UPSTREAM_KEY: ownKey, FLAG_SIDECAR_PROJECTS: `1:${token}`, FLAG_SIDECAR_POLL_INTERVAL: '200ms', FLAG_SIDECAR_LOG_LEVEL: 'info', ...fleet };
  const started = await Promise.all(Array.from({ length: count }, () => startTestSidecar(env)));
  running.push(...started);
  return started;
}

type CohortView = { state: string; source: string; members_known: boolean; distinct_ids: number | null };
const view = async (s: TestSidecar) => {
  const body = (await (await fetch(`${s.opsUrl}/status`)).json()) as { projects: Array<{ fleet: { role: string } | null; static_cohorts: CohortView[] }> };
  return { role: body.projects[0]?.fleet?.role ?? 'none', cohort: body.projects[0]?.static_cohorts[0] };
};
const ask = async (s: TestSidecar, fake: FakeUpstream, distinctId: string) => {
  const before = fake.flagsCalls.length;
  const response = await fetch(`${s.apiUrl}/flags/?v=2`, { method: 'POST', body: JSON.stringify({ token, distinct_id: distinctId }) });
  const body = (await response.json()) as { flags: Record<string, { enabled: boolean }> };
  return { enabled: body.flags['beta-cohort']?.enabled, asked: fake.flagsCalls.length - before };
};
/** Wait for `polls` more polls at the fake (the fleet's clock), then the cohort requests it answered. */
const afterPolls = async (fake: FakeUpstream, polls: number): Promise<number> => {
  const from = fake.polls().length;
  await waitFor(() => fake.polls().length >= from + polls, `${polls} more polls`, 20_000);
  return fake.cohortRequests();
};

describe('static cohorts in fleet mode', () => {
  it('costs the fleet the cohort requests of one sidecar over unchanged definitions; followers answer from the shared lists', async () => {
    const alone = await upstream();
    const [single] = await sidecars(1, alone, {});
    await waitFor(async () => (await view(single as TestSidecar)).cohort?.state === 'pulled', 'one sidecar pulled');
    const oneSidecar = await afterPolls(alone, 10);
    expect(oneSidecar).toBe(3); // the record, the one page of persons, the record again

    const shared = await upstream();
    const fleet = await sidecars(4, shared, { FLAG_SIDECAR_REDIS_URL: runRedisUrl, FLAG_SIDECAR_REDIS_PREFIX: testPrefix(), FLAG_SIDECAR_FLEET_LEASE: '1s' });
    await waitFor(async () => {
      const views = await Promise.all(fleet.map(view));
      return views.filter((v) => v.role === 'leader').length === 1 && views.every((v) => v.cohort?.members_known === true);
    }, 'one leader, every sidecar holding the members', 20_000);
    for (const s of fleet) {
      const { role, cohort } = await view(s);
      expect(cohort, role).toMatchObject({ source: role === 'leader' ? 'upstream' : 'fleet', distinct_ids: 3 });
      for (const [id, member] of [['member-1-alias', true], ['member-2', true], ['stranger', false]] as const) expect(await ask(s, shared, id)).toEqual({ enabled: member, asked: 0 });
    }
    expect(await afterPolls(shared, 10)).toBe(oneSidecar);
  });

  it('refuses lists in Redis that are not what a leader writes, keeping the ones held', async () => {
    const fake = await upstream();
    const prefix = testPrefix();
    const fleet = await sidecars(2, fake, { FLAG_SIDECAR_REDIS_URL: runRedisUrl, FLAG_SIDECAR_REDIS_PREFIX: prefix, FLAG_SIDECAR_FLEET_LEASE: '1s' });
    await waitFor(async () => (await Promise.all(fleet.map(view))).every((v) => v.cohort?.members_known === true && v.role !== 'direct'), 'both holding the members', 20_000);
    const follower = (await Promise.all(fleet.map(async (s) => ({ s, v: await view(s) })))).find((x) => x.v.role === 'follower')?.s as TestSidecar;
    const keys = fleetKeys(prefix, new URL(fake.url));
    const text = async () => (await (await fetch(`${follower.opsUrl}/metrics`)).text());
    const rejected = async () => Number(/flag_sidecar_static_cohort_checks_total\{outcome="shared_rejected"\} (\d+)/.exec(await text())?.[1] ?? 0);
    const hostile = JSON.stringify({ flag_sidecar_static_cohorts: 1, cohorts: [{ id: '77', fingerprint: 'x', pulled_at: 1, persons: 1, truncated: false, members: Array.from({ length: 11 }, (_, i) => `m${i}`) }] });
    const head = `${createHash('sha256').update(hostile).digest('hex')} ${Buffer.byteLength(hostile)}`;
    const headKey = keys.staticCohortsHead(1);
    // Unsealed (a writer without the secret), then sealed with the fleet's own key but out of upstream's shape.
    const heads = [head, createSealer(ownKey, 'upstream_key').seal(head, sealContext('static_cohorts_head', headKey)).toString('latin1')];
    for (const [round, written] of heads.entries()) {
      const before = await rejected();
      await redisCall(runRedisPort, 'SET', keys.staticCohorts(1), hostile);
      await redisCall(runRedisPort, 'SET', headKey, written);
      await waitFor(async () => (await rejected()) > before, `the lists refused (round ${round})`);
      expect(await ask(follower, fake, 'member-2')).toEqual({ enabled: true, asked: 0 });
      expect(await ask(follower, fake, 'm3')).toEqual({ enabled: false, asked: 0 });
    }
    const status = (await (await fetch(`${follower.opsUrl}/status`)).json()) as { integrity: { unverifiable: Record<string, number> } };
    expect(status.integrity.unverifiable.static_cohorts_head).toBeGreaterThanOrEqual(1);
  });
});
