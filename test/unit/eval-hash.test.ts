import { getFeatureFlagHash, getHoldoutVariant } from '@posthog/core';
import { describe, expect, it } from 'vitest';
import { flagHash, holdoutHash } from '../../src/eval/hash.js';

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
