import { describe, expect, it } from 'vitest';
import { createIntakeBudget, defaultIntakeBudget } from '../../src/events/intake-budget.js';

describe('capture memory budget', () => {
  it('grants within the bound, in arrival order, and lets one request larger than the whole budget through alone', async () => {
    const budget = createIntakeBudget(100, 60_000);
    const big = await budget.acquire(250);
    expect(big?.bytes).toBe(250);
    const order: number[] = [];
    const first = budget.acquire(60).then((lease) => (order.push(1), lease));
    const second = budget.acquire(30).then((lease) => (order.push(2), lease));
    expect(budget.status()).toEqual({ bytes: 250, waiting: 2, max_bytes: 100 });
    budget.release(big!);
    const [a, b] = await Promise.all([first, second]);
    expect(order).toEqual([1, 2]);
    expect(budget.status().bytes).toBe(90);
    // Growing past the bound fails while others hold shares, and succeeds alone.
    expect(budget.grow(a!, 80)).toBe(false);
    budget.release(b!);
    expect(budget.grow(a!, 500)).toBe(true);
    budget.release(a!);
    expect(budget.status()).toEqual({ bytes: 0, waiting: 0, max_bytes: 100 });
  });

  it('answers null when the share is not free within the wait, and lets the next one in', async () => {
    const budget = createIntakeBudget(100, 1);
    const held = await budget.acquire(90);
    expect(await budget.acquire(20)).toBeNull();
    expect(budget.status().waiting).toBe(0);
    budget.release(held!);
    expect((await budget.acquire(100))?.bytes).toBe(100);
  });

  it("defaults to an eighth of the memory limit, the chart's 32 MiB without one", () => {
    expect(defaultIntakeBudget(256 * 1024 * 1024)).toBe(32 * 1024 * 1024);
    expect(defaultIntakeBudget(1024 * 1024 * 1024)).toBe(128 * 1024 * 1024);
    expect(defaultIntakeBudget(undefined)).toBe(32 * 1024 * 1024);
    expect(defaultIntakeBudget(0)).toBe(32 * 1024 * 1024);
    expect(defaultIntakeBudget(2 ** 64)).toBe(32 * 1024 * 1024);
    expect(defaultIntakeBudget(16 * 1024 * 1024)).toBe(8 * 1024 * 1024);
  });
});
