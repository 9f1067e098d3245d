/**
 * Static cohorts with a real sidecar against the fake upstream, which lists persons as upstream's persons API
 * does (at most 10 distinct_ids per person, absolute `next` links from full pages: test/support/fake-cohorts.ts):
 * a truncated cohort's unlisted ids go upstream; and a hostile upstream (a `next` to itself with empty pages, a
 * person with 100,000 ids, a page trickling its body, a transient 403 or 429) costs a bounded number of requests
 * and bounded time, shows on /status and in a metric, and never stops pulls for good.
 */
import { describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import type { FakeStaticCohort } from '../support/fake-cohorts.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

const token = 'phc_statictoken';
const ownKey = 'phx_static_cohort_reader';
const definitions = {
  flags: [{ id: 6, team_id: 9, key: 'beta-cohort', name: 'beta', active: true, version: 1, filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 77 }], rollout_percentage: 100 }] } }],
  group_type_mapping: {},
  cohorts: {}, // upstream leaves static cohorts out
};
interface Answer {
  flags: Record<string, { enabled: boolean; reason: { code: string; description?: string } }>;
}
interface CohortStatus {
  state: string;
  members_known: boolean;
  truncated: boolean | null;
  last_error: string | null;
  next_attempt_at: string | null;
}

async function withSidecar(cohort: FakeStaticCohort, env: Record<string, string>, run: (s: { sidecar: TestSidecar; fake: FakeUpstream; ask: (id: string) => Promise<{ body: Answer; asked: number }>; status: () => Promise<CohortStatus | undefined> }) => Promise<void>) {
  const fake = await startFakeUpstream({ projects: { 9: { token, definitions, staticCohorts: { 77: cohort } } }, keys: [ownKey] });
  const sidecar = await startTestSidecar({ FLAG_SIDECAR_UPSTREAM_URL: fake.url, FLAG_SIDECAR_UPSTREAM_KEY: ownKey, FLAG_SIDECAR_PROJECTS: `9:${token}`, FLAG_SIDECAR_POLL_INTERVAL: '100ms', ...env });
  try {
    await waitFor(() => sidecar.store.ready(), 'sidecar ready');
    const ask = async (distinctId: string) => {
      const before = fake.flagsCalls.length;
      const response = await fetch(`${sidecar.apiUrl}/flags/?v=2`, { method: 'POST', body: JSON.stringify({ token, distinct_id: distinctId }) });
      return { body: (await response.json()) as Answer, asked: fake.flagsCalls.length - before };
    };
    const status = async () => ((await (await fetch(`${sidecar.opsUrl}/status`)).json()) as { projects: Array<{ static_cohorts: CohortStatus[] }> }).projects[0]?.static_cohorts[0];
    await run({ sidecar, fake, ask, status });
  } finally {
    await sidecar.stop();
    await fake.close();
  }
}

const metric = async (sidecar: TestSidecar, outcome: string): Promise<number> => {
  const text = await (await fetch(`${sidecar.opsUrl}/metrics`)).text();
  return Number(new RegExp(`^flag_sidecar_static_cohort_checks_total\\{outcome="${outcome}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
};

describe('static cohort membership as upstream decides it', () => {
  it('asks upstream for an unlisted id of a cohort whose listed person shows the 10 ids upstream serializes at most', async () => {
    const merged = Array.from({ length: 12 }, (_, i) => `device-${i}`);
    await withSidecar({ persons: [merged, ['solo']] }, {}, async ({ ask, status }) => {
      await waitFor(async () => (await status())?.state === 'pulled', 'the cohort pulled');
      expect(await status()).toMatchObject({ members_known: true, truncated: true });
      // Listed: in, decided locally.
      for (const id of ['device-0', 'device-9', 'solo']) expect(await ask(id), id).toMatchObject({ asked: 0, body: { flags: { 'beta-cohort': { enabled: true } } } });
      // The 11th and 12th ids of the merged person, and any other: upstream decides (it checks the person).
      for (const id of ['device-10', 'device-11', 'stranger']) {
        const { body, asked } = await ask(id);
        expect(asked, id).toBe(1);
        expect(body.flags['beta-cohort']?.reason.description, id).toBe('server');
      }
    });
  });
});

describe('a hostile upstream', () => {
  it('stops at a next link to itself with empty pages: one page read, then a backoff', async () => {
    await withSidecar({ persons: [['a']], loop: true }, {}, async ({ fake, sidecar, status }) => {
      await waitFor(async () => (await status())?.state === 'failed', 'the pull failed');
      expect((await status())?.last_error).toContain('next link is not the following page');
      const requests = fake.cohortRequests();
      expect(requests).toBe(2); // the record and one page
      const polls = fake.polls().length;
      await waitFor(() => fake.polls().length >= polls + 5, 'five more polls');
      expect(fake.cohortRequests()).toBe(requests);
      expect(await metric(sidecar, 'failed')).toBe(1);
    });
  });

  it('refuses a person with more distinct_ids than upstream serializes, holding none of them', async () => {
    const many = Array.from({ length: 100_000 }, (_, i) => `device-${i}`);
    await withSidecar({ persons: [many], untruncated: true }, {}, async ({ ask, status }) => {
      await waitFor(async () => (await status())?.state === 'failed', 'the page refused');
      expect(await status()).toMatchObject({ members_known: false, last_error: expect.stringContaining('more than 10') });
      expect((await ask('device-5')).asked).toBe(1);
    });
  });

  it('gives up on a page that trickles its body at the pull deadline, and says so on /status', async () => {
    await withSidecar({ persons: [['a']], trickleMs: 200 }, { FLAG_SIDECAR_STATIC_COHORT_PULL_TIMEOUT: '1s' }, async ({ status }) => {
      await waitFor(async () => (await status())?.state === 'failed', 'the pull failed', 10_000);
      expect(await status()).toMatchObject({ members_known: false, last_error: 'no complete pull within 1s' });
      expect((await status())?.next_attempt_at).not.toBeNull();
    });
  });

  it('backs off after a transient 403 and pulls again once upstream allows it', async () => {
    const cohort: FakeStaticCohort = { persons: [['a']], status: { code: 403 } };
    await withSidecar(cohort, { FLAG_SIDECAR_STATIC_COHORT_REFRESH: '1s' }, async ({ ask, status, sidecar }) => {
      await waitFor(async () => (await status())?.state === 'refused', 'refused');
      delete cohort.status;
      await waitFor(async () => (await status())?.state === 'pulled', 'pulled after the backoff', 10_000);
      expect(await ask('a')).toMatchObject({ asked: 0, body: { flags: { 'beta-cohort': { enabled: true } } } });
      expect(await metric(sidecar, 'refused')).toBeGreaterThanOrEqual(1);
    });
  });

  it("waits out a 429's Retry-After, keeping the members it holds", async () => {
    const cohort: FakeStaticCohort = { persons: [['a']] };
    await withSidecar(cohort, { FLAG_SIDECAR_STATIC_COHORT_REFRESH: '1s' }, async ({ fake, status, ask }) => {
      await waitFor(async () => (await status())?.state === 'pulled', 'pulled');
      cohort.status = { code: 429, retryAfter: '3600' };
      await waitFor(async () => (await status())?.state === 'throttled', 'throttled', 10_000);
      const after = await status();
      expect(after?.members_known).toBe(true);
      expect(Date.parse(after?.next_attempt_at ?? '') - Date.now()).toBeGreaterThan(3_500_000);
      const requests = fake.cohortRequests();
      const polls = fake.polls().length;
      await waitFor(() => fake.polls().length >= polls + 5, 'five more polls');
      expect(fake.cohortRequests()).toBe(requests);
      expect((await ask('a')).asked).toBe(0);
    });
  });
});
