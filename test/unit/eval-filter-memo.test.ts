/**
 * Property filters shared across flags and cohorts: equal filters (key, operator, value) compile to one slot and
 * one matcher, and an evaluation matches each slot once per property map — the person's and each group's apart —
 * keeping the whole verdict, inconclusive kinds included. Every flag must answer in the shared definitions as it
 * answers compiled alone.
 */
import { describe, expect, it } from 'vitest';
import { compileDefinitions, type CompiledFilter, type PropertyRef } from '../../src/eval/compile.js';
import { createEvaluation, groupProperties, personProperties, setMemoGenerationForTest, type FlagOutcome } from '../../src/eval/evaluate.js';

const prop = (key: string, operator: string | null | undefined, value: unknown, type = 'person') => ({ key, type, value, operator });
const flag = (key: string, properties: unknown[], extra: Record<string, unknown> = {}, filters: Record<string, unknown> = {}) => ({
  id: 1,
  key,
  active: true,
  filters: { groups: [{ properties, rollout_percentage: 100 }], ...filters },
  ...extra,
});
const slotOf = (filter: CompiledFilter | undefined): number => (filter as PropertyRef).slot;
const firstFilter = (defs: ReturnType<typeof compileDefinitions>, key: string): CompiledFilter | undefined =>
  defs.byKey.get(key)?.conditions[0]?.filters[0];

describe('equal property filters share a slot', () => {
  // [name, filter A, filter B, shared?]
  const cases: Array<[string, unknown, unknown, boolean]> = [
    ['same key, operator and value', prop('plan', 'exact', ['pro']), prop('plan', 'exact', ['pro']), true],
    ['absent, null and empty operator are exact', prop('plan', undefined, 'pro'), prop('plan', '', 'pro'), true],
    ['exact spelled out and absent', prop('plan', 'exact', 'pro'), prop('plan', null, 'pro'), true],
    ['person and group type (the map tells them apart)', prop('plan', 'exact', 'pro'), prop('plan', 'exact', 'pro', 'group'), true],
    ['other key', prop('plan', 'exact', 'pro'), prop('tier', 'exact', 'pro'), false],
    ['other operator', prop('plan', 'exact', 'pro'), prop('plan', 'is_not', 'pro'), false],
    ['other value', prop('plan', 'exact', 'pro'), prop('plan', 'exact', 'Pro'), false],
    ['a string and a list of it', prop('plan', 'exact', 'pro'), prop('plan', 'exact', ['pro']), false],
    ['a number and its text', prop('seats', 'gt', 5), prop('seats', 'gt', '5'), false],
    ['list order', prop('plan', 'exact', ['a', 'b']), prop('plan', 'exact', ['b', 'a']), false],
    ['0 and -0 (never shared)', prop('n', 'exact', 0), prop('n', 'exact', -0), false],
    ['NaN and null (never shared)', prop('n', 'exact', Number.NaN), prop('n', 'exact', null), false],
    ['object values (never shared)', prop('n', 'exact', { a: 1 }), prop('n', 'exact', { a: 1 }), false],
    ['a list with a hole and one with null (never shared)', prop('n', 'exact', [, 'a']), prop('n', 'exact', [null, 'a']), false],
    ['a non-string operator (never shared)', prop('n', 7 as never, 'a'), prop('n', 7 as never, 'a'), false],
  ];
  it.each(cases)('%s', (_name, a, b, shared) => {
    const defs = compileDefinitions({ flags: [flag('a', [a]), flag('b', [b])] });
    expect(slotOf(firstFilter(defs, 'a')) === slotOf(firstFilter(defs, 'b'))).toBe(shared);
    expect(defs.propertySlots).toBe(shared ? 1 : 2);
  });

  it('across flags and cohorts', () => {
    const defs = compileDefinitions({
      flags: [flag('a', [prop('plan', 'exact', ['pro'])]), flag('b', [{ key: 'id', type: 'cohort', value: 1 }])],
      cohorts: { '1': { type: 'AND', values: [prop('plan', 'exact', ['pro']), prop('seats', 'gt', 3)] } },
    });
    const leaf = defs.cohorts.get('1')?.leaves?.[0];
    expect(slotOf(leaf)).toBe(slotOf(firstFilter(defs, 'a')));
    expect((leaf as PropertyRef).match).toBe((firstFilter(defs, 'a') as PropertyRef).match);
    expect(defs.propertySlots).toBe(2);
  });
});

describe('an evaluation matches each distinct filter once per property map', () => {
  it('reads the property once for twenty flags with the same filter', () => {
    const defs = compileDefinitions({ flags: Array.from({ length: 20 }, (_, i) => flag(`f${i}`, [prop('plan', 'exact', ['pro'])])) });
    let reads = 0;
    const person = personProperties('u', {});
    Object.defineProperty(person, 'plan', { enumerable: true, get: () => (reads++, 'pro') });
    const evaluation = createEvaluation(defs, { distinctId: 'u', groups: {}, personProperties: person, groupProperties: {}, nowMs: 0 });
    for (const f of defs.flags) expect(evaluation.evaluate(f)).toMatchObject({ kind: 'value', value: true });
    expect(reads).toBe(1);
  });

  // Flags that share filters, matched against different maps and with every inconclusive kind: each flag's outcome
  // in the shared definitions must equal its outcome compiled alone (no slot shared with anything).
  const cohorts = {
    '1': { type: 'AND', values: [prop('plan', 'exact', ['pro'])] },
    '2': { type: 'OR', values: [{ type: 'AND', values: [prop('email', 'regex', '(?<=a)b')] }, { type: 'AND', values: [prop('plan', 'exact', ['pro'])] }] },
  };
  const flags = [
    flag('person-plan', [prop('plan', 'exact', ['pro'])]),
    flag('group-plan', [prop('plan', 'exact', ['pro'], 'group')], {}, { aggregation_group_type_index: 0 }),
    flag('group-plan-condition', [], {}, { groups: [{ properties: [prop('plan', 'exact', ['pro'], 'group')], rollout_percentage: 100, aggregation_group_type_index: 0 }] }),
    flag('project-plan', [prop('plan', 'exact', ['pro'], 'group')], {}, { aggregation_group_type_index: 1 }),
    flag('person-plan-again', [prop('plan', 'exact', ['pro'])]),
    flag('cohort', [{ key: 'id', type: 'cohort', value: 1 }]),
    flag('cohort-not-in', [{ key: 'id', type: 'cohort', value: 1, operator: 'not_in' }]),
    flag('cohort-regex', [{ key: 'id', type: 'cohort', value: 2 }]),
    flag('missing-key', [prop('age', 'gt', 3)]),
    flag('missing-key-again', [prop('age', 'gt', 3)], {}, { groups: [{ properties: [prop('age', 'gt', 3)] }, { properties: [prop('plan', 'exact', ['pro'])] }] }),
    flag('unsupported', [prop('plan', 'is_date_exact', 'x')]),
    flag('unsupported-again', [prop('plan', 'is_date_exact', 'x')]),
    flag('unsupported-missing', [prop('age', 'icontains_multi', 'x')]),
    flag('regex-deferred', [], {}, {
      groups: [{ properties: [prop('email', 'regex', '(?<=a)b')] }, { properties: [prop('plan', 'exact', ['pro'])] }],
    }),
    flag('regex-deferred-again', [], {}, {
      groups: [{ properties: [prop('email', 'regex', '(?<=a)b')] }, { properties: [prop('plan', 'exact', ['pro'])] }],
    }),
    flag('regex-portable', [prop('email', 'regex', '^[a-z]+@')]),
    flag('regex-portable-negated', [prop('email', 'not_regex', '^[a-z]+@')]),
    flag('undefined-value', [prop('ghost', 'exact', 'x')]),
    flag('null-value', [prop('nothing', 'gt', 1)]),
    flag('date', [prop('signup', 'is_date_after', '-30d')]),
    flag('date-again', [prop('signup', 'is_date_after', '-30d')], {}, { groups: [{ properties: [prop('signup', 'is_date_after', '-30d')] }] }),
    flag('negated', [{ ...prop('plan', 'exact', ['pro']), negation: true }]),
  ];
  const mapping = { '0': 'company', '1': 'project' };
  const contexts: Array<[string, Record<string, unknown>, Record<string, string>, Record<string, Record<string, unknown>>]> = [
    ['person pro, company free', { plan: 'pro', email: 'ab@x.io', signup: '2026-01-01', ghost: undefined, nothing: null }, { company: 'c1' }, { company: { plan: 'free' } }],
    ['person free, company pro', { plan: 'free', email: 'Ab@x.io', age: 9 }, { company: 'c1', project: 'p1' }, { company: { plan: 'pro' } }],
    ['no person plan, groups without properties', { email: 'é@x' }, { company: 'c1', project: 'p1' }, {}],
    ['nothing', {}, {}, {}],
  ];
  const nowMs = Date.UTC(2026, 0, 10);
  const evaluateAll = (definitions: unknown, person: Record<string, unknown>, groups: Record<string, string>, given: Record<string, Record<string, unknown>>) => {
    const defs = compileDefinitions(definitions);
    const evaluation = createEvaluation(defs, {
      distinctId: 'user-1',
      groups,
      personProperties: personProperties('user-1', person),
      groupProperties: groupProperties(groups, given),
      nowMs,
    });
    return new Map(defs.flags.map((f): [string, FlagOutcome] => [f.key, evaluation.evaluate(f)]));
  };

  it.each(contexts)('%s: as each flag alone', (_name, person, groups, given) => {
    const shared = evaluateAll({ flags, cohorts, group_type_mapping: mapping }, person, groups, given);
    for (const f of flags) {
      const alone = evaluateAll({ flags: [f], cohorts, group_type_mapping: mapping }, person, groups, given);
      expect([f.key, shared.get(f.key)]).toEqual([f.key, alone.get(f.key)]);
    }
  });

  // The memo tables are shared by all evaluations, each entry stamped with its evaluation's generation.
  const evaluationOf = (defs: ReturnType<typeof compileDefinitions>, [, person, groups, given]: (typeof contexts)[number]) =>
    createEvaluation(defs, { distinctId: 'user-1', groups, personProperties: personProperties('user-1', person), groupProperties: groupProperties(groups, given), nowMs });

  it('evaluations alive together (flags taken in turns), on definitions of other sizes, answer as each alone', () => {
    const big = compileDefinitions({ flags, cohorts, group_type_mapping: mapping });
    const small = compileDefinitions({ flags: flags.slice(0, 5), cohorts, group_type_mapping: mapping });
    const cases = contexts.flatMap((context) => [big, small].map((defs) => ({ context, defs })));
    const expected = cases.map(({ context, defs }) => evaluateAll({ flags: flags.slice(0, defs.flags.length), cohorts, group_type_mapping: mapping }, context[1], context[2], context[3]));
    const alive = cases.map(({ context, defs }) => evaluationOf(defs, context));
    for (let i = 0; i < flags.length; i++) {
      cases.forEach(({ defs }, c) => {
        const f = defs.flags[i];
        if (f !== undefined) expect([c, f.key, alive[c]?.evaluate(f)]).toEqual([c, f.key, expected[c]?.get(f.key)]);
      });
    }
  });

  it('clears the tables when the generations wrap (an entry of the first generation 1 is not read by the next)', () => {
    const defs = compileDefinitions({ flags, cohorts, group_type_mapping: mapping });
    const [pro, free] = contexts as [(typeof contexts)[number], (typeof contexts)[number]];
    const expectedFree = evaluateAll({ flags, cohorts, group_type_mapping: mapping }, free[1], free[2], free[3]);
    try {
      setMemoGenerationForTest(1, true);
      const first = evaluationOf(defs, pro);
      for (const f of defs.flags) first.evaluate(f);
      setMemoGenerationForTest(2 ** 28 - 1, false);
      const last = evaluationOf(defs, pro);
      expect(last.evaluate(defs.flags[0] as never)).toMatchObject({ value: true });
      const wrapped = evaluationOf(defs, free); // generation 1 again
      for (const f of defs.flags) expect([f.key, wrapped.evaluate(f)]).toEqual([f.key, expectedFree.get(f.key)]);
    } finally {
      setMemoGenerationForTest(1, true);
    }
  });

  it('keeps person and group answers apart', () => {
    const outcomes = evaluateAll({ flags, cohorts, group_type_mapping: mapping }, { plan: 'pro' }, { company: 'c1' }, { company: { plan: 'free' } });
    expect(outcomes.get('person-plan')).toMatchObject({ value: true });
    expect(outcomes.get('group-plan')).toMatchObject({ value: false });
    expect(outcomes.get('group-plan-condition')).toMatchObject({ value: false });
    expect(outcomes.get('person-plan-again')).toMatchObject({ value: true });
  });
});
