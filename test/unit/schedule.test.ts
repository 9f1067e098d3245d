import { describe, expect, it } from 'vitest';
import { backoffCapFactor, initialDelay, nextDelay, parseRetryAfter } from '../../src/upstream/schedule.js';

const interval = 30_000;
const at = (r: number) => () => r;

describe('nextDelay', () => {
  it.each([
    [0, 27_000],
    [0.5, 30_000],
    [1, 33_000],
  ])('healthy: interval ±10%% (random %d → %d ms)', (r, ms) => {
    expect(nextDelay({ outcome: 'ok', failures: 0, intervalMs: interval, retryAfterMs: null, hasSnapshot: true, random: at(r) })).toBe(ms);
  });

  it.each([
    // failures, low end (random 0), high end (random 1)
    [1, 30_000, 60_000],
    [2, 60_000, 120_000],
    [3, 120_000, 240_000],
    [4, 120_000, 240_000],
    [30, 120_000, 240_000],
  ])('refused (401/403/429): %d failures → between %d and %d ms, capped at 8× interval', (failures, low, high) => {
    const input = { outcome: 'refused' as const, failures, intervalMs: interval, retryAfterMs: null, hasSnapshot: true };
    expect(nextDelay({ ...input, random: at(0) })).toBe(low);
    expect(nextDelay({ ...input, random: at(1) })).toBe(high);
    expect(high).toBeLessThanOrEqual(interval * backoffCapFactor);
  });

  it.each([
    [1, 7_500],
    [2, 15_000],
    [3, 30_000],
    [6, 240_000],
    [20, 240_000],
  ])('failed (5xx, network, invalid) while serving a snapshot: %d failures → at most %d ms, from a quarter interval', (failures, high) => {
    const input = { outcome: 'failed' as const, failures, intervalMs: interval, retryAfterMs: null, hasSnapshot: true };
    expect(nextDelay({ ...input, random: at(1) })).toBe(high);
    expect(nextDelay({ ...input, random: at(0) })).toBe(high / 2);
  });

  it.each([
    [1, 1000],
    [2, 2000],
    [5, 16_000],
    [9, 240_000],
  ])('failed with nothing to serve yet: %d failures → at most %d ms, from 1 s', (failures, high) => {
    expect(nextDelay({ outcome: 'failed', failures, intervalMs: interval, retryAfterMs: null, hasSnapshot: false, random: at(1) })).toBe(high);
  });

  it('one failing minute costs a sidecar with a snapshot at most 5 polls (the failing one and 4 retries)', () => {
    // The first failure happens at 0; count the retries that fall inside the next 60 s (shortest delays).
    let elapsed = 0;
    let polls = 1;
    for (let failures = 1; ; failures++) {
      elapsed += nextDelay({ outcome: 'failed', failures, intervalMs: interval, retryAfterMs: null, hasSnapshot: true, random: at(0) });
      if (elapsed >= 60_000) break;
      polls++;
    }
    expect(polls).toBeLessThanOrEqual(5);
  });

  it('short intervals back off from the interval itself when nothing is served yet', () => {
    expect(nextDelay({ outcome: 'failed', failures: 1, intervalMs: 200, retryAfterMs: null, hasSnapshot: false, random: at(1) })).toBe(200);
  });

  it('honours Retry-After even above the cap, up to an hour', () => {
    const input = { outcome: 'refused' as const, failures: 1, intervalMs: interval, hasSnapshot: true, random: at(0) };
    expect(nextDelay({ ...input, retryAfterMs: 600_000 })).toBe(600_000);
    expect(nextDelay({ ...input, retryAfterMs: 1000 })).toBe(30_000);
    expect(nextDelay({ ...input, retryAfterMs: 86_400_000 })).toBe(3_600_000);
  });

  it('spreads the first poll over at most a tenth of the interval, 1 s at most', () => {
    expect(initialDelay(30_000, at(1))).toBe(1000);
    expect(initialDelay(500, at(1))).toBe(50);
    expect(initialDelay(30_000, at(0))).toBe(0);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-22T10:00:00Z');
  it.each([
    [undefined, null],
    ['120', 120_000],
    ['Sun, 22 Nov 2026 10:00:30 GMT', 30_000],
    ['Sun, 22 Nov 2026 09:00:00 GMT', 0],
    ['soon', null],
  ])('%j → %j', (header, ms) => expect(parseRetryAfter(header, now)).toBe(ms));
});
