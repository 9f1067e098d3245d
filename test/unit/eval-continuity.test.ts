/**
 * Experience-continuity flags (docs/evaluation.md, "What goes upstream"): decided locally, as upstream answers them,
 * when their outcome hashes nothing (so no hash-key override can change it) and the request carries no
 * `$anon_distinct_id`; still upstream's otherwise. The SDK's behaviour (always inconclusive) stays the default.
 */
import { describe, expect, it } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { createEvaluation, personProperties } from '../../src/eval/evaluate.js';

const condition = (rollout: number | null | undefined, extra: Record<string, unknown> = {}) => ({
  properties: [{ key: 'plan', type: 'person', value: 'pro', operator: 'exact' }],
  ...(rollout === undefined ? {} : { rollout_percentage: rollout }),
  ...extra,
});
const variants = (...rollouts: number[]) => ({ variants: rollouts.map((rollout, i) => ({ key: `v${i}`, rollout_percentage: rollout })) });

// [name, filters, decided locally (continuity flags only when the request has no $anon_distinct_id)]
const cases: Array<[string, Record<string, unknown>, boolean]> = [
  ['100% rollout', { groups: [condition(100)] }, true],
  ['no rollout given', { groups: [condition(undefined)] }, true],
  ['null rollout', { groups: [condition(null)] }, true],
  ['no conditions', { groups: [] }, true],
  ['every condition at 100%', { groups: [condition(100), condition(null)] }, true],
  ['one variant of 100%', { groups: [condition(100)], multivariate: variants(100) }, true],
  ['variants, each condition overriding one', { groups: [condition(100, { variant: 'v1' })], multivariate: variants(50, 50) }, true],
  ['a holdout of everyone', { groups: [condition(100)], holdout: { id: 4, exclusion_percentage: 100 } }, true],
  ['50% rollout', { groups: [condition(50)] }, false],
  ['one condition of two at 50%', { groups: [condition(100), condition(50)] }, false],
  ['0% rollout', { groups: [condition(0)] }, false],
  ['a rollout that is not a number', { groups: [condition('100' as unknown as number)] }, false],
  ['two variants left to the hash', { groups: [condition(100)], multivariate: variants(50, 50) }, false],
  ['an override naming no variant', { groups: [condition(100, { variant: 'nope' })], multivariate: variants(50, 50) }, false],
  ['a partial holdout', { groups: [condition(100)], holdout: { id: 4, exclusion_percentage: 10 } }, false],
];

const users = Array.from({ length: 50 }, (_, i) => ({ id: `user-${i}`, plan: i % 3 === 0 ? 'free' : 'pro' }));

function outcomes(filters: Record<string, unknown>, continuity: boolean, decideContinuity: boolean | undefined) {
  const defs = compileDefinitions({ flags: [{ id: 1, key: 'f', active: true, ensure_experience_continuity: continuity, filters }], cohorts: {} });
  return users.map((user) =>
    createEvaluation(defs, { distinctId: user.id, groups: {}, personProperties: personProperties(user.id, { plan: user.plan }), groupProperties: {}, nowMs: 0, decideContinuity }).evaluate(defs.flags[0] as never),
  );
}

describe('experience continuity', () => {
  it.each(cases)('%s', (_name, filters, local) => {
    const asUpstream = outcomes(filters, true, true);
    if (local) {
      // Exactly the answer of the same flag without continuity: the override (another hashed id) cannot change it.
      expect(asUpstream).toEqual(outcomes(filters, false, undefined));
      expect(asUpstream.every((o) => o.kind === 'value')).toBe(true);
    } else {
      expect(asUpstream.every((o) => o.kind === 'inconclusive' && o.reason === 'experience_continuity')).toBe(true);
    }
    // The SDK's behaviour by default, and when the request carries $anon_distinct_id (decideContinuity false).
    for (const decide of [undefined, false]) {
      expect(outcomes(filters, true, decide).every((o) => o.kind === 'inconclusive' && o.reason === 'experience_continuity')).toBe(true);
    }
  });

  it('an inactive continuity flag is false either way', () => {
    const defs = compileDefinitions({ flags: [{ id: 1, key: 'f', active: false, ensure_experience_continuity: true, filters: { groups: [condition(50)] } }] });
    const outcome = createEvaluation(defs, { distinctId: 'u', groups: {}, personProperties: {}, groupProperties: {}, nowMs: 0, decideContinuity: true }).evaluate(defs.flags[0] as never);
    expect(outcome).toMatchObject({ kind: 'value', value: false, reason: 'flag_disabled' });
  });
});
