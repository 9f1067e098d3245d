/**
 * A condition's flag filter (`type: "flag"`) matches only with the operator `flag_evaluates_to`, as upstream's
 * flags service decides it (PostHog/posthog `rust/feature-flags/src/flags/flag_matching_utils.rs`,
 * `match_flag_value_to_flag_filter`, called by `FeatureFlagMatcher::is_condition_match`): any other operator, or
 * none, fails the condition whatever the dependency's value, so such a flag is decided here without asking
 * upstream. posthog-node reads no operator there; posthog-python's own test
 * (`test_flag_dependencies_wrong_operator_no_match_locally`) expects no match, as the server.
 */
import { describe, expect, it } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { createEvaluation, personProperties, type FlagOutcome } from '../../src/eval/evaluate.js';

const on = { id: 1, key: 'base-on', active: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } };
const off = { id: 2, key: 'base-off', active: true, filters: { groups: [{ properties: [], rollout_percentage: 0 }] } };
// Undecidable here: it reads a property no request below sends.
const unknown = { id: 3, key: 'base-unknown', active: true, filters: { groups: [{ properties: [{ key: 'plan', type: 'person', operator: 'exact', value: 'pro' }] }] } };
const dependsOn = (key: string, operator: unknown, value: unknown = true, chain: unknown = [key]) => ({
  key,
  type: 'flag',
  value,
  ...(operator === undefined ? {} : { operator }),
  dependency_chain: chain,
});
const absent = { key: 'age', type: 'person', operator: 'gt', value: 3 };
const decided = (value: boolean, reason: string, conditionIndex: number): FlagOutcome => ({ kind: 'value', value, reason: reason as never, conditionIndex, partial: false });
const inconclusive = (reason: string): FlagOutcome => ({ kind: 'inconclusive', reason: reason as never });

const cases: Array<[string, unknown[][], FlagOutcome]> = [
  ['flag_evaluates_to, dependency on', [[dependsOn('base-on', 'flag_evaluates_to')]], decided(true, 'condition_match', 0)],
  ['flag_evaluates_to false, dependency off', [[dependsOn('base-off', 'flag_evaluates_to', false)]], decided(true, 'condition_match', 0)],
  ['exact, dependency on', [[dependsOn('base-on', 'exact')]], decided(false, 'no_condition_match', 0)],
  ['exact false, dependency off', [[dependsOn('base-off', 'exact', false)]], decided(false, 'no_condition_match', 0)],
  ['no operator, dependency on', [[dependsOn('base-on', undefined)]], decided(false, 'no_condition_match', 0)],
  ['null operator', [[dependsOn('base-on', null)]], decided(false, 'no_condition_match', 0)],
  ['another case: FLAG_EVALUATES_TO', [[dependsOn('base-on', 'FLAG_EVALUATES_TO')]], decided(false, 'no_condition_match', 0)],
  ['is_not, dependency on', [[dependsOn('base-on', 'is_not')]], decided(false, 'no_condition_match', 0)],
  // The dependency's value cannot change the answer, so an undecidable or broken one is not asked upstream.
  ['exact, dependency undecidable here', [[dependsOn('base-unknown', 'exact')]], decided(false, 'no_condition_match', 0)],
  ['flag_evaluates_to, dependency undecidable here', [[dependsOn('base-unknown', 'flag_evaluates_to')]], inconclusive('unresolved_dependency')],
  // An empty chain (a missing or cyclic dependency) leaves the whole flag to upstream, whatever the operator:
  // upstream's dependency graph counts every flag filter (eval-missing-dependency.test.ts).
  ['exact, empty dependency_chain', [[dependsOn('base-on', 'exact', true, [])]], inconclusive('unsupported_definition')],
  ['flag_evaluates_to, empty dependency_chain', [[dependsOn('base-on', 'flag_evaluates_to', true, [])]], inconclusive('unsupported_definition')],
  // A failing filter fails its condition even after one the request cannot decide.
  ['exact after an absent property', [[absent, dependsOn('base-on', 'exact')]], decided(false, 'no_condition_match', 0)],
  ['exact in the first condition, the second matches', [[dependsOn('base-on', 'exact')], []], decided(true, 'condition_match', 1)],
];

describe('a condition\'s flag filter and its operator', () => {
  it.each(cases)('%s', (_name, conditions, expected) => {
    const dependant = { id: 9, key: 'dependant', active: true, filters: { groups: conditions.map((properties) => ({ properties, rollout_percentage: 100 })) } };
    const defs = compileDefinitions({ flags: [on, off, unknown, dependant], cohorts: {}, group_type_mapping: {} });
    const evaluation = createEvaluation(defs, { distinctId: 'user-1', groups: {}, personProperties: personProperties('user-1', {}), groupProperties: {}, nowMs: 0 });
    expect(evaluation.evaluate(defs.byKey.get('dependant') as never)).toEqual(expected);
  });
});
