/**
 * Every compiled flag of a snapshot has one hidden class (V8 map), whatever its definition: the evaluator reads the
 * same fields of every flag at the same sites, and flags of different classes make those reads megamorphic (each
 * a miss of V8's inline caches: at 1,000 flags a flag cost twice what it costs at 30). V8's own %HaveSameMap, through
 * --allow-natives-syntax set at run time (it applies to functions compiled after it).
 */
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { makeEvalDefinitions } from '../bench/definitions.js';

setFlagsFromString('--allow-natives-syntax');
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

const person = { key: 'email', type: 'person', value: '@example.com', operator: 'icontains' };
const flag = (key: string, extra: Record<string, unknown>, filters: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: 1,
  key,
  name: key,
  active: true,
  version: 1,
  filters: { groups: [{ properties: [person], rollout_percentage: 50 }], ...filters },
  ...extra,
});

/** Definitions that differ in every field compile sets (kinds of flags and malformed fields among them). */
const cases: Array<[string, Record<string, unknown>]> = [
  ['plain', flag('plain', {})],
  ['inactive, no id, no name', flag('inactive', { active: false, id: null, name: undefined })],
  ['group flag', flag('group', {}, { aggregation_group_type_index: 0 })],
  ['multivariate with payloads', flag('multi', {}, { multivariate: { variants: [{ key: 'a', rollout_percentage: 100 }] }, payloads: { a: '{"x":1}' } })],
  ['holdout', flag('holdout', {}, { holdout: { id: 3, exclusion_percentage: 10 } })],
  ['continuity, device bucketing', flag('continuity', { ensure_experience_continuity: true, bucketing_identifier: 'device_id' })],
  ['runtime and contexts', flag('limited', { evaluation_runtime: 'server', evaluation_tags: ['web'], has_experiment: true })],
  ['unsupported definition', flag('unsupported', {}, { groups: [{ properties: [{ key: 'x', type: 'cohort', value: 999 }] }] })],
  ['no filters', { key: 'bare', active: true }],
  ['fractional id and version', flag('fractional', { id: 1.5, version: 2.5 })],
];

describe('compiled flags share one hidden class', () => {
  const reference = compileDefinitions({ flags: [flag('reference', {})] }).flags[0] as object;
  // Each case many times over (as a snapshot holds many flags of one kind), beside one of every other case.
  it.each(cases)('%s', (_name, raw) => {
    const copies = Array.from({ length: 100 }, (_, i) => ({ ...raw, key: `${String(raw.key)}-${i}` }));
    const flags = compileDefinitions({ flags: [...cases.map(([, other]) => other), ...copies], group_type_mapping: { '0': 'company' } }).flags;
    expect(flags.filter((f) => !haveSameMap(reference, f)).map((f) => f.key)).toEqual([]);
  });

  it('across 1,000 flags of the benchmark definitions', () => {
    const flags = compileDefinitions(makeEvalDefinitions(1000)).flags;
    expect(flags.filter((f) => !haveSameMap(reference, f)).length).toBe(0);
  });
});

describe('compiled filters share one hidden class, whatever their kind', () => {
  it('property, cohort, flag and broken filters, in conditions and cohorts', () => {
    const defs = compileDefinitions({
      flags: [
        flag('kinds', {}, {
          groups: [
            {
              properties: [
                person,
                { key: 'id', type: 'cohort', value: 1, operator: 'not_in', negation: true },
                { key: 'other', type: 'flag', value: true, dependency_chain: ['other'] },
                null,
                { key: 'seats', type: 'group', value: 3, operator: 'gt' },
              ],
            },
          ],
        }),
      ],
      cohorts: { '1': { type: 'AND', values: [person, { key: 'id', type: 'cohort', value: 2 }, 7] } },
    });
    const filters = [...(defs.flags[0]?.conditions[0]?.filters ?? []), ...(defs.cohorts.get('1')?.leaves ?? [])];
    expect(filters.map((f) => f.kind)).toEqual(['property', 'cohort', 'flag', 'broken', 'property', 'property', 'cohort', 'broken']);
    const first = filters[0] as object;
    expect(filters.filter((f) => !haveSameMap(first, f)).map((f) => f.kind)).toEqual([]);
  });
});
