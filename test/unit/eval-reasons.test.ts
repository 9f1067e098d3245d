/**
 * The server-style reason and condition index each decided flag carries (`get_highest_priority_match_evaluation` in
 * PostHog's `rust/feature-flags/src/flags/flag_matching.rs`): start at
 * no_group_type; each evaluated condition replaces it when its reason scores at least as high (so the later of
 * equals wins); the first match returns; holdouts and disabled flags have no index.
 */
import { describe, expect, it } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { createEvaluation, groupProperties, personProperties } from '../../src/eval/evaluate.js';
import { evaluateQuery, reasonsBody, v2Body, type FlagsQuery } from '../../src/eval/flags-response.js';
import { noRemote } from '../../src/eval/remote-part.js';

const condition = (properties: unknown[], rollout?: number, extra: Record<string, unknown> = {}) => ({
  properties,
  ...(rollout === undefined ? {} : { rollout_percentage: rollout }),
  ...extra,
});
const plan = (value: string) => ({ key: 'plan', type: 'person', value, operator: 'exact' });

const cases: Array<[string, Record<string, unknown>, Record<string, unknown>, unknown]> = [
  ['first condition matches', { groups: [condition([plan('pro')]), condition([])] }, { plan: 'pro' }, { value: true, reason: 'condition_match', conditionIndex: 0 }],
  ['second condition matches', { groups: [condition([plan('free')]), condition([])] }, { plan: 'pro' }, { value: true, reason: 'condition_match', conditionIndex: 1 }],
  ['no condition matches: the later of equals', { groups: [condition([plan('free')]), condition([plan('team')])] }, { plan: 'pro' }, { value: false, reason: 'no_condition_match', conditionIndex: 1 }],
  ['out of rollout beats a later non-match', { groups: [condition([], 0), condition([plan('free')])] }, { plan: 'pro' }, { value: false, reason: 'out_of_rollout_bound', conditionIndex: 0 }],
  // Newest flag_matching.rs get_match: no condition to evaluate leaves the seed, no_group_type.
  ['no conditions at all', { groups: [] }, {}, { value: false, reason: 'no_group_type', conditionIndex: null }],
  ['group condition without its group', { groups: [condition([], 100, { aggregation_group_type_index: 0 })] }, {}, { value: false, reason: 'no_group_type', conditionIndex: 0 }],
  // NoConditionMatchGroupsNotEvaluated: sent as no_condition_match with its own description.
  ['group condition skipped, person condition fails', { groups: [condition([], 100, { aggregation_group_type_index: 0 }), condition([plan('free')])] }, { plan: 'pro' }, { value: false, reason: 'no_condition_match_groups_not_evaluated', conditionIndex: 1 }],
  ['person condition fails, group condition skipped', { groups: [condition([plan('free')]), condition([], 100, { aggregation_group_type_index: 0 })] }, { plan: 'pro' }, { value: false, reason: 'no_condition_match_groups_not_evaluated', conditionIndex: 0 }],
  ['group condition skipped, person condition out of rollout', { groups: [condition([], 100, { aggregation_group_type_index: 0 }), condition([], 0)] }, {}, { value: false, reason: 'out_of_rollout_bound', conditionIndex: 1 }],
  ['holdout of 100%', { groups: [condition([])], holdout: { id: 3, exclusion_percentage: 100 } }, {}, { value: 'holdout-3', reason: 'holdout_condition_value', conditionIndex: null }],
  // Each condition is skipped in turn, each a no_group_type at its index: the last index stays.
  ['group flag without the group', { aggregation_group_type_index: 0, groups: [condition([])] }, {}, { value: false, reason: 'no_group_type', conditionIndex: 0 }],
  ['group flag of two conditions without the group', { aggregation_group_type_index: 0, groups: [condition([]), condition([plan('x')])] }, {}, { value: false, reason: 'no_group_type', conditionIndex: 1 }],
  ['group flag of no conditions without the group', { aggregation_group_type_index: 0, groups: [] }, {}, { value: false, reason: 'no_group_type', conditionIndex: null }],
  ['a match after an undecidable condition is partial', { groups: [condition([{ key: 'age', type: 'person', value: 3, operator: 'gt' }]), condition([plan('pro')])] }, { plan: 'pro' }, { value: true, reason: 'condition_match', conditionIndex: 1, partial: true }],
  ['a non-match after an undecidable condition is no answer at all', { groups: [condition([{ key: 'age', type: 'person', value: 3, operator: 'gt' }]), condition([plan('free')])] }, { plan: 'pro' }, undefined],
  ['variant override', { groups: [condition([], 100, { variant: 'b' })], multivariate: { variants: [{ key: 'a', rollout_percentage: 100 }, { key: 'b', rollout_percentage: 0 }] } }, {}, { value: 'b', reason: 'condition_match', conditionIndex: 0 }],
];

describe('reasons and condition indexes', () => {
  it.each(cases)('%s', (_name, filters, properties, expected) => {
    const defs = compileDefinitions({ flags: [{ id: 1, key: 'f', active: true, filters }], group_type_mapping: { '0': 'company' }, cohorts: {} });
    const evaluation = createEvaluation(defs, {
      distinctId: 'user-1',
      groups: {},
      personProperties: personProperties('user-1', properties),
      groupProperties: groupProperties({}, {}),
      nowMs: Date.now(),
    });
    const outcome = evaluation.evaluate(defs.flags[0] as (typeof defs.flags)[number]);
    if (expected === undefined) expect(outcome).toEqual({ kind: 'inconclusive', reason: 'missing_context' });
    else expect(outcome).toEqual({ kind: 'value', partial: false, ...(expected as object) });
  });

  it.each([
    ['an empty key', ''],
    ['a boolean', true],
    ['null', null],
  ])('a group named with %s is a group not given (upstream hashes only text or a number)', (_name, key) => {
    const defs = compileDefinitions({ flags: [{ id: 1, key: 'f', active: true, filters: { aggregation_group_type_index: 0, groups: [condition([])] } }], group_type_mapping: { '0': 'company' }, cohorts: {} });
    const groups = { company: key };
    const evaluation = createEvaluation(defs, { distinctId: 'u', groups, personProperties: { distinct_id: 'u' }, groupProperties: groupProperties(groups, {}), nowMs: 0 });
    expect(evaluation.evaluate(defs.flags[0] as never)).toEqual({ kind: 'value', value: false, reason: 'no_group_type', conditionIndex: 0, partial: false });
  });

  it('sends a skipped group condition\'s reason as no_condition_match with upstream\'s description', () => {
    const defs = compileDefinitions({ flags: [{ id: 1, key: 'f', active: true, filters: { groups: [condition([plan('free')]), condition([], 100, { aggregation_group_type_index: 0 })] } }], group_type_mapping: { '0': 'company' }, cohorts: {} });
    const query: FlagsQuery = { distinctId: 'u', personProperties: { plan: 'pro' }, groups: {}, groupProperties: {}, flagKeys: null, runtime: 'all', contexts: null };
    const { decided } = evaluateQuery(defs, query, 0);
    expect(JSON.parse(v2Body(decided, noRemote(false), { requestId: 'r', evaluatedAt: 1 }).toString()).flags.f.reason).toEqual({
      code: 'no_condition_match',
      condition_index: 0,
      description: 'No matching condition set (group conditions were not evaluated because no group type was provided)',
    });
    expect(JSON.parse(reasonsBody(decided).toString()).f.evaluation).toEqual({ reason: 'no_condition_match', condition_index: 0 });
  });

  it('a disabled flag is flag_disabled whatever came before, and a dependency\'s reasons are not its dependant\'s', () => {
    const defs = compileDefinitions({
      flags: [
        { id: 1, key: 'off', active: false, filters: { groups: [condition([])] } },
        { id: 2, key: 'on', active: true, filters: { groups: [condition([{ key: 'off', type: 'flag', operator: 'flag_evaluates_to', value: false, dependency_chain: ['off'] }])] } },
      ],
      cohorts: {},
    });
    const evaluation = createEvaluation(defs, { distinctId: 'u', groups: {}, personProperties: { distinct_id: 'u' }, groupProperties: {}, nowMs: 0 });
    expect(evaluation.evaluate(defs.byKey.get('off') as never)).toEqual({ kind: 'value', value: false, reason: 'flag_disabled', conditionIndex: null, partial: false });
    expect(evaluation.evaluate(defs.byKey.get('on') as never)).toEqual({ kind: 'value', value: true, reason: 'condition_match', conditionIndex: 0, partial: false });
  });

  it('a dependency decided only partially makes its dependant partial, also when read from the shared cache', () => {
    const defs = compileDefinitions({
      flags: [
        { id: 1, key: 'base', active: true, filters: { groups: [condition([{ key: 'age', type: 'person', value: 3, operator: 'gt' }]), condition([])] } },
        { id: 2, key: 'top', active: true, filters: { groups: [condition([{ key: 'base', type: 'flag', operator: 'flag_evaluates_to', value: true, dependency_chain: ['base'] }])] } },
      ],
      cohorts: {},
    });
    for (const order of [['top', 'base', 'top'], ['base', 'top']]) {
      const evaluation = createEvaluation(defs, { distinctId: 'u', groups: {}, personProperties: { distinct_id: 'u' }, groupProperties: {}, nowMs: 0 });
      for (const key of order) expect(evaluation.evaluate(defs.byKey.get(key) as never), `${order} ${key}`).toMatchObject({ kind: 'value', value: true, partial: true });
    }
  });

  it('marks the flags a condition\'s dependency chain names (a cohort\'s flag filter is no dependency), and evaluates each as a dependency as on its own', () => {
    const dependsOn = (key: string, chain: string[]) => ({ key, type: 'flag', operator: 'flag_evaluates_to', value: true, dependency_chain: chain });
    const defs = compileDefinitions({
      flags: [
        { id: 1, key: 'base', active: true, filters: { groups: [condition([plan('pro')])] } },
        { id: 2, key: 'mid', active: true, filters: { groups: [condition([dependsOn('base', ['base'])])] } },
        { id: 3, key: 'top', active: true, filters: { groups: [condition([{ key: 'id', type: 'cohort', value: 7 }])] } },
        { id: 4, key: 'alone', active: true, filters: { groups: [condition([])] } },
        { id: 5, key: 'other', active: false, filters: { groups: [condition([])] } },
      ],
      cohorts: { '7': { type: 'AND', values: [{ type: 'AND', values: [dependsOn('mid', ['base', 'mid']), dependsOn('other', ['other'])] }] } },
    });
    expect(defs.flags.filter((flag) => flag.dependedOn).map((flag) => flag.key)).toEqual(['base']);
    // Whichever order the flags are evaluated in (a dependency met first on its own, or first through a dependant).
    for (const properties of [{ plan: 'pro' }, { plan: 'free' }]) {
      const answers = [['base', 'mid', 'top', 'other'], ['top', 'mid', 'base', 'other'], ['other', 'top', 'base', 'mid']].map((order) => {
        const evaluation = createEvaluation(defs, { distinctId: 'u', groups: {}, personProperties: personProperties('u', properties), groupProperties: {}, nowMs: 0 });
        return Object.fromEntries(order.map((key) => [key, evaluation.evaluate(defs.byKey.get(key) as never)]).sort(([a], [b]) => String(a).localeCompare(String(b))));
      });
      expect(answers[1]).toEqual(answers[0]);
      expect(answers[2]).toEqual(answers[0]);
      // `top`'s cohort holds flag filters, which upstream never matches: never.
      expect([answers[0]?.base, answers[0]?.mid, answers[0]?.top]).toMatchObject([{ value: properties.plan === 'pro' }, { value: properties.plan === 'pro' }, { value: false }]);
    }
  });

  it.each([
    ['a flag whose chain lists itself', [{ id: 1, key: 'a', active: true, filters: { groups: [condition([{ key: 'a', type: 'flag', operator: 'flag_evaluates_to', value: true, dependency_chain: ['a'] }]), condition([])] } }]],
    [
      'two flags depending on each other',
      [
        { id: 1, key: 'a', active: true, filters: { groups: [condition([{ key: 'b', type: 'flag', operator: 'flag_evaluates_to', value: true, dependency_chain: ['a', 'b'] }]), condition([])] } },
        { id: 2, key: 'b', active: true, filters: { groups: [condition([{ key: 'a', type: 'flag', operator: 'flag_evaluates_to', value: true, dependency_chain: ['b', 'a'] }])] } },
      ],
    ],
  ])('a dependency cycle (%s) leaves the flag undecided, without recursing', (_name, flags) => {
    const defs = compileDefinitions({ flags, cohorts: {} });
    const evaluation = createEvaluation(defs, { distinctId: 'u', groups: {}, personProperties: { distinct_id: 'u' }, groupProperties: {}, nowMs: 0 });
    for (const flag of defs.flags) expect(evaluation.evaluate(flag)).toEqual({ kind: 'inconclusive', reason: 'unresolved_dependency' });
  });
});
