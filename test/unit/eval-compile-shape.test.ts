/**
 * Every compiled flag of a snapshot has one hidden class (V8 map), whatever its definition: the evaluator reads the
 * same fields of every flag at the same sites, and flags of different classes make those reads megamorphic (each
 * a miss of V8's inline caches: at 1,000 flags a flag cost twice what it costs at 30). V8's own %HaveSameMap, through
 * --allow-natives-syntax set at run time (it applies to functions compiled after it).
 */
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { v2Entry } from '../../src/eval/flag-fragments.js';
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

describe('what a compiled flag holds before its first answer', () => {
  // The maps a flag has nothing to put in are one map shared by every such flag, the entry table is made by the
  // first entry, and the v2 metadata is kept as values (its text is built with the entry, byte for byte as before).
  const fresh = (raw: Record<string, unknown>) => compileDefinitions({ flags: [raw, { ...raw, key: `${String(raw.key)}-2` }] }).flags;
  it.each(cases)('%s', (_name, raw) => {
    const [a, b] = fresh(raw) as [(typeof compiled)[number], (typeof compiled)[number]];
    expect(a.fragments.built).toBeNull();
    if (a.payloads.size === 0) expect(a.payloads).toBe(b.payloads);
    else expect(a.payloads).not.toBe(b.payloads);
    if (a.variants.length === 0 && a.holdout === null) expect(a.fragments.valueSlots).toBe(b.fragments.valueSlots);
    else expect(a.fragments.valueSlots).not.toBe(b.fragments.valueSlots);
  });

  const compiled = compileDefinitions({ flags: [] }).flags;
  it.each([
    [{ id: 7, key: 'k', name: 'N', version: 2, has_experiment: true, active: true, filters: { groups: [{}] } }, true, ',"k":{"key":"k","enabled":true,"variant":null,"reason":{"code":"condition_match","condition_index":0,"description":"Matched condition set 1"},"metadata":{"id":7,"version":2,"description":"N","has_experiment":true,"payload":null}}'],
    [{ id: null, key: 'q"é', version: 1.5, has_experiment: false, active: true, filters: { groups: [{}] } }, false, ',"q\\"é":{"key":"q\\"é","enabled":false,"variant":null,"reason":{"code":"condition_match","condition_index":0,"description":"Matched condition set 1"},"metadata":{"id":null,"version":1.5,"description":null,"has_experiment":false,"payload":null}}'],
    [{ id: 3, key: 'p', name: 'ünï "x"', active: true, filters: { groups: [{}], payloads: { true: '{"a":1}', false: '' } } }, true, ',"p":{"key":"p","enabled":true,"variant":null,"reason":{"code":"condition_match","condition_index":0,"description":"Matched condition set 1"},"metadata":{"id":3,"version":null,"description":"ünï \\"x\\"","has_experiment":true,"payload":"{\\"a\\":1}"}}'],
  ])('v2 entry of %j', (raw, value, text) => {
    const f = (compileDefinitions({ flags: [raw] }).flags[0] as (typeof compiled)[number]).fragments;
    const outcome = { value, reason: 'condition_match' as const, conditionIndex: 0 };
    expect(v2Entry(f, outcome).toString('utf8')).toBe(text);
    expect(f.built?.size).toBe(1);
    expect(v2Entry(f, outcome)).toBe(v2Entry(f, outcome)); // built once, kept
  });
});
