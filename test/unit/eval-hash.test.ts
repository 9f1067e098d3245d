import { hash } from 'node:crypto';
import { getFeatureFlagHash, getHoldoutVariant } from '@posthog/core';
import { describe, expect, it } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { createEvaluation, groupProperties, personProperties } from '../../src/eval/evaluate.js';
import { flagHash, flagHashHeads, flagHashOf, holdoutHash } from '../../src/eval/hash.js';

// The pinned SDK's own functions are the oracle (@posthog/core 1.67.3, used by posthog-node 5.70.0).
describe('bucketing hash', () => {
  it('matches known values of the reference', () => {
    expect(flagHash('simple-flag', 'user-1')).toBe(0.7371322536090543);
    expect(holdoutHash('user-1')).toBe(0.17805599206573022);
  });

  it('equals the SDK bit for bit on 5,000 keys, values and salts (unicode included)', async () => {
    const values = ['', 'user-1', 'ünïcödé', '😀 emoji', '12345', 'a'.repeat(300), '\ud800lone'];
    for (let i = 0; i < 5000; i++) {
      const key = `flag-${i % 97}-${(i * 7919) % 1000}`;
      const value = `${values[i % values.length]}${i}`;
      const salt = i % 3 === 0 ? 'variant' : '';
      expect(flagHash(key, value, salt)).toBe(await getFeatureFlagHash(key, value, salt));
    }
  });

  it('gives the holdout hash the SDK uses', async () => {
    for (let i = 0; i < 500; i++) {
      const value = `distinct-${i}`;
      const expected = await getHoldoutVariant({ id: 7, exclusion_percentage: 30 }, value);
      expect(holdoutHash(value) <= 0.3 ? 'holdout-7' : undefined).toBe(expected);
    }
  });
});

describe('bucketing hash with the key encoded beforehand', () => {
  // Keys and values with multi-byte characters and unpaired surrogates at their ends, lengths around the block
  // boundaries (a key, a dot, a value and 'variant' of 55, 56, 64, 119, 120, 247, 248 bytes and more).
  const keys = ['k', 'flag-ü', 'flag-\ud83d', '\udc00flag', 'é'.repeat(30), 'k'.repeat(54), 'k'.repeat(60), 'k'.repeat(118), 'k'.repeat(246), 'k'.repeat(300)];
  const values = ['', 'user-1', '\udc00lone', 'lone\ud800', '😀', 'v'.repeat(55), 'v'.repeat(64), 'ü'.repeat(60), 'v'.repeat(240)];

  it('flagHashOf equals the SDK bit for bit for every key, value and salt', async () => {
    const heads = flagHashHeads(keys); // one array, as compile.ts keeps a snapshot's
    for (const [i, key] of keys.entries()) {
      for (const value of values) {
        for (const salt of ['', 'variant'] as const) {
          const sdk = await getFeatureFlagHash(key, value, salt);
          expect(flagHashOf(key, heads.words, heads.at[i] as number, value, salt), `${key} ${value} ${salt}`).toBe(sdk);
          expect(flagHash(key, value, salt)).toBe(sdk);
        }
      }
    }
  });

  it('flagHash equals the SDK with any other salt (a low surrogate first included)', async () => {
    for (const value of values) {
      for (const salt of ['\udc00', 'x', '😀']) expect(flagHash('key\ud800', value, salt)).toBe(await getFeatureFlagHash('key\ud800', value, salt));
    }
  });

  it('holdoutHash equals the SDK for values of every shape and length', async () => {
    for (const value of values) {
      const digest = hash('sha1', `holdout-${value}`, 'hex');
      expect(holdoutHash(value)).toBe(parseInt(digest.slice(0, 15), 16) / 0xfffffffffffffff); // the SDK's arithmetic
      const expected = await getHoldoutVariant({ id: 7, exclusion_percentage: 30 }, value);
      expect(holdoutHash(value) <= 0.3 ? 'holdout-7' : undefined).toBe(expected);
    }
  });
});

describe('holdouts in one evaluation (the holdout hash is computed once per bucketing value)', () => {
  // A person flag, a group flag and a person flag again, each with a 50% holdout: the group flag's holdout hashes
  // the group key, the others the distinct id, in whatever order they are evaluated.
  const holdoutFlag = (key: string, aggregation: number | null) => ({
    key,
    active: true,
    filters: { aggregation_group_type_index: aggregation, groups: [{ properties: [], rollout_percentage: 100 }], holdout: { id: 4, exclusion_percentage: 50 } },
  });
  const defs = compileDefinitions({ flags: [holdoutFlag('person-1', null), holdoutFlag('company', 0), holdoutFlag('person-2', null)], group_type_mapping: { '0': 'company' } });

  it('decides each flag by its own bucketing value', () => {
    let mixed = 0;
    for (let i = 0; i < 200; i++) {
      const distinctId = `user-${i}`;
      const groupKey = `org-${(i * 7) % 13}`;
      const groups = { company: groupKey };
      const ctx = { distinctId, groups, personProperties: personProperties(distinctId, {}), groupProperties: groupProperties(groups, {}), nowMs: 0 };
      const evaluation = createEvaluation(defs, ctx);
      const held = (value: string): boolean | string => (holdoutHash(value) <= 0.5 ? 'holdout-4' : true);
      const values = defs.flags.map((flag) => {
        const outcome = evaluation.evaluate(flag);
        return outcome.kind === 'value' ? outcome.value : outcome.reason;
      });
      expect(values).toEqual([held(distinctId), held(groupKey), held(distinctId)]);
      if (held(distinctId) !== held(groupKey)) mixed++;
    }
    expect(mixed).toBeGreaterThan(50);
  });
});
