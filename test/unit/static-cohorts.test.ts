/**
 * Static cohorts (src/upstream/static-cohorts.ts, src/eval/cohorts.ts): evaluation with known members, decided
 * locally vs still the server's, and pulling the members from upstream (pages, bounds, refusals, failures).
 */
import { describe, expect, it } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { createEvaluation, personProperties } from '../../src/eval/evaluate.js';
import { createLogger } from '../../src/logger.js';
import type { UpstreamClient, UpstreamRequest, UpstreamResult } from '../../src/upstream/client.js';
import { nextPath } from '../../src/upstream/static-cohort-pull.js';
import { createStaticCohorts, missingCohortIds } from '../../src/upstream/static-cohorts.js';

const cohort = (value: number, operator?: string) => ({ key: 'id', type: 'cohort', value, ...(operator ? { operator } : {}) });
const plan = { key: 'plan', type: 'person', value: 'pro', operator: 'exact' };
const members = new Map([['7', { members: new Set(['member', 'member-alias']), truncated: false }]]);
const truncated = new Map([['7', { members: new Set(['member', 'member-alias']), truncated: true }]]);

// [name, flag filters, cohorts of the definitions, distinct_id, expected value (undefined: the server's)]
const cases: Array<[string, Record<string, unknown>, Record<string, unknown>, string, boolean | undefined]> = [
  ['a member', { groups: [{ properties: [cohort(7)] }] }, {}, 'member', true],
  ['another distinct_id of the same person', { groups: [{ properties: [cohort(7)] }] }, {}, 'member-alias', true],
  ['not a member', { groups: [{ properties: [cohort(7)] }] }, {}, 'stranger', false],
  ['not_in, a member', { groups: [{ properties: [cohort(7, 'not_in')] }] }, {}, 'member', false],
  ['not_in, not a member', { groups: [{ properties: [cohort(7, 'not_in')] }] }, {}, 'stranger', true],
  ['with another property that holds', { groups: [{ properties: [cohort(7), plan] }] }, {}, 'member', true],
  ['nested in a dynamic cohort', { groups: [{ properties: [cohort(5)] }] }, { 5: { type: 'OR', values: [{ type: 'OR', values: [cohort(7)] }] } }, 'member', true],
  ['a cohort whose members are not known', { groups: [{ properties: [cohort(8)] }] }, {}, 'member', undefined],
  ['a truncated cohort, a listed id', { groups: [{ properties: [cohort(17)] }] }, {}, 'member', true],
  ['a truncated cohort, an unlisted id (upstream may know more ids of a listed person)', { groups: [{ properties: [cohort(17)] }] }, {}, 'stranger', undefined],
  ['not_in a truncated cohort, an unlisted id', { groups: [{ properties: [cohort(17, 'not_in')] }] }, {}, 'stranger', undefined],
  ['in a group-aggregated condition', { groups: [{ properties: [cohort(7)], aggregation_group_type_index: 0 }] }, {}, 'member', undefined],
];

describe('evaluating static cohorts with known members', () => {
  it.each(cases)('%s', (_name, filters, cohorts, distinctId, expected) => {
    const defs = compileDefinitions({ flags: [{ id: 1, key: 'f', active: true, filters }], cohorts, group_type_mapping: { '0': 'company' } });
    const context = {
      distinctId,
      groups: { company: 'acme' },
      personProperties: personProperties(distinctId, { plan: 'pro' }),
      groupProperties: { company: { $group_key: 'acme' } },
      nowMs: 0,
    };
    const known = createEvaluation(defs, { ...context, staticCohorts: new Map([...members, ['17', truncated.get('7') as never]]) }).evaluate(defs.flags[0] as never);
    if (expected === undefined) expect(known).toMatchObject({ kind: 'inconclusive' });
    else expect(known).toMatchObject({ kind: 'value', value: expected, reason: expected ? 'condition_match' : 'no_condition_match' });
    // Without members (the SDK's behaviour), every one of these needs the server.
    expect(createEvaluation(defs, context).evaluate(defs.flags[0] as never)).toMatchObject({ kind: 'inconclusive' });
  });

  it('lists the cohort ids the flags reference that the definitions lack, nested ones included', () => {
    const defs = compileDefinitions({
      flags: [{ id: 1, key: 'f', active: true, filters: { groups: [{ properties: [cohort(5), cohort(9)] }, { properties: [cohort(3)] }] } }],
      cohorts: { 5: { type: 'AND', values: [{ type: 'AND', values: [cohort(7), cohort(5)] }] }, 3: { type: 'OR', values: [plan] } },
    });
    expect(missingCohortIds(defs)).toEqual(['7', '9']);
  });
});


type Answer = [number, unknown, Record<string, string>?] | 'fail' | 'hang';
type Routes = Record<string, Answer | (() => Answer)>;
const base = '/api/projects/1/cohorts/7/';
const page1 = `${base}persons/?limit=1000`;
const page2 = `${base}persons/?limit=1000&offset=1000`;
const page2Link = `https://us.posthog.com${page2}`;
const flagDefs = compileDefinitions({ flags: [{ id: 1, key: 'f', active: true, filters: { groups: [{ properties: [cohort(7)] }] } }] });
const refreshMs = 60_000;

/** A static cohort store over a scripted upstream (path → answer; unknown paths 404) and a clock the test moves. */
function scripted(routes: Routes, options: { maxPersons?: number; deadlineMs?: number } = {}) {
  const world = { routes, nowMs: 1_000_000, paths: [] as string[] };
  const client = {
    request: (req: UpstreamRequest): Promise<UpstreamResult> => {
      world.paths.push(req.path);
      const found = world.routes[req.path] ?? [404, {}];
      const route = typeof found === 'function' ? found() : found;
      if (route === 'fail') return Promise.resolve({ kind: 'failure', cause: 'reset', code: 'ECONNRESET', message: 'reset' });
      if (route === 'hang') {
        return new Promise((resolve) => req.signal?.addEventListener('abort', () => resolve({ kind: 'failure', cause: 'aborted', code: 'UND_ERR_ABORTED', message: 'aborted' })));
      }
      return Promise.resolve({ kind: 'response', status: route[0], headers: route[2] ?? {}, body: Buffer.from(JSON.stringify(route[1])) });
    },
  } as unknown as UpstreamClient;
  const cohorts = createStaticCohorts({
    client,
    ownKey: 'phx_own',
    definitions: () => flagDefs,
    logger: createLogger('silent'),
    maxPersons: options.maxPersons ?? 5000,
    upstreamPath: '',
    refreshMs,
    rereadMs: 10 * refreshMs,
    deadlineMs: options.deadlineMs ?? 60_000,
    now: () => world.nowMs,
    random: () => 0.5,
  });
  return {
    world,
    cohorts,
    /** Refresh once; the paths asked and the members known after it. */
    async refresh() {
      const from = world.paths.length;
      await cohorts.refresh(1);
      const known = cohorts.membership(1).get('7');
      return { paths: world.paths.slice(from), members: known && [...known.members].sort(), truncated: known?.truncated, status: cohorts.status(1)[0] };
    },
  };
}

let calculations = 0;
const record = (count: number, extra: Record<string, unknown> = {}): Answer => [200, { id: 7, is_static: true, deleted: false, is_calculating: false, last_calculation: `2024-01-01T00:00:${String(calculations).padStart(2, '0')}Z`, count, ...extra }];
const persons = (ids: string[][], next: string | null = null): Answer => [200, { results: ids.map((d, i) => ({ id: `p${i}`, distinct_ids: d })), next }];
const full = (prefix: string): string[][] => Array.from({ length: 1000 }, (_, i) => [`${prefix}${i}`]);

describe('pulling static cohorts', () => {
  it('reads the record, follows absolute next links from full pages, then reads the record again', async () => {
    const { refresh } = scripted({ [base]: record(1002), [page1]: persons(full('a'), page2Link), [page2]: persons([['b', 'b2'], ['c']]) });
    const { members, paths, truncated } = await refresh();
    expect(members).toHaveLength(1003);
    expect(members).toEqual(expect.arrayContaining(['a0', 'a999', 'b', 'b2', 'c']));
    expect(truncated).toBe(false);
    expect(paths).toEqual([base, page1, page2, base]);
  });

  it.each<[string, Routes]>([
    ['a cohort larger than the bound', { [base]: record(5001) }],
    ['a cohort grown past the bound while paging', { [base]: record(2), [page1]: persons(full('a'), page2Link), [page2]: persons(full('b'), `${page2Link.replace('1000', '2000')}`) }],
    ['a dynamic cohort', { [base]: record(1, { is_static: false }) }],
    ['a deleted cohort', { [base]: record(1, { deleted: true }) }],
    ['a cohort upstream does not know', {}],
    ['a key refused for the persons', { [base]: record(1), [page1]: [403, { detail: "API key missing required scope 'person:read'" }] }],
    ['a key refused for the cohort', { [base]: [403, {}] }],
  ])('knows nothing of %s (its flags go upstream)', async (_name, routes) => {
    const { refresh } = scripted(routes, { maxPersons: 1500 });
    expect((await refresh()).members).toBeUndefined();
  });

  it('marks a cohort truncated when a listed person shows the 10 distinct_ids upstream serializes at most', async () => {
    const ten = Array.from({ length: 10 }, (_, i) => `d${i}`);
    const { refresh } = scripted({ [base]: record(2), [page1]: persons([ten, ['solo']]) });
    const got = await refresh();
    expect(got.truncated).toBe(true);
    expect(got.status).toMatchObject({ state: 'pulled', truncated: true, persons: 2, distinct_ids: 11 });
    const nine = scripted({ [base]: record(1), [page1]: persons([ten.slice(0, 9)]) });
    expect((await nine.refresh()).truncated).toBe(false);
  });

  it.each<[string, Answer, string]>([
    ['a person with more than 10 distinct_ids', persons([Array.from({ length: 11 }, (_, i) => `d${i}`)]), 'more than 10'],
    ['a distinct_id longer than 400 characters', persons([['x'.repeat(401)]]), 'at most 400 characters'],
    ['a next link to itself', persons(full('a'), `https://us.posthog.com${page1}`), 'not the following page'],
    ['a next link from a page that is not full', persons([['a']], page2Link), 'not the following page'],
    ['a page of more persons than asked for', persons([...full('a'), ['extra']]), 'more persons than asked for'],
  ])('refuses %s (not upstream\'s shape), keeping the last complete list', async (_name, hostile, error) => {
    const { world, refresh } = scripted({ [base]: record(1), [page1]: persons([['kept']]) });
    await refresh();
    calculations += 1;
    world.routes = { [base]: record(3), [page1]: hostile, [page2]: persons([]) };
    world.nowMs += refreshMs;
    const got = await refresh();
    expect(got.members).toEqual(['kept']);
    expect(got.status).toMatchObject({ state: 'failed', members_known: true });
    expect(got.status?.last_error).toContain(error);
    expect(got.paths.length).toBeLessThanOrEqual(3);
  });

  it('checks only the record while it is unchanged, and only when due; the persons when it changed', async () => {
    const { world, refresh } = scripted({ [base]: record(1), [page1]: persons([['a']]) });
    await refresh();
    expect((await refresh()).paths).toEqual([]); // not due
    world.nowMs += refreshMs;
    expect((await refresh()).paths).toEqual([base]);
    calculations += 1;
    world.routes = { [base]: record(2), [page1]: persons([['b'], ['a']]) };
    world.nowMs += refreshMs;
    const changed = await refresh();
    expect(changed.paths).toEqual([base, page1, base]);
    expect(changed.members).toEqual(['a', 'b']);
  });

  it('reads the pages again while the record changes under them, at most 3 times, then again at the next check', async () => {
    let count = 1;
    const { world, refresh } = scripted({ [base]: () => record(count++), [page1]: persons([['a']]) });
    const drifting = await refresh();
    expect(drifting.paths).toEqual([base, page1, base, page1, base, page1, base]);
    expect(drifting.members).toEqual(['a']);
    expect(drifting.status).toMatchObject({ state: 'unsettled' });
    world.routes = { [base]: record(9), [page1]: persons([['a'], ['b']]) };
    world.nowMs += refreshMs;
    const settled = await refresh();
    expect(settled.paths).toEqual([base, page1, base]);
    expect(settled.status).toMatchObject({ state: 'pulled', last_error: null });
  });

  it('backs off after 401/403/404/429 and asks again later (a Retry-After honoured), never stopping for good', async () => {
    const { world, refresh } = scripted({ [base]: [403, {}] });
    expect((await refresh()).status).toMatchObject({ state: 'refused', members_known: false });
    world.nowMs += refreshMs;
    expect((await refresh()).paths).toEqual([]); // backing off: 2× the refresh at the first refusal
    world.nowMs += 2 * refreshMs;
    world.routes = { [base]: [429, {}, { 'retry-after': '3600' }] };
    expect((await refresh()).status).toMatchObject({ state: 'throttled' });
    world.nowMs += 3599_000;
    expect((await refresh()).paths).toEqual([]);
    world.nowMs += 1000;
    world.routes = { [base]: record(1), [page1]: persons([['a']]) };
    expect((await refresh()).members).toEqual(['a']);
  });

  it('gives a whole pull one deadline (a page that never ends fails it), keeping the last complete list', async () => {
    const { world, refresh } = scripted({ [base]: record(1), [page1]: persons([['a']]) }, { deadlineMs: 50 });
    await refresh();
    calculations += 1;
    world.routes = { [base]: record(2), [page1]: 'hang' };
    world.nowMs += refreshMs;
    const got = await refresh();
    expect(got.members).toEqual(['a']);
    expect(got.status).toMatchObject({ state: 'failed', last_error: 'no complete pull within 0.05s' });
  });

  it('keeps the same membership object while the members are the same (kept /flags answers hold), a new one when they change', async () => {
    const { world, cohorts, refresh } = scripted({ [base]: record(2), [page1]: persons([['a'], ['b']]) });
    await refresh();
    const first = cohorts.membership(1);
    calculations += 1;
    world.routes = { [base]: record(2), [page1]: persons([['b'], ['a']]) };
    world.nowMs += refreshMs;
    await refresh();
    expect(cohorts.membership(1)).toBe(first);
    calculations += 1;
    world.routes = { [base]: record(2), [page1]: persons([['a'], ['c']]) };
    world.nowMs += refreshMs;
    await refresh();
    expect(cohorts.membership(1)).not.toBe(first);
  });

  it('reads next links below the upstream URL path', () => {
    expect(nextPath('https://proxy.example/posthog/api/projects/1/cohorts/7/persons/?offset=5', '/posthog')).toBe('/api/projects/1/cohorts/7/persons/?offset=5');
    expect(nextPath('/api/x/?a=1', '')).toBe('/api/x/?a=1');
  });
});

describe('static cohorts of a fleet follower', () => {
  it("reads the leader's lists from Redis only for a project whose flags reference a static cohort", async () => {
    const loads: number[] = [];
    const fleet = { role: () => 'follower' as const, publish: () => Promise.resolve(), load: (projectId: number) => (loads.push(projectId), Promise.resolve({ kind: 'none' as const })) };
    const withoutStatic = compileDefinitions({ flags: [{ id: 1, key: 'f', active: true, filters: { groups: [{ properties: [plan] }] } }] });
    const create = (definitions: typeof flagDefs) =>
      createStaticCohorts({ client: {} as UpstreamClient, ownKey: 'phx_own', definitions: () => definitions, logger: createLogger('silent'), maxPersons: 5000, upstreamPath: '', refreshMs, rereadMs: refreshMs, deadlineMs: 60_000, now: () => 0, random: () => 0.5, fleet });
    await create(withoutStatic).refresh(1);
    expect(loads).toEqual([]);
    await create(flagDefs).refresh(1);
    expect(loads).toEqual([1]);
  });
});
