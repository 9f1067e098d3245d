/**
 * What POST /flags still asks upstream (docs/evaluation.md, "What goes upstream"), counted at the fake upstream,
 * which answers these flags as upstream does: experience continuity decided locally when no hash-key override can
 * change it, keys upstream does not serve (a deleted flag, an encrypted remote config) answered absent from
 * upstream's own earlier answer, and flags depending on those asked of upstream (which answers them
 * missing_dependency) whatever their other conditions say.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { upstreamKey } from '../support/fixtures.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

const token = 'phc_offloadtoken';
const everyone = { groups: [{ properties: [], rollout_percentage: 100 }] };
const flag = (id: number, key: string, filters: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ id, team_id: 9, key, name: key, active: true, version: 1, filters, ...extra });
const definitions = {
  flags: [
    flag(1, 'plain', everyone),
    flag(2, 'sticky-rollout', { ...everyone, payloads: { true: '{"a":1}' } }, { ensure_experience_continuity: true }),
    flag(3, 'sticky-experiment', { groups: [{ properties: [], rollout_percentage: 50 }] }, { ensure_experience_continuity: true }),
    flag(4, 'retired', everyone, { deleted: true }),
    flag(5, 'secret-config', { ...everyone, payloads: { true: 'gAAAAAB-ciphertext' } }, { is_remote_configuration: true, has_encrypted_payloads: true }),
  ],
  group_type_mapping: {},
  cohorts: {},
};

let upstream: FakeUpstream;
let sidecar: TestSidecar;

beforeAll(async () => {
  upstream = await startFakeUpstream({ projects: { 9: { token, definitions } }, keys: [upstreamKey] });
  sidecar = await startTestSidecar({ FLAG_SIDECAR_UPSTREAM_URL: upstream.url, FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey, FLAG_SIDECAR_PROJECTS: `9:${token}` });
  await waitFor(() => sidecar.store.ready(), 'sidecar ready');
});

afterAll(async () => {
  await sidecar.stop();
  await upstream.close();
});

interface Answer {
  flags: Record<string, { enabled: boolean; reason: { code: string; condition_index: number | null; description: string }; metadata: { payload: unknown } }>;
  errorsWhileComputingFlags: boolean;
}

/** POST /flags?v=2 with `extra` in the body; the answer and the keys each upstream /flags call asked for. */
async function flags(extra: Record<string, unknown>): Promise<{ body: Answer; asked: Array<string[] | undefined> }> {
  const before = upstream.flagsCalls.length;
  const response = await fetch(`${sidecar.apiUrl}/flags/?v=2`, { method: 'POST', body: JSON.stringify({ token, distinct_id: 'user-1', evaluation_runtime: 'server', ...extra }) });
  expect(response.status).toBe(200);
  return { body: (await response.json()) as Answer, asked: upstream.flagsCalls.slice(before).map((c) => c.body.flag_keys_to_evaluate) };
}

describe('experience continuity', () => {
  it('decides a flag rolled out to everyone locally; only the 50% one goes upstream', async () => {
    const { body, asked } = await flags({});
    expect(asked).toEqual([['sticky-experiment']]);
    expect(body.flags['sticky-rollout']).toMatchObject({
      enabled: true,
      reason: { code: 'condition_match', condition_index: 0, description: 'Matched condition set 1' },
      metadata: { payload: '{"a":1}' },
    });
    expect(body.flags['sticky-experiment']?.reason.description).toBe('server');
    expect(body.errorsWhileComputingFlags).toBe(false);
  });

  it('leaves every continuity flag to upstream when the request carries $anon_distinct_id (upstream writes overrides)', async () => {
    for (const name of ['$anon_distinct_id', 'anon_distinct_id']) {
      const { asked } = await flags({ [name]: 'anon-1' });
      expect(asked, name).toEqual([['sticky-rollout', 'sticky-experiment']]);
    }
  });
});

describe('keys upstream does not serve', () => {
  it.each(['retired', 'secret-config'])('%s: absent, as upstream answers, asked of upstream once', async (key) => {
    const first = await flags({ flag_keys_to_evaluate: [key, 'plain'] });
    expect(first.asked).toEqual([[key]]);
    expect(Object.keys(first.body.flags)).toEqual(['plain']);
    expect(first.body.errorsWhileComputingFlags).toBe(false);
    const again = await flags({ flag_keys_to_evaluate: [key, 'plain'] });
    expect(again.asked).toEqual([]);
    expect(again.body).toMatchObject({ flags: { plain: { enabled: true } }, errorsWhileComputingFlags: false });
    expect(Object.keys(again.body.flags)).toEqual(['plain']);
    // Another runtime is another question for upstream (it filters by runtime).
    expect((await flags({ flag_keys_to_evaluate: [key], evaluation_runtime: 'client' })).asked).toEqual([[key]]);
  });

  it('still counts a key the definitions hold as an error when upstream leaves it out', async () => {
    // Deleted upstream since the sidecar's last poll.
    upstream.setDefinitions(9, { ...definitions, flags: definitions.flags.map((f) => (f.key === 'sticky-experiment' ? { ...f, deleted: true } : f)) });
    try {
      const { body, asked } = await flags({});
      expect(asked).toEqual([['sticky-experiment']]); // the sidecar's snapshot still holds it
      expect(body.flags['sticky-experiment']).toBeUndefined();
      expect(body.errorsWhileComputingFlags).toBe(true);
    } finally {
      upstream.setDefinitions(9, definitions);
    }
  });
});

describe('static cohorts', () => {
  const cohortDefinitions = {
    flags: [flag(1, 'plain', everyone), flag(6, 'beta-cohort', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 77 }], rollout_percentage: 100 }] })],
    group_type_mapping: {},
    cohorts: {}, // upstream leaves static cohorts out
  };
  const staticCohorts = { 77: { persons: [['member-1', 'member-1-alias'], ['member-2']] } };

  async function withSidecar(ownKey: string, run: (ask: (distinctId: string) => Promise<{ body: Answer; asked: number }>, fake: FakeUpstream) => Promise<void>) {
    const fake = await startFakeUpstream({ projects: { 9: { token, definitions: cohortDefinitions, staticCohorts } }, keys: [ownKey] });
    const own = await startTestSidecar({ FLAG_SIDECAR_UPSTREAM_URL: fake.url, FLAG_SIDECAR_UPSTREAM_KEY: ownKey, FLAG_SIDECAR_PROJECTS: `9:${token}` });
    try {
      await waitFor(() => own.store.ready() && fake.cohortRequests() > 0, 'a poll and a static cohort request');
      const ask = async (distinctId: string) => {
        const before = fake.flagsCalls.length;
        const response = await fetch(`${own.apiUrl}/flags/?v=2`, { method: 'POST', body: JSON.stringify({ token, distinct_id: distinctId }) });
        return { body: (await response.json()) as Answer, asked: fake.flagsCalls.length - before };
      };
      await run(ask, fake);
    } finally {
      await own.stop();
      await fake.close();
    }
  }

  it('pulls a static cohort with a key that may read it, and decides its flag locally as upstream does', async () => {
    await withSidecar('phx_offload_cohort_reader', async (ask, fake) => {
      await waitFor(async () => (await ask('member-1')).asked === 0, 'the static cohort pulled');
      for (const [distinctId, member] of [['member-1', true], ['member-1-alias', true], ['member-2', true], ['stranger', false]] as const) {
        const { body, asked } = await ask(distinctId);
        expect(asked, distinctId).toBe(0);
        expect(body.flags['beta-cohort'], distinctId).toMatchObject({ enabled: member, reason: { code: member ? 'condition_match' : 'no_condition_match', condition_index: 0 } });
        expect(body.errorsWhileComputingFlags).toBe(false);
      }
      expect(fake.requests.filter((r) => r.url.startsWith('/api/projects/9/cohorts/77/')).every((r) => r.headers.authorization === 'Bearer phx_offload_cohort_reader')).toBe(true);
    });
  });

  it('leaves the flag to upstream when the key may not read cohorts', async () => {
    await withSidecar(upstreamKey, async (ask) => {
      const { body, asked } = await ask('member-1');
      expect(asked).toBe(1);
      expect(body.flags['beta-cohort']?.reason.description).toBe('server');
    });
  });
});

describe('a flag depending on a flag upstream does not serve', () => {
  // As local_evaluation sends them: the missing flag's id as the key, an empty dependency_chain (for a dependant
  // of such a flag too); each dependant's second condition would match.
  const dependsOn = (key: string) => ({ properties: [{ key, type: 'flag', operator: 'flag_evaluates_to', value: true, dependency_chain: [] }], rollout_percentage: 100 });
  const withDependants = {
    ...definitions,
    flags: [
      flag(1, 'plain', everyone),
      flag(4, 'retired', everyone, { deleted: true }),
      flag(5, 'secret-config', { ...everyone, payloads: { true: 'gAAAAAB-ciphertext' } }, { is_remote_configuration: true, has_encrypted_payloads: true }),
      flag(6, 'needs-retired', { groups: [dependsOn('4'), ...everyone.groups] }),
      flag(7, 'needs-config', { groups: [...everyone.groups, dependsOn('5')] }),
      flag(8, 'needs-needs', { groups: [dependsOn('needs-retired'), ...everyone.groups] }),
    ],
  };

  it('is asked of upstream, which answers it missing_dependency whatever its other conditions say', async () => {
    const fake = await startFakeUpstream({ projects: { 9: { token, definitions: withDependants } }, keys: [upstreamKey] });
    const own = await startTestSidecar({ FLAG_SIDECAR_UPSTREAM_URL: fake.url, FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey, FLAG_SIDECAR_PROJECTS: `9:${token}` });
    try {
      await waitFor(() => own.store.ready(), 'sidecar ready');
      const response = await fetch(`${own.apiUrl}/flags/?v=2`, { method: 'POST', body: JSON.stringify({ token, distinct_id: 'user-1', evaluation_runtime: 'server' }) });
      const body = (await response.json()) as Answer;
      expect(fake.flagsCalls.map((c) => c.body.flag_keys_to_evaluate)).toEqual([['needs-retired', 'needs-config', 'needs-needs']]);
      for (const key of ['needs-retired', 'needs-config', 'needs-needs']) {
        expect(body.flags[key], key).toMatchObject({ enabled: false, reason: { code: 'missing_dependency', condition_index: null } });
      }
      expect(body.flags.plain).toMatchObject({ enabled: true, reason: { code: 'condition_match' } });
      expect(body.errorsWhileComputingFlags).toBe(false);
    } finally {
      await own.stop();
      await fake.close();
    }
  });
});
