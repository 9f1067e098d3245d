/**
 * A flag filter inside a cohort, as upstream's flags service matches it: PostHog/posthog
 * `rust/feature-flags/src/cohorts/cohort_operations.rs`, `evaluate_cohort_filter` hands every non-cohort leaf to
 * `evaluate_property_with_negation`, i.e. `match_property(…).unwrap_or(false)` then `negation`
 * (`rust/feature-flags/src/properties/property_matching.rs`, `match_property`): `flag_evaluates_to` is refused
 * there (a ValidationError), so the leaf never matches, and negated always does; any other operator matches the
 * filter's key among the properties, as a property filter. The dependency itself is never evaluated. posthog-node
 * (`matchPropertyGroup`) evaluates the dependency instead, so these cases are a server divergence.
 */
import { describe, expect, it } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { createEvaluation, personProperties } from '../../src/eval/evaluate.js';

const on = { id: 1, key: 'on', active: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } };
// Undecidable here: it reads a property no request below sends. A dependency on it would make the cohort undecidable.
const unknown = { id: 2, key: 'unknown', active: true, filters: { groups: [{ properties: [{ key: 'age', type: 'person', operator: 'gt', value: 3 }] }] } };
const flagLeaf = (key: string, extra: Record<string, unknown> = {}) => ({ key, type: 'flag', operator: 'flag_evaluates_to', value: true, dependency_chain: [key], ...extra });
const plan = { key: 'plan', type: 'person', operator: 'exact', value: 'pro' };

const cases: Array<[string, string, unknown[], Record<string, unknown>, boolean]> = [
  ['a dependency that is on: never matches', 'AND', [flagLeaf('on')], {}, false],
  ['negated: always matches', 'AND', [flagLeaf('on', { negation: true })], {}, true],
  ['a dependency undecidable here: still decided', 'AND', [flagLeaf('unknown')], {}, false],
  ['negated, dependency undecidable here', 'AND', [flagLeaf('unknown', { negation: true })], {}, true],
  ['no dependency_chain (as local_evaluation sends cohorts): decided', 'AND', [flagLeaf('on', { dependency_chain: undefined })], {}, false],
  ['OR with a property that holds', 'OR', [flagLeaf('on'), plan], { plan: 'pro' }, true],
  ['AND with a property that holds', 'AND', [plan, flagLeaf('on')], { plan: 'pro' }, false],
  // Any other operator: a property filter on the key.
  ['exact: the key among the properties, matching', 'AND', [flagLeaf('on', { operator: 'exact', value: 'yes' })], { on: 'yes' }, true],
  ['exact: the key among the properties, not matching', 'AND', [flagLeaf('on', { operator: 'exact', value: 'yes' })], { on: 'no' }, false],
  ['is_set, key absent, decided by the other leaf', 'OR', [flagLeaf('on', { operator: 'is_set' }), plan], { plan: 'pro' }, true],
];

describe('a flag filter inside a cohort', () => {
  it.each(cases)('%s', (_name, type, values, properties, expected) => {
    const subject = { id: 9, key: 'subject', active: true, filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 7 }], rollout_percentage: 100 }] } };
    const defs = compileDefinitions({ flags: [on, unknown, subject], cohorts: { '7': { type: 'AND', values: [{ type, values }] } }, group_type_mapping: {} });
    const evaluation = createEvaluation(defs, { distinctId: 'user-1', groups: {}, personProperties: personProperties('user-1', properties), groupProperties: {}, nowMs: 0 });
    expect(evaluation.evaluate(defs.byKey.get('subject') as never)).toMatchObject({ kind: 'value', value: expected });
  });

  it('does not make the flag it names a dependency', () => {
    const defs = compileDefinitions({ flags: [on], cohorts: { '7': { type: 'AND', values: [{ type: 'AND', values: [flagLeaf('on')] }] } } });
    expect(defs.byKey.get('on')?.dependedOn).toBe(false);
  });
});
