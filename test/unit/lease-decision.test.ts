import { describe, expect, it } from 'vitest';
import { failureRetryMs, followerRetryMs, leaseDecision, leaseMargin, roleOf } from '../../src/fleet/lease-decision.js';

const timing = { leaseMs: 9000, marginMs: 900 };

describe('leaseDecision', () => {
  it.each([
    // held, confirmedAt, now → expired, action, nextInMs
    [false, null, 5_000, false, 'acquire', 3000],
    [true, null, 5_000, true, 'acquire', 3000],
    [true, 1000, 1000, false, 'none', 3000],
    [true, 1000, 3999, false, 'none', 1],
    [true, 1000, 4000, false, 'renew', 750],
    [true, 1000, 8000, false, 'renew', 750],
    [true, 1000, 9000, false, 'renew', 100],
    [true, 1000, 9099, false, 'renew', 1],
    [true, 1000, 9100, true, 'acquire', 3000],
    [true, 1000, 60_000, true, 'acquire', 3000],
  ] as const)('held %s, confirmed at %s, now %d → expired %s, %s, next in %d ms', (held, confirmedAt, now, expired, action, nextInMs) => {
    expect(leaseDecision({ held, confirmedAt }, now, timing)).toEqual({ expired, action, nextInMs });
  });

  it('takes the lease as lost before it can expire in redis', () => {
    for (const [leaseMs, timeoutMs] of [[1000, 250], [10_000, 250], [10_000, 2000], [600_000, 10_000]] as const) {
      const marginMs = leaseMargin(leaseMs, timeoutMs);
      expect(marginMs).toBeGreaterThan(0);
      expect(marginMs).toBeLessThanOrEqual(leaseMs / 3);
      const lostAt = 0 + leaseMs - marginMs;
      expect(leaseDecision({ held: true, confirmedAt: 0 }, lostAt - 1, { leaseMs, marginMs }).expired).toBe(false);
      expect(leaseDecision({ held: true, confirmedAt: 0 }, lostAt, { leaseMs, marginMs }).expired).toBe(true);
      // renewals are due well before
      expect(leaseDecision({ held: true, confirmedAt: 0 }, leaseMs / 3, { leaseMs, marginMs }).action).toBe('renew');
    }
  });
});

describe('leaseMargin', () => {
  it.each([
    [1000, 250, 333],
    [10_000, 250, 1000],
    [10_000, 2000, 3333],
    [60_000, 250, 6000],
  ])('lease %d ms, timeout %d ms → %d ms', (leaseMs, timeoutMs, margin) => {
    expect(leaseMargin(leaseMs, timeoutMs)).toBe(margin);
  });
});

describe('followerRetryMs', () => {
  it.each([
    // pttl, random → ms
    [null, 0, 3333],
    [-2, 0, 3333],
    [200, 0, 205],
    [200, 1, 705],
    [0, 0, 5],
    // A live leader renewing every third of the lease: the follower looks once its lease may have run out, not before.
    [9000, 0, 9005],
    [6700, 1, 7205],
    // A holder with a longer lease than ours: looked at once a lease.
    [60_000, 0, 10_000],
  ])('holder has %s ms left, random %d → look again in %d ms', (pttl, random, ms) => {
    expect(followerRetryMs(pttl, 10_000, () => random)).toBe(ms);
  });

  it('a follower of a live leader looks at the lease about once a lease', () => {
    // The leader renews every third of the lease: at a look the lease has between two thirds and all of it left.
    const leaseMs = 10_000;
    let looks = 0;
    let now = 0;
    let renewedAt = 0;
    while (now < 600_000) {
      renewedAt = Math.floor(now / (leaseMs / 3)) * (leaseMs / 3);
      now += followerRetryMs(renewedAt + leaseMs - now, leaseMs, () => 0.5);
      looks += 1;
    }
    expect(looks / 600).toBeLessThan(0.13);
    expect(looks / 600).toBeGreaterThan(0.09);
  });
});

describe('failureRetryMs', () => {
  it.each([
    [1, 100],
    [2, 200],
    [3, 400],
    [6, 3200],
    [7, 3333],
    [40, 3333],
  ])('after %d failures in a row → %d ms', (failures, ms) => {
    expect(failureRetryMs(failures, 10_000)).toBe(ms);
  });
});

describe('roleOf', () => {
  const base = { redisDownMs: 0, leaseFailures: 0, holdsLease: false, fleetRefused: false, lastFleetChangeAt: 0, now: 1000, intervalMs: 200, leaseMs: 1000 };
  it.each([
    [{}, 'follower'],
    [{ holdsLease: true }, 'leader'],
    // Redis down: a reconnection (up to a third of the lease) changes nothing; longer, or never up, is direct.
    [{ redisDownMs: 333 }, 'follower'],
    [{ redisDownMs: 334 }, 'direct'],
    [{ redisDownMs: Infinity }, 'direct'],
    [{ redisDownMs: 333, holdsLease: true }, 'leader'],
    [{ redisDownMs: 334, holdsLease: true }, 'direct'],
    // Lease commands failing: one or two change nothing, the third in a row is direct.
    [{ leaseFailures: 1 }, 'follower'],
    [{ leaseFailures: 2, holdsLease: true }, 'leader'],
    [{ leaseFailures: 3 }, 'direct'],
    [{ leaseFailures: 3, holdsLease: true }, 'direct'],
    [{ now: 3000 }, 'follower'],
    [{ now: 3001 }, 'direct'],
    [{ now: 3001, holdsLease: true }, 'leader'],
    [{ fleetRefused: true }, 'direct'],
    [{ fleetRefused: true, holdsLease: true }, 'leader'],
  ] as const)('%j → %s', (change, role) => {
    expect(roleOf({ ...base, ...change })).toBe(role);
  });
});
