/**
 * Early-access enrolment, as upstream's flags service applies it (PostHog/posthog rust/feature-flags
 * src/flags/flag_matching.rs, FeatureFlagMatcher::get_match): with `filters.feature_enrollment: true`, a person
 * property `$feature_enrollment/<key>` decides the flag before its holdout and release conditions — `true` or
 * `"true"` on, anything else off — with reason `super_condition_value`, condition index 0, no variant, and the
 * flag's `"true"` payload either way. Without the property upstream reads the person's stored one: undecided here.
 * The legacy `super_groups` is no longer read by upstream's matcher (its FlagFilters has no such field).
 */
import { describe, expect, it } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { evaluateQuery, legacyBody, reasonsBody, v2Body, type FlagsQuery } from '../../src/eval/flags-response.js';
import { decidedJson } from '../../src/eval/ofrep.js';
import { noRemote } from '../../src/eval/remote-part.js';

const key = 'new-dashboard';
const property = `$feature_enrollment/${key}`;
/** What the early-access feature API writes: a 0% release condition and the enrolment marker. */
const enrolled = (extra: Record<string, unknown> = {}, filters: Record<string, unknown> = {}) => ({
  id: 7,
  key,
  version: 3,
  active: true,
  ...extra,
  filters: { groups: [{ properties: [], rollout_percentage: 0 }], feature_enrollment: true, payloads: { true: '{"beta":true}' }, ...filters },
});
const legacySuperGroups = {
  super_groups: [{ properties: [{ key: property, type: 'person', value: ['true'], operator: 'exact' }], rollout_percentage: 100 }],
};

function answer(flags: unknown[], person: Record<string, unknown>, extra: Partial<FlagsQuery> = {}) {
  const defs = compileDefinitions({ flags, group_type_mapping: { '0': 'company' }, cohorts: {} });
  const query: FlagsQuery = { distinctId: 'user-1', personProperties: person, groups: {}, groupProperties: {}, flagKeys: null, runtime: 'all', contexts: null, ...extra };
  return evaluateQuery(defs, query, 0);
}

const decided = { reason: 'super_condition_value', conditionIndex: 0 };
const cases: Array<[string, unknown[], Record<string, unknown>, Partial<FlagsQuery>, unknown]> = [
  ['enrolled (true) beats a 0% condition', [enrolled()], { [property]: true }, {}, { value: true, ...decided }],
  ['enrolled ("true", as posthog-js sets it)', [enrolled()], { [property]: 'true' }, {}, { value: true, ...decided }],
  ['opted out (false): off, no fall-through', [enrolled({}, { groups: [{ properties: [], rollout_percentage: 100 }] })], { [property]: false }, {}, { value: false, ...decided }],
  ['opted out ("false")', [enrolled()], { [property]: 'false' }, {}, { value: false, ...decided }],
  ['any other value is off ("TRUE")', [enrolled()], { [property]: 'TRUE' }, {}, { value: false, ...decided }],
  ['a number is not "true"', [enrolled()], { [property]: 1 }, {}, { value: false, ...decided }],
  ['null is a value present', [enrolled()], { [property]: null }, {}, { value: false, ...decided }],
  ['not given: undecided, even where the conditions would match (upstream reads the stored person)', [enrolled({}, { groups: [{ properties: [], rollout_percentage: 100 }] })], {}, {}, 'undecided'],
  ['a multivariate flag enrolled is true, no variant', [enrolled({}, { multivariate: { variants: [{ key: 'a', rollout_percentage: 100 }] } })], { [property]: true }, {}, { value: true, ...decided }],
  ['before the holdout', [enrolled({}, { holdout: { id: 4, exclusion_percentage: 100 } })], { [property]: true }, {}, { value: true, ...decided }],
  ['person-level for a group flag, its group not given', [enrolled({}, { aggregation_group_type_index: 0 })], { [property]: 'true' }, {}, { value: true, ...decided }],
  ['legacy super_groups alone are not read: the conditions decide', [enrolled({}, { feature_enrollment: undefined, ...legacySuperGroups })], { [property]: 'true' }, {}, { value: false, reason: 'out_of_rollout_bound', conditionIndex: 0 }],
  ['feature_enrollment false is no enrolment', [enrolled({}, { feature_enrollment: false })], { [property]: true }, {}, { value: false, reason: 'out_of_rollout_bound', conditionIndex: 0 }],
  ['continuity, no $anon_distinct_id: decided (nothing hashed)', [enrolled({ ensure_experience_continuity: true })], { [property]: true }, { decideContinuity: true }, { value: true, ...decided }],
  ['continuity with $anon_distinct_id: upstream\'s (it writes hash-key overrides)', [enrolled({ ensure_experience_continuity: true })], { [property]: true }, { decideContinuity: false }, 'undecided'],
  ['an inactive flag stays out of the answer', [enrolled({ active: false })], { [property]: true }, {}, 'absent'],
];

describe('early-access enrolment (feature_enrollment)', () => {
  it.each(cases)('%s', (_name, flags, person, extra, expected) => {
    const local = answer(flags, person, extra);
    if (expected === 'undecided') return void expect(local).toMatchObject({ decided: [], undecided: [key] });
    if (expected === 'absent') return void expect(local).toMatchObject({ decided: [], undecided: [] });
    expect(local.undecided).toEqual([]);
    const [only] = local.decided;
    expect({ value: only?.value, reason: only?.reason, conditionIndex: only?.conditionIndex }).toEqual(expected);
  });

  it('decides a flag depending on an enrolled flag (the dependency\'s value is the enrolment)', () => {
    const dependant = { id: 8, key: 'dashboard-tour', active: true, filters: { groups: [{ properties: [{ key, type: 'flag', value: true, operator: 'flag_evaluates_to', dependency_chain: [key] }] }] } };
    for (const [given, value] of [[true, true], ['false', false]] as const) {
      const local = answer([enrolled(), dependant], { [property]: given }, { flagKeys: ['dashboard-tour'] });
      expect(local.decided.map((d) => [d.flag.key, d.value, d.reason])).toEqual([['dashboard-tour', value, value ? 'condition_match' : 'no_condition_match']]);
    }
    expect(answer([enrolled(), dependant], {}, { flagKeys: ['dashboard-tour'] }).undecided).toEqual(['dashboard-tour']);
  });

  it('answers as upstream\'s /flags: "Super condition value", index 0, the "true" payload on and off', () => {
    for (const [given, enabled] of [[true, true], [false, false]] as const) {
      const local = answer([enrolled()], { [property]: given });
      const stamp = { requestId: 'r', evaluatedAt: 1 };
      expect(JSON.parse(v2Body(local.decided, noRemote(false), stamp).toString()).flags[key]).toEqual({
        key,
        enabled,
        variant: null,
        reason: { code: 'super_condition_value', condition_index: 0, description: 'Super condition value' },
        metadata: { id: 7, version: 3, description: null, has_experiment: true, payload: '{"beta":true}' },
      });
      const legacy = JSON.parse(legacyBody(local.decided, noRemote(false), stamp).toString());
      expect(legacy).toMatchObject({ featureFlags: { [key]: enabled }, featureFlagPayloads: { [key]: '{"beta":true}' } });
      expect(JSON.parse(reasonsBody(local.decided).toString())).toEqual({ [key]: { value: enabled, evaluation: { reason: 'super_condition_value', condition_index: 0 } } });
      expect(JSON.parse(decidedJson(local.decided[0] as (typeof local.decided)[number]))).toMatchObject({ value: enabled, reason: 'TARGETING_MATCH', metadata: { posthogReason: 'super_condition_value', payload: '{"beta":true}' } });
    }
  });
});
