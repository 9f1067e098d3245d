/**
 * Memory for large /flags bodies (src/eval/body-pool.ts): reused only once handed back, at most `maxFree` kept, none
 * larger than `maxPooled`, and a body handed back twice or never lent changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { freeCount, giveBack, lend, markLent, maxFree, maxPooled, minLent } from '../../src/eval/body-pool.js';

/** Lend memory for `size` bytes and mark a body of `used` bytes cut from it. */
function lendBody(size: number, used = size): { memory: Buffer; body: Buffer } {
  const memory = lend(size);
  const body = memory.subarray(0, used);
  markLent(body, memory);
  return { memory, body };
}

/** Empty the free list (the pool is the module's): lend until a fresh memory comes back. */
function drain(): void {
  while (freeCount() > 0) lend(1);
}

describe('large body memory', () => {
  it('lends memory at least as large as asked, in whole multiples of 64 KiB', () => {
    drain();
    for (const size of [minLent + 1, 64 * 1024, 64 * 1024 + 1, 300_000]) {
      const memory = lend(size);
      expect(memory.length).toBeGreaterThanOrEqual(size);
      expect(memory.length % (64 * 1024)).toBe(0);
    }
  });

  it('lends a handed-back memory again to a body that fits, and never one still lent', () => {
    drain();
    const first = lendBody(100_000, 99_000);
    const second = lendBody(100_000);
    expect(second.memory.buffer).not.toBe(first.memory.buffer);
    giveBack(first.body);
    expect(freeCount()).toBe(1);
    const third = lendBody(90_000);
    expect(third.memory.buffer).toBe(first.memory.buffer);
    expect(freeCount()).toBe(0);
    // Handed back twice: kept once.
    giveBack(third.body);
    giveBack(third.body);
    expect(freeCount()).toBe(1);
  });

  it('does not lend a free memory that is too small', () => {
    drain();
    const small = lendBody(40_000);
    giveBack(small.body);
    const large = lend(200_000);
    expect(large.buffer).not.toBe(small.memory.buffer);
    expect(freeCount()).toBe(1);
  });

  it('ignores a body that was never lent (a slab body, a copy)', () => {
    drain();
    const { body } = lendBody(50_000);
    giveBack(Buffer.from(body));
    giveBack(body.subarray(0, 10));
    expect(freeCount()).toBe(0);
  });

  it(`keeps at most ${maxFree} memories, the larger when full, and none larger than ${maxPooled} bytes`, () => {
    drain();
    const bodies = Array.from({ length: maxFree }, () => lendBody(40_000).body);
    const larger = lendBody(500_000);
    const huge = lendBody(maxPooled + 1);
    for (const body of bodies) giveBack(body);
    expect(freeCount()).toBe(maxFree);
    giveBack(huge.body);
    expect(freeCount()).toBe(maxFree);
    expect(lend(maxPooled + 1).buffer).not.toBe(huge.memory.buffer);
    giveBack(larger.body);
    expect(freeCount()).toBe(maxFree);
    // The larger one stood for a small one: a body that only it fits gets it.
    expect(lend(400_000).buffer).toBe(larger.memory.buffer);
  });
});
