/**
 * Pure decisions of the leader lease (lease.ts): when to renew, when the lease must be taken as lost, when a
 * follower looks at the lease again, and which role a project has. Time and randomness are arguments; times
 * are of a monotonic clock, so a process paused (SIGSTOP, a long GC) sees the pause as time passed.
 *
 * The lease in Redis lives `leaseMs` from the moment Redis ran the last successful acquire or renew, which is
 * after this sidecar sent it; so a lease confirmed by a command sent at `confirmedAt` is ours at least until
 * `confirmedAt + leaseMs`. A leader renews every third of the lease and takes its lease as lost once
 * `leaseMs - marginMs` have passed since the last confirmation (renewals failing or timing out), before any
 * other sidecar could have taken it: two sidecars never both act as leader while their clocks run at the same
 * rate (the margin covers the rate difference and the time a command takes).
 */
import type { FleetRole } from '../metrics/fleet-metrics.js';

/** What the decision needs to know of the lease. */
export interface LeaseClock {
  /** This sidecar holds the lease (as far as it knows). */
  readonly held: boolean;
  /** When the command that last acquired or renewed it was sent (monotonic ms); null when never. */
  readonly confirmedAt: number | null;
}

/** Lease length and safety margin, in ms. */
export interface LeaseTiming {
  readonly leaseMs: number;
  readonly marginMs: number;
}

/** What to do now, and when to look again. */
export interface LeaseDecision {
  /** The lease, held until now, must be taken as lost (stop acting as leader). */
  readonly expired: boolean;
  /** `renew`: the lease is held and due; `acquire`: it is not held (try to take it); `none`: nothing now. */
  readonly action: 'renew' | 'acquire' | 'none';
  /** When to decide again: after `none`, when the renewal is due; after an action, if it failed, a retry delay. */
  readonly nextInMs: number;
}

/** The safety margin for a lease of `leaseMs` with Redis commands timing out after `timeoutMs`: a tenth of the lease, at least twice the timeout, at most a third of the lease. */
export function leaseMargin(leaseMs: number, timeoutMs: number): number {
  return Math.round(Math.min(leaseMs / 3, Math.max(leaseMs / 10, 2 * timeoutMs)));
}

/** The decision at `now`. */
export function leaseDecision(clock: LeaseClock, now: number, timing: LeaseTiming): LeaseDecision {
  const renewEveryMs = timing.leaseMs / 3;
  if (!clock.held) return { expired: false, action: 'acquire', nextInMs: renewEveryMs };
  const confirmedAt = clock.confirmedAt;
  const lostAt = confirmedAt === null ? -Infinity : confirmedAt + timing.leaseMs - timing.marginMs;
  if (confirmedAt === null || now >= lostAt) return { expired: true, action: 'acquire', nextInMs: renewEveryMs };
  const dueAt = confirmedAt + renewEveryMs;
  if (now < dueAt) return { expired: false, action: 'none', nextInMs: dueAt - now };
  // Due: renew now; if that fails, try again soon, but look again no later than when the lease counts as lost.
  return { expired: false, action: 'renew', nextInMs: Math.max(1, Math.min(renewEveryMs / 4, lostAt - now)) };
}

/**
 * How long a follower waits before looking at a lease another sidecar holds, given the time it has left in Redis
 * (`pttlMs`, null when unknown): just past its expiry, so a dead leader is replaced at once while a live one,
 * renewing every third of the lease, is left alone (about one look per lease instead of one per renewal). At most
 * a lease (a holder configured with a longer one is looked at as often as ours), a third of it when unknown, with
 * up to 5% of the lease of jitter so followers do not all look at the same moment.
 */
export function followerRetryMs(pttlMs: number | null, leaseMs: number, random: () => number): number {
  const jitter = random() * leaseMs * 0.05;
  const base = pttlMs === null || pttlMs < 0 ? leaseMs / 3 : Math.min(pttlMs + 5, leaseMs);
  return Math.max(5, Math.round(base + jitter));
}

/** Failed lease commands in a row after which a sidecar no longer counts on the fleet (it polls directly). */
export const leaseFailuresBeforeDirect = 3;

/**
 * When a follower tries again after `failures` lease commands failed in a row: soon (100 ms, doubling), so a
 * passing fault costs little and a lasting one is known after a few tries; at most a third of the lease.
 */
export function failureRetryMs(failures: number, leaseMs: number): number {
  return Math.round(Math.min(leaseMs / 3, 100 * 2 ** Math.min(Math.max(failures - 1, 0), 10)));
}

/** How long Redis may be down before the fleet is given up for direct polling: a third of the lease (reconnections take a few tries). */
export const redisGraceMs = (leaseMs: number): number => leaseMs / 3;

/** What decides a project's role. */
export interface RoleInput {
  /** How long Redis has been down or hung (0 while up; Infinity when it never was up). */
  readonly redisDownMs: number;
  /** Lease commands that failed in a row (Redis refused or timed out). */
  readonly leaseFailures: number;
  /** This sidecar holds a live lease (not expired by leaseDecision). */
  readonly holdsLease: boolean;
  /** The fleet's published snapshot was refused when last read (does not verify, or invalid). */
  readonly fleetRefused: boolean;
  /** Local time the fleet's published snapshot was last seen to change (or this sidecar became a follower). */
  readonly lastFleetChangeAt: number;
  readonly now: number;
  readonly intervalMs: number;
  readonly leaseMs: number;
}

/**
 * A project's role: `direct` once Redis is not usable — down for longer than redisGraceMs, or
 * leaseFailuresBeforeDirect lease commands failed in a row — (this sidecar polls upstream itself; one failed
 * command or a reconnection does not make it so); `leader` while it holds a live lease; else `follower`, unless
 * the fleet's snapshot has not changed for longer than the slowest a working leader publishes (ten poll
 * intervals, above the poller's 8× backoff cap, plus a lease): then the leader is not doing its job and this
 * sidecar polls upstream itself (`direct`), so data never goes stale for want of a leader. Also `direct` while
 * the fleet's snapshot is refused (written by an older version during a rolling upgrade, sealed with another
 * secret, or forged): nothing usable comes from the fleet then, so this sidecar polls itself, as without fleet
 * mode, until a snapshot it can verify appears.
 */
export function roleOf(input: RoleInput): FleetRole {
  if (input.redisDownMs > redisGraceMs(input.leaseMs) || input.leaseFailures >= leaseFailuresBeforeDirect) return 'direct';
  if (input.holdsLease) return 'leader';
  if (input.fleetRefused) return 'direct';
  return input.now - input.lastFleetChangeAt > 10 * input.intervalMs + input.leaseMs ? 'direct' : 'follower';
}
