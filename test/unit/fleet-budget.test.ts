import { describe, expect, it } from 'vitest';
import { fetchSpreadMs, firstOutageDelayMs, nextOutageDelayMs, outageIntervalMs, pollRoute } from '../../src/fleet/fleet-budget.js';
import { parseNumsub } from '../../src/fleet/fleet-size.js';

describe('fleet budget', () => {
  it.each([
    // interval, fleet, budget a minute → stretched interval
    [30_000, 1, 120, 30_000],
    [30_000, 60, 120, 30_000],
    [30_000, 61, 120, 30_500],
    [30_000, 1_000, 120, 500_000],
    [30_000, 10_000, 120, 5_000_000],
    [2_000, 1_000, 6_000, 10_000],
    [30_000, 0, 120, 30_000],
  ])('interval %d ms, fleet of %d, budget %d/min → %d ms', (interval, fleet, budget, expected) => {
    expect(outageIntervalMs(interval, fleet, budget)).toBe(expected);
  });

  it.each([1, 300, 1_000, 10_000])('a fleet of %d polling at the stretched interval stays within the budget', (fleet) => {
    const interval = outageIntervalMs(30_000, fleet, 120);
    expect((fleet * 60_000) / interval).toBeLessThanOrEqual(120);
  });

  it.each([0, 0.25, 0.999999])('the first outage poll falls inside the stretched interval (random %d)', (r) => {
    const delay = firstOutageDelayMs(500_000, () => r);
    expect(delay).toBeGreaterThanOrEqual(0);
    expect(delay).toBeLessThan(500_000);
  });

  it.each([[0, 450_000], [0.5, 500_000], [1, 550_000]])('later outage polls: the stretched interval ±10%% (random %d → %d)', (r, expected) => {
    expect(nextOutageDelayMs(500_000, () => r)).toBe(expected);
  });

  it.each([
    // fleet, stored bytes, bytes a second, cap → spread
    [50, 30_000, 64 << 20, 30_000, 23],
    [50, 2_400_000, 64 << 20, 30_000, 1_789],
    [1_000, 300_000, 64 << 20, 30_000, 4_471],
    [10_000, 300_000, 64 << 20, 30_000, 30_000],
    [1, 100, 64 << 20, 30_000, 1],
    [0, 100_000, 1 << 20, 30_000, 96],
  ])('a fleet of %d reading %d bytes at %d B/s (cap %d ms) spreads over %d ms', (fleet, bytes, rate, cap, expected) => {
    expect(fetchSpreadMs(fleet, bytes, rate, cap)).toBe(expected);
  });

  it.each([50, 1_000, 10_000])('the spread keeps Redis egress at or under the rate unless capped (fleet of %d)', (fleet) => {
    const spread = fetchSpreadMs(fleet, 300_000, 64 << 20, Number.MAX_SAFE_INTEGER);
    expect((fleet * 300_000) / (spread / 1000)).toBeLessThanOrEqual(64 << 20);
  });

  it.each([
    ['leader', false, 1000, 'fleet'],
    ['follower', true, null, 'fleet'],
    ['direct', true, 1000, 'relay'],
    ['direct', true, null, 'relay'],
    ['direct', false, 1000, 'direct_budgeted'],
    ['direct', false, null, 'direct'],
  ] as const)('role %s, relay %s, fleet size %s → route %s', (role, upstreamIsRelay, fleetSize, expected) => {
    expect(pollRoute({ role, upstreamIsRelay, fleetSize })).toBe(expected);
  });
});

describe('fleet size from PUBSUB NUMSUB', () => {
  it.each([
    [['fs:abc:snapshots', 1000], 1000],
    [['fs:abc:snapshots', '7'], 7],
    [['fs:abc:snapshots', 0], 0],
    [['fs:other:snapshots', 5], null],
    [['fs:abc:snapshots', -1], null],
    [['fs:abc:snapshots', 1.5], null],
    [['fs:abc:snapshots'], null],
    ['OK', null],
  ] as const)('%j → %s', (reply, expected) => {
    expect(parseNumsub(reply, 'fs:abc:snapshots')).toBe(expected);
  });
});
