/**
 * Loads that grow with the fleet, kept bounded by the fleet's size. Pure; time and randomness are arguments.
 *
 * - Upstream in a Redis outage: every sidecar polls upstream itself (`direct`). Polling at the normal interval,
 *   N pods make N polls per interval (1,000 pods at 30 s: 2,000 a minute, over PostHog's 600), so a sidecar that
 *   last saw a fleet of N polls only once per `N × 60 s / budget`: the whole fleet stays within `budget` polls a
 *   minute. Behind a relay (a flag-sidecar answering upstream's paths) the relay absorbs the polls: no stretch.
 * - Redis on a change: every follower reads the new body. At once, that is N × body bytes in a burst; each
 *   follower waits a random part of `N × stored bytes / rate` first, so Redis sends about `rate` bytes a second.
 */
import type { FleetRole } from '../metrics/fleet-metrics.js';

/**
 * How this sidecar reaches upstream for a project: `fleet` (leader or follower: one poll per fleet),
 * `relay` (direct, but upstream is a relay that absorbs the polls), `direct_budgeted` (direct, at the stretched
 * interval of the fleet size last seen), `direct` (direct at the normal interval: no fleet size seen yet).
 */
export type PollRoute = 'fleet' | 'relay' | 'direct_budgeted' | 'direct';

/** Every route, for metrics. */
export const pollRoutes: readonly PollRoute[] = ['fleet', 'relay', 'direct_budgeted', 'direct'];

/** What decides the route. */
export interface RouteInput {
  readonly role: FleetRole;
  /** Upstream's last answer (this sidecar's or the leader's) came from a flag-sidecar relay. */
  readonly upstreamIsRelay: boolean;
  /** The fleet size last seen in Redis; null when never seen. */
  readonly fleetSize: number | null;
}

/** The route of a project. */
export function pollRoute(input: RouteInput): PollRoute {
  if (input.role !== 'direct') return 'fleet';
  if (input.upstreamIsRelay) return 'relay';
  return input.fleetSize === null ? 'direct' : 'direct_budgeted';
}

/** The interval of a budgeted direct poller: the poll interval, stretched so `fleetSize` pods make at most `budgetPerMinute` polls a minute. */
export function outageIntervalMs(intervalMs: number, fleetSize: number, budgetPerMinute: number): number {
  return Math.max(intervalMs, Math.ceil((Math.max(1, fleetSize) * 60_000) / budgetPerMinute));
}

/**
 * Delay of the first budgeted poll after the outage began: anywhere in the stretched interval, so a fleet that
 * lost Redis at one moment does not poll at one moment (the data served meanwhile is the last snapshot).
 */
export function firstOutageDelayMs(stretchedMs: number, random: () => number): number {
  return Math.floor(random() * stretchedMs);
}

/** Delay of each later budgeted poll: the stretched interval ±10% (the fleet drifts apart, the mean stays). */
export function nextOutageDelayMs(stretchedMs: number, random: () => number): number {
  return Math.round(stretchedMs * (0.9 + 0.2 * random()));
}

/**
 * The window a follower's fetch of a changed body is spread over: long enough that `fleetSize` followers reading
 * `storedBytes` each send about `bytesPerSecond` out of Redis, at most `capMs` (a change still reaches every pod
 * within a poll interval, as without fleet mode).
 */
export function fetchSpreadMs(fleetSize: number, storedBytes: number, bytesPerSecond: number, capMs: number): number {
  return Math.min(capMs, Math.ceil((Math.max(1, fleetSize) * storedBytes * 1000) / bytesPerSecond));
}
