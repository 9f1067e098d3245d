/**
 * A flag depending on a flag the definitions lack. local_evaluation leaves out deleted flags, encrypted remote configs
 * and survey-targeting flags, and gives a flag filter naming one (directly or through another flag) an empty
 * `dependency_chain`, as for a cycle (PostHog/posthog `products/feature_flags/backend/local_evaluation.py`,
 * `_DependencyChainBuilder.build_chain`). Upstream's flags service answers such a flag `false`, reason
 * `missing_dependency`, before its conditions when the missing flag is deleted or an encrypted remote config
 * (`flags_cache.py` `_compute_flag_dependencies`; `flag_matching.rs` `FeatureFlagMatcher::evaluate_single_flag`),
 * and evaluates it normally when it is a survey's: the sidecar cannot tell which, so the flag is never decided here,
 * even when another condition would match (posthog-node then answers that condition's value).
 */
import { describe, expect, it } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { createEvaluation, personProperties } from '../../src/eval/evaluate.js';

const always = { properties: [], rollout_percentage: 100 };
const on = { id: 1, key: 'on', active: true, filters: { groups: [always] } };
const dependsOn = (key: string, chain: unknown, operator = 'flag_evaluates_to') => ({ properties: [{ key, type: 'flag', operator, value: true, dependency_chain: chain }], rollout_percentage: 100 });
const flag = (id: number, key: string, groups: unknown[], active = true) => ({ id, key, active, filters: { groups } });

type Expected = 'inconclusive' | boolean;
const cases: Array<[string, unknown[], Expected]> = [
  // What local_evaluation sends for a deleted, encrypted or survey flag (id 42): its id as the key, an empty chain.
  ['a missing flag, then a condition that matches', [flag(9, 'subject', [dependsOn('42', []), always])], 'inconclusive'],
  ['a condition that matches, then a missing flag', [flag(9, 'subject', [always, dependsOn('42', [])])], 'inconclusive'],
  ['a missing flag under another operator', [flag(9, 'subject', [dependsOn('42', [], 'exact'), always])], 'inconclusive'],
  ['a chain naming a flag the definitions lack', [flag(9, 'subject', [dependsOn('on', ['ghost', 'on']), always])], 'inconclusive'],
  // Through another flag: local_evaluation gives that one's dependants an empty chain too; a chain through it is
  // marked all the same.
  ['through a flag whose dependency is missing', [flag(8, 'mid', [dependsOn('42', []), always]), flag(9, 'subject', [dependsOn('mid', ['mid']), always])], 'inconclusive'],
  // A cycle: upstream counts its flags (and their dependants) among those with missing dependencies too.
  ['a cycle (empty chain to a present flag)', [flag(9, 'subject', [dependsOn('on', []), always])], 'inconclusive'],
  // Not this case.
  ['a present dependency', [flag(9, 'subject', [dependsOn('on', ['on'])])], true],
  ['an inactive flag with a missing dependency', [flag(9, 'subject', [dependsOn('42', []), always], false)], false],
  ['a chain that is no array (not local_evaluation\'s): the SDK\'s per-condition handling', [flag(9, 'subject', [dependsOn('on', 'on'), always])], true],
];

describe('a flag whose dependency is missing from the definitions', () => {
  it.each(cases)('%s', (_name, flags, expected) => {
    const defs = compileDefinitions({ flags: [on, ...flags], cohorts: {}, group_type_mapping: {} });
    const subject = defs.byKey.get('subject');
    expect(subject?.missingDependency).toBe(expected === 'inconclusive');
    const outcome = createEvaluation(defs, { distinctId: 'user-1', groups: {}, personProperties: personProperties('user-1', {}), groupProperties: {}, nowMs: 0 }).evaluate(subject as never);
    if (expected === 'inconclusive') expect(outcome.kind).toBe('inconclusive');
    else expect(outcome).toMatchObject({ kind: 'value', value: expected });
  });

  it('leaves the flag out of what a dependant reads: the dependant is undecided too', () => {
    const defs = compileDefinitions({ flags: [on, flag(8, 'mid', [dependsOn('42', []), always]), flag(9, 'subject', [always, dependsOn('mid', [])])] });
    const evaluation = createEvaluation(defs, { distinctId: 'user-1', groups: {}, personProperties: personProperties('user-1', {}), groupProperties: {}, nowMs: 0 });
    expect(evaluation.evaluate(defs.byKey.get('mid') as never).kind).toBe('inconclusive');
    expect(evaluation.evaluate(defs.byKey.get('subject') as never).kind).toBe('inconclusive');
  });
});
