/**
 * Bucketing hashes computed several flags at once (hash-peers.ts chooses the flags, hash.ts flagHashesOf hashes
 * them in sha1-simd.ts's four lanes, evaluate.ts keeps them, across requests in hash-memo.ts): the peers are the
 * next flags that may need the same hash, of the same kind of bucketing value; a peer's hash is used only for the
 * value it was computed with, so every answer is the one flag-at-a-time hashing gives (the SDK's flagHash here),
 * whether the guess was right or not; fewer compressions run than flags hashed.
 */
import { getFeatureFlagHash } from '@posthog/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { createEvaluation, groupProperties, personProperties } from '../../src/eval/evaluate.js';
import { flagHashesOf, flagHashHeads } from '../../src/eval/hash.js';
import { BucketHashMemo, maxValueLength, memoBytes } from '../../src/eval/hash-memo.js';
import { hashPeers, type HashPeerDraft } from '../../src/eval/hash-peers.js';
import { wasmSha1x4 } from '../../src/eval/sha1-simd.js';

const draft = (key: string, extra: Partial<HashPeerDraft> = {}): HashPeerDraft => ({
  key,
  active: true,
  continuity: false,
  aggregation: undefined,
  deviceBucketing: false,
  conditions: [{ aggregation: undefined, filters: [], rollout: 50, variant: null }],
  variants: [],
  ...extra,
});

describe('hashPeers', () => {
  it('gives each flag the next three in order that need the same hash, by the same kind of value', () => {
    const flags = [
      draft('a'),
      draft('full', { conditions: [{ aggregation: undefined, filters: [], rollout: 100, variant: null }] }),
      draft('b', { variants: [{}] }),
      draft('off', { active: false }),
      draft('sticky', { continuity: true }),
      draft('group', { aggregation: 0 }),
      draft('device', { deviceBucketing: true }),
      draft('c'),
      draft('d', { variants: [{}] }),
      draft('e'),
      draft('group2', { aggregation: 0, variants: [{}] }),
    ];
    const peers = hashPeers(flags);
    const at = (...keys: string[]): number[] => keys.map((key) => flags.findIndex((f) => f.key === key));
    expect(peers.rollout[0]).toEqual(at('b', 'c', 'd'));
    expect(peers.rollout[1]).toEqual(at('b', 'c', 'd'));
    expect(peers.rollout[2]).toEqual(at('c', 'd', 'e'));
    expect(peers.rollout[5]).toEqual(at('group2'));
    expect(peers.rollout[6]).toEqual([]);
    expect(peers.rollout[9]).toEqual([]);
    expect(peers.variant[0]).toEqual(at('b', 'd'));
    expect(peers.variant[2]).toEqual(at('d'));
    expect(peers.variant[5]).toEqual(at('group2'));
  });

  it('follows evaluation order: a later duplicate key takes the place of the first', () => {
    const flags = [draft('a'), draft('dup', { active: false }), draft('b'), draft('dup')];
    const peers = hashPeers(flags);
    expect(peers.rollout[0]).toEqual([3, 2]);
    expect(peers.rollout[3]).toEqual([2]);
  });
});

describe('evaluation with hashes computed four at once', () => {
  afterEach(() => vi.restoreAllMocks());

  /** Flags of every bucketing kind; long keys make messages of two to four blocks and past the limit. */
  const keys = ['p1', 'p2-'.padEnd(60, 'x'), 'g1', 'p3', 'd1', 'p4', 'p5-ü😀', 'p6-'.padEnd(130, 'y'), 'p7-'.padEnd(300, 'z'), 'g2', 'p8', 'p9'];
  const multivariate = { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] };
  const body = {
    group_type_mapping: { '0': 'company' },
    flags: keys.map((key, i) => ({
      key,
      active: true,
      bucketing_identifier: key.startsWith('d') ? 'device_id' : undefined,
      filters: {
        aggregation_group_type_index: key.startsWith('g') ? 0 : undefined,
        // p4's condition buckets by the company (a person flag whose hash was guessed with the distinct id).
        groups: [{ properties: [], rollout_percentage: 20 + 5 * i, ...(key === 'p4' ? { aggregation_group_type_index: 0 } : {}) }],
        multivariate: i % 3 === 0 ? undefined : multivariate,
      },
    })),
  };

  /** The SDK's answer for each flag, from its own hash of each (key, value) alone. */
  async function expected(distinctId: string, company: string, device: string): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {};
    for (const [i, key] of keys.entries()) {
      const value = key.startsWith('g') || key === 'p4' ? company : key.startsWith('d') ? device : distinctId;
      const inRollout = (await getFeatureFlagHash(key, value)) <= (20 + 5 * i) / 100;
      if (!inRollout) out[key] = false;
      else if (i % 3 === 0) out[key] = true;
      else out[key] = (await getFeatureFlagHash(key, value, 'variant')) < 0.5 ? 'control' : 'test';
    }
    return out;
  }

  it('answers as one flag at a time would, for values of every length, in fewer compressions than hashes', async () => {
    const x4 = wasmSha1x4 as NonNullable<typeof wasmSha1x4>;
    const batches = vi.spyOn(x4, 'batch');
    const defs = compileDefinitions(body);
    let hashes = 0;
    for (const distinctId of ['u1', 'user-ü😀', '018f3c2a-7b1e-7c4d-9a2f-3b5e6d7c8f90', 'x'.repeat(70), 'y'.repeat(250), '']) {
      // An empty group key is no group to upstream (flag_matching.rs has_group_key), unlike the SDK: not compared here.
      for (const company of ['acme', distinctId || 'acme-2']) {
        const groups = { company };
        const device = `device-${distinctId}`;
        const evaluation = createEvaluation(defs, {
          distinctId,
          groups,
          personProperties: personProperties(distinctId, { $device_id: device }),
          groupProperties: groupProperties(groups, {}),
          nowMs: 0,
        });
        const ours: Record<string, unknown> = {};
        for (const flag of defs.flags) {
          const outcome = evaluation.evaluate(flag);
          ours[flag.key] = outcome.kind === 'value' ? outcome.value : outcome;
          hashes += outcome.kind === 'value' && outcome.value !== false && flag.variants.length > 0 ? 2 : 1;
        }
        expect(ours, `${distinctId} / ${company}`).toEqual(await expected(distinctId, company, device));
      }
    }
    expect(batches.mock.calls.length).toBeGreaterThan(0);
    expect(batches.mock.calls.length).toBeLessThan(hashes / 2);
  });

  it('flagHashesOf gives each lane what the SDK gives that flag alone, NaN past the limit', async () => {
    const heads = flagHashHeads(['a', 'bb'.repeat(40), 'c'.repeat(250), 'd']);
    const out = [0, 0, 0, 0];
    expect(flagHashesOf(heads.words, heads.at[0] as number, heads.at.slice(1), 'user-1', 'variant', out)).toBe(true);
    expect(out.slice(0, 2)).toEqual([await getFeatureFlagHash('a', 'user-1', 'variant'), await getFeatureFlagHash('bb'.repeat(40), 'user-1', 'variant')]);
    expect(out[2]).toBeNaN();
    expect(out[3]).toBe(await getFeatureFlagHash('d', 'user-1', 'variant'));
  });
});

describe('bucketing hashes kept across requests (hash-memo.ts)', () => {
  /** The row `find` points at for `value`: its page, where it starts, and its doubles (a copy). */
  const rowOf = (memo: BucketHashMemo, value: string) => {
    memo.find(value);
    return { page: memo.page, base: memo.base, values: Array.from(memo.page.subarray(memo.base, memo.base + memo.rowSize)) };
  };

  let fillers = 0;
  /** rowOf for a value met again after two others took the loose rows (from when it is kept). */
  const keptRowOf = (memo: BucketHashMemo, value: string) => {
    memo.find(value);
    memo.find(`filler-${fillers++}`);
    memo.find(`filler-${fillers++}`);
    return rowOf(memo, value);
  };

  it('keeps a value from its second request on, not a stream of values met once; two loose rows hold the latest', () => {
    const memo = new BucketHashMemo(3, 16 * (8 * 7 + 160));
    const once = rowOf(memo, 'one-off');
    once.page[once.base + 1] = 0.5;
    const company = rowOf(memo, 'company');
    company.page[company.base + 1] = 0.25;
    // A request switching between a person and a group: each keeps its loose row, hashes and all.
    expect(rowOf(memo, 'one-off')).toMatchObject({ page: once.page, base: once.base, values: once.values.map((v, i) => (i === 1 ? 0.5 : v)) });
    expect(rowOf(memo, 'company').values[1]).toBe(0.25);
    expect(memo.size).toBe(0);
    rowOf(memo, 'other-1');
    rowOf(memo, 'other-2'); // both loose rows taken: one-off's hashes are gone, its name remembered
    const second = rowOf(memo, 'one-off');
    expect(memo.size).toBe(1);
    expect(second.values[1]).toBeNaN(); // kept from now on, empty
    second.page[second.base + 1] = 0.75;
    for (let i = 0; i < 5000; i++) rowOf(memo, `person-${i}`);
    expect(memo.size).toBe(1);
    expect(rowOf(memo, 'one-off').values[1]).toBe(0.75);
  });

  it('keeps each value once, at most maxEntries, dropping the oldest first; a too-long value is not kept', () => {
    const memo = new BucketHashMemo(3, 16 * (8 * 7 + 160));
    expect(memo.maxEntries).toBe(16);
    expect(memo.rowSize).toBe(7);
    const first = keptRowOf(memo, 'v0');
    expect(first.values.slice(1).every(Number.isNaN)).toBe(true);
    first.page[first.base + 1] = 0.25;
    expect(rowOf(memo, 'v0')).toMatchObject({ page: first.page, base: first.base });
    expect(rowOf(memo, `${'v'}0`).values[1]).toBe(0.25); // an equal string from elsewhere finds it too
    const bases = new Set([first.base]);
    for (let i = 1; i < 16; i++) bases.add(keptRowOf(memo, `v${i}`).base);
    expect(bases.size).toBe(16); // one page of 16 rows here, each value its own
    expect(memo.size).toBe(16);
    const tenancy = first.values[0];
    const seventeenth = keptRowOf(memo, 'v16'); // v0 is dropped, its row handed on, emptied, under a new tenancy
    expect(memo.size).toBe(16);
    expect(seventeenth).toMatchObject({ page: first.page, base: first.base });
    expect(seventeenth.values[0]).not.toBe(tenancy);
    expect(seventeenth.values[1]).toBeNaN();
    const again = keptRowOf(memo, 'v0'); // back, as the newest: v1 goes, and its row is v0's now
    expect(memo.size).toBe(16);
    expect(again.values[1]).toBeNaN();
    expect(again.values[0]).not.toBe(seventeenth.values[0]);
    const long = 'x'.repeat(maxValueLength + 1);
    const loose = keptRowOf(memo, long); // met again, still not kept: only ever in a loose row
    expect(memo.size).toBe(16);
    loose.page[loose.base + 1] = 0.5;
    rowOf(memo, 'a-new');
    rowOf(memo, 'b-new');
    expect(rowOf(memo, long).values[1]).toBeNaN();
    expect(memo.size).toBe(16);
  });

  it('holds at most memoBytes, keys included, in pages made as it fills', () => {
    for (const flags of [0, 1, 30, 1000, 5000]) {
      const memo = new BucketHashMemo(flags);
      expect(memo.maxEntries * (memo.rowSize * 8 + 160), `${flags} flags`).toBeLessThanOrEqual(memoBytes);
      const pages = new Set<Float64Array>();
      const values = Math.min(memo.maxEntries + 10, 20_000);
      for (let i = 0; i < values; i++) pages.add(keptRowOf(memo, `p${i}`).page);
      expect([...pages].reduce((bytes, page) => bytes + page.byteLength, 0), `${flags} flags`).toBeLessThanOrEqual(memoBytes);
      // Each value kept, but where a filler took its place in the table of values met once.
      expect(memo.size).toBeLessThanOrEqual(memo.maxEntries);
      expect(memo.size).toBeGreaterThanOrEqual(Math.min(memo.maxEntries, values * 0.98));
    }
    expect(new BucketHashMemo(200_000).maxEntries).toBe(1); // one value's hashes are over the bound: the latest is kept
  });

  const multivariate = { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] };
  const keys = Array.from({ length: 12 }, (_, i) => `flag-${i}`);
  const body = {
    group_type_mapping: { '0': 'company' },
    flags: keys.map((key, i) => ({
      key,
      active: true,
      filters: { aggregation_group_type_index: i % 4 === 3 ? 0 : undefined, groups: [{ properties: [], rollout_percentage: 30 + 5 * i }], multivariate: i % 2 === 0 ? multivariate : undefined },
    })),
  };
  /** The SDK's answer for flag i of `body` for a bucketing value. */
  async function sdkAnswer(i: number, value: string): Promise<boolean | string> {
    const key = keys[i] as string;
    if ((await getFeatureFlagHash(key, value)) > (30 + 5 * i) / 100) return false;
    if (i % 2 !== 0) return true;
    return (await getFeatureFlagHash(key, value, 'variant')) < 0.5 ? 'control' : 'test';
  }
  const context = (distinctId: string, company: string) => {
    const groups = { company };
    return { distinctId, groups, personProperties: personProperties(distinctId, {}), groupProperties: groupProperties(groups, {}), nowMs: 0 };
  };
  const valueOf = (i: number, distinctId: string, company: string): string => (i % 4 === 3 ? company : distinctId);

  it('answers as the SDK for values seen before, seen long ago (dropped) and new, over many requests', async () => {
    // Room for 16 values: 40 people and 5 companies, asked for in turn three times, drop and refill the memo.
    const defs = { ...compileDefinitions(body), bucketHashes: new BucketHashMemo(keys.length, 16 * (8 * (1 + 2 * keys.length) + 160)) };
    for (let round = 0; round < 3; round++) {
      for (let p = 0; p < 40; p++) {
        const distinctId = `person-${(p * 7) % 40}`;
        const company = `company-${p % 5}`;
        const evaluation = createEvaluation(defs, context(distinctId, company));
        for (const [i, flag] of defs.flags.entries()) {
          const outcome = evaluation.evaluate(flag);
          expect(outcome.kind === 'value' ? outcome.value : outcome, `${flag.key} for ${distinctId} / ${company}`).toBe(await sdkAnswer(i, valueOf(i, distinctId, company)));
        }
      }
    }
    expect(defs.bucketHashes.size).toBe(16);
  });

  it('an evaluation whose value was dropped and its row handed on while it ran hashes that value again', async () => {
    const defs = { ...compileDefinitions(body), bucketHashes: new BucketHashMemo(keys.length, 16 * (8 * (1 + 2 * keys.length) + 160)) };
    const first = createEvaluation(defs, context('early-person', 'early-company'));
    const answers: Record<string, unknown> = {};
    const take = (evaluation: ReturnType<typeof createEvaluation>, i: number): void => {
      const outcome = evaluation.evaluate(defs.flags[i] as never);
      answers[keys[i] as string] = outcome.kind === 'value' ? outcome.value : outcome;
    };
    take(first, 0);
    // Others, alive at the same time: 20 new people (their person flags only) take early-person's loose row in turn.
    for (let p = 0; p < 20; p++) {
      const other = createEvaluation(defs, context(`other-${p}`, 'early-company'));
      for (const [i, flag] of defs.flags.entries()) if (i % 4 !== 3) other.evaluate(flag);
    }
    for (let i = 1; i < keys.length; i++) take(first, i);
    const expected: Record<string, unknown> = {};
    for (let i = 0; i < keys.length; i++) expected[keys[i] as string] = await sdkAnswer(i, valueOf(i, 'early-person', 'early-company'));
    expect(answers).toEqual(expected);
  });
});
