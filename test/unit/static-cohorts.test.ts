/**
 * Static cohorts (src/upstream/static-cohorts.ts, src/eval/cohorts.ts): evaluation with known members, decided
 * locally vs still the server's, and pulling the members from upstream (pages, bounds, refusals, failures).
 */
import { describe, expect, it } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { createEvaluation, personProperties } from '../../src/eval/evaluate.js';
import { createLogger } from '../../src/logger.js';
import type { UpstreamClient, UpstreamRequest, UpstreamResult } from '../../src/upstream/client.js';
import { createStaticCohorts, missingCohortIds, nextPath } from '../../src/upstream/static-cohorts.js';

const cohort = (value: number, operator?: string) => ({ key: 'id', type: 'cohort', value, ...(operator ? { operator } : {}) });
const plan = { key: 'plan', type: 'person', value: 'pro', operator: 'exact' };
const members = new Map([['7', new Set(['member', 'member-alias'])]]);

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
    const known = createEvaluation(defs, { ...context, staticCohorts: members }).evaluate(defs.flags[0] as never);
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

type Routes = Record<string, [number, unknown] | 'fail'>;
const base = '/api/projects/1/cohorts/7/';
const page1 = `${base}persons/?limit=1000`;
const page2 = `${base}persons/?limit=1000&offset=1000`;
const flagDefs = compileDefinitions({ flags: [{ id: 1, key: 'f', active: true, filters: { groups: [{ properties: [cohort(7)] }] } }] });

/** Refresh once with upstream answering `routes` (path → status and body; unknown paths 404), then with each of `later`. */
async function pulled(routes: Routes, maxPersons = 10, ...later: Routes[]) {
  let current = routes;
  const paths: string[] = [];
  const client = {
    request: async (req: UpstreamRequest): Promise<UpstreamResult> => {
      paths.push(req.path);
      const route = current[req.path] ?? [404, {}];
      if (route === 'fail') return { kind: 'failure', cause: 'reset', code: 'ECONNRESET', message: 'reset' } as UpstreamResult;
      return { kind: 'response', status: route[0], headers: {}, body: Buffer.from(JSON.stringify(route[1])) };
    },
  } as unknown as UpstreamClient;
  const cohorts = createStaticCohorts({ client, ownKey: 'phx_own', definitions: () => flagDefs, logger: createLogger('silent'), maxPersons, upstreamPath: '' });
  await cohorts.refresh(1);
  const memberships: object[] = [cohorts.membership(1)];
  for (const next of later) {
    current = next;
    await cohorts.refresh(1);
    memberships.push(cohorts.membership(1));
  }
  const known = cohorts.membership(1).get('7');
  return { members: known === undefined ? undefined : [...known].sort(), paths, memberships };
}

const detail = (count: number, extra: Record<string, unknown> = {}): [number, unknown] => [200, { id: 7, is_static: true, deleted: false, count, ...extra }];
const persons = (ids: string[][], next: string | null = null): [number, unknown] => [200, { results: ids.map((d) => ({ distinct_ids: d })), next }];

describe('pulling static cohorts', () => {
  it('follows next links, absolute ones included, and keeps every distinct_id', async () => {
    const { members, paths } = await pulled({ [base]: detail(3), [page1]: persons([['a', 'a2'], ['b']], `https://us.posthog.com${page2}`), [page2]: persons([['c']]) });
    expect(members).toEqual(['a', 'a2', 'b', 'c']);
    expect(paths).toEqual([base, page1, page2]);
  });

  it.each<[string, Routes]>([
    ['a cohort larger than the bound', { [base]: detail(11) }],
    ['a cohort grown past the bound while paging', { [base]: detail(2), [page1]: persons(Array.from({ length: 11 }, (_, i) => [`p${i}`])) }],
    ['a dynamic cohort', { [base]: detail(1, { is_static: false }) }],
    ['a deleted cohort', { [base]: detail(1, { deleted: true }) }],
    ['a cohort upstream does not know', {}],
    ['a key refused for the persons', { [base]: detail(1), [page1]: [403, { detail: "API key missing required scope 'person:read'" }] }],
    ['a key refused for the cohort', { [base]: [403, {}] }],
  ])('knows nothing of %s (its flags go upstream)', async (_name, routes) => {
    expect((await pulled(routes)).members).toBeUndefined();
  });

  it('keeps the last complete list when upstream fails, and forgets it when upstream refuses the key', async () => {
    const ok = { [base]: detail(1), [page1]: persons([['a']]) };
    expect((await pulled(ok, 10, { [base]: 'fail' })).members).toEqual(['a']);
    expect((await pulled(ok, 10, { [base]: detail(1), [page1]: 'fail' })).members).toEqual(['a']);
    expect((await pulled(ok, 10, { [base]: [403, {}] })).members).toBeUndefined();
    // Refused once, not asked again for the same definitions.
    const { paths } = await pulled({ [base]: [403, {}] }, 10, ok);
    expect(paths).toEqual([base]);
  });

  it('keeps the same membership object while the members are the same (kept /flags answers hold), a new one when they change', async () => {
    const ok = { [base]: detail(2), [page1]: persons([['a'], ['b']]) };
    const { memberships } = await pulled(ok, 10, ok, { [base]: detail(2), [page1]: persons([['b'], ['a']]) }, { [base]: detail(2), [page1]: persons([['a'], ['c']]) });
    expect(memberships[1]).toBe(memberships[0]);
    expect(memberships[2]).toBe(memberships[0]);
    expect(memberships[3]).not.toBe(memberships[0]);
  });

  it('reads next links below the upstream URL path', () => {
    expect(nextPath('https://proxy.example/posthog/api/projects/1/cohorts/7/persons/?offset=5', '/posthog')).toBe('/api/projects/1/cohorts/7/persons/?offset=5');
    expect(nextPath('/api/x/?a=1', '')).toBe('/api/x/?a=1');
  });
});
