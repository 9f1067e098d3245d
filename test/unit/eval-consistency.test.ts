import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { createEvaluation, groupProperties, personProperties } from '../../src/eval/evaluate.js';

// The two 1,000-user consistency tables that PostHog's libraries share ("common between all libraries doing local
// evaluation"), transcribed from PostHog/posthog posthog/test/test_feature_flag.py (TestFeatureFlagMatcherConsistency);
// see each fixture's `source`. Users are distinct_id_0 … distinct_id_999.
interface ConsistencyTable {
  readonly source: string;
  readonly flag: { readonly key: string } & Record<string, unknown>;
  readonly expected: ReadonlyArray<boolean | string>;
}

const load = (name: string): ConsistencyTable =>
  JSON.parse(readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8')) as ConsistencyTable;

/** Evaluates the table's flag for every user; returns the ids whose outcome differs from the table. */
function mismatches(table: ConsistencyTable): string[] {
  const defs = compileDefinitions({ flags: [table.flag], group_type_mapping: {}, cohorts: {} });
  const flag = defs.byKey.get(table.flag.key);
  if (!flag) throw new Error(`flag ${table.flag.key} did not compile`);
  const wrong: string[] = [];
  table.expected.forEach((want, i) => {
    const distinctId = `distinct_id_${i}`;
    const ctx = {
      distinctId,
      groups: {},
      personProperties: personProperties(distinctId, {}),
      groupProperties: groupProperties({}, {}),
      nowMs: Date.now(),
    };
    const outcome = createEvaluation(defs, ctx).evaluate(flag);
    const got = outcome.kind === 'value' ? outcome.value : `inconclusive (${String(outcome.reason)})`;
    if (got !== want) wrong.push(`${distinctId}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
  });
  return wrong;
}

describe('consistency tables shared by the PostHog libraries', () => {
  const simple = load('consistency-simple.json');
  const multivariate = load('consistency-multivariate.json');

  it('are complete fixtures with a sensible spread', () => {
    expect(simple.flag.key).toBe('simple-flag');
    expect(simple.expected).toHaveLength(1000);
    expect(simple.expected.every((v) => typeof v === 'boolean')).toBe(true);
    const on = simple.expected.filter((v) => v === true).length;
    expect(on).toBeGreaterThanOrEqual(400); // 45% rollout
    expect(on).toBeLessThanOrEqual(500);

    expect(multivariate.flag.key).toBe('multivariate-flag');
    expect(multivariate.expected).toHaveLength(1000);
    const counts = new Map<boolean | string, number>();
    for (const v of multivariate.expected) counts.set(v, (counts.get(v) ?? 0) + 1);
    expect([...counts.keys()].sort()).toEqual([false, 'fifth-variant', 'first-variant', 'fourth-variant', 'second-variant', 'third-variant'].sort());
    const matched = 1000 - (counts.get(false) ?? 0);
    expect(matched).toBeGreaterThanOrEqual(500); // 55% rollout
    expect(matched).toBeLessThanOrEqual(600);
    expect(counts.get('first-variant')).toBeGreaterThan(counts.get('second-variant') ?? 0); // 50% of the matched vs 20%
  });

  it('simple-flag (45% rollout) gives every user the value of the table', () => {
    expect(mismatches(simple)).toEqual([]);
  });

  it('multivariate-flag (55% rollout, variants 50/20/20/5/5) gives every user the variant of the table', () => {
    expect(mismatches(multivariate)).toEqual([]);
  });
});
