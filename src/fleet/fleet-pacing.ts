/**
 * What the snapshot relay knows of the fleet's size and of upstream, and the pacing it derives (fleet-budget.ts):
 * - the fleet's size: counted as leader (fleet-size.ts), else the last one seen in a head; kept through an outage;
 * - whether upstream is a relay: from this sidecar's own answers and from the leader's head;
 * - per project, when a budgeted direct poll is due, and the pending spread wait of a noticed change.
 * Never throws; timers are unref'd and cleared by `close`.
 */
import type { FleetRole } from '../metrics/fleet-metrics.js';
import { fetchSpreadMs, firstOutageDelayMs, nextOutageDelayMs, outageIntervalMs, pollRoute, type PollRoute } from './fleet-budget.js';
import type { SnapshotHead } from './snapshot-head.js';

/** Dependencies of createFleetPacing. */
export interface PacingDeps {
  readonly intervalMs: number;
  readonly outageBudgetPerMinute: number;
  readonly fetchBytesPerSecond: number;
  /** Count the fleet as leader (null: not counted). */
  readonly count: () => Promise<number | null>;
  readonly now: () => number;
  readonly random: () => number;
}

/** Create the pacing of every project. */
export function createFleetPacing(deps: PacingDeps) {
  const { now, random } = deps;
  let fleetSize: number | null = null;
  let upstreamIsRelay = false;
  /** Per project: when its budgeted direct poll is due (absent: not budgeted now). */
  const dueAt = new Map<number, number>();
  const spreads = new Map<number, NodeJS.Timeout>();

  const route = (role: FleetRole): PollRoute => pollRoute({ role, upstreamIsRelay, fleetSize });
  const directIntervalMs = (role: FleetRole): number | null =>
    route(role) === 'direct_budgeted' ? outageIntervalMs(deps.intervalMs, fleetSize ?? 1, deps.outageBudgetPerMinute) : null;

  return {
    route,
    /** The stretched interval while the route is `direct_budgeted`, else null. */
    directIntervalMs,
    /** The fleet's size as last counted or seen (null: never). */
    fleetSize: (): number | null => fleetSize,
    /** Whether upstream is a relay, as last seen. */
    upstreamIsRelay: (): boolean => upstreamIsRelay,
    /** As leader: count the fleet (at most once per interval) for the head. */
    async count(): Promise<number | null> {
      fleetSize = (await deps.count()) ?? fleetSize;
      return fleetSize;
    },
    /** A head loaded from the fleet: its leader's count and view of upstream. */
    seen(head: SnapshotHead): void {
      if (head.fleetSize !== null) fleetSize = head.fleetSize;
      upstreamIsRelay = head.relay;
    },
    /**
     * Whether this sidecar polls upstream for a project this cycle as `role`: a leader always, a follower never;
     * a direct poller when a caller asked (`forced`), when it has nothing to serve (to become ready), when its
     * interval is not stretched, else once its budgeted poll is due (the first one anywhere in the stretched
     * interval; the poller asks once per interval, so a stretched poll comes at the first tick after it is due).
     */
    shouldPoll(projectId: number, role: FleetRole, forced: boolean, hasData: boolean): boolean {
      // Not stretched (a fleet small enough for the budget): every tick of the poller's own interval.
      const stretched = directIntervalMs(role);
      const held = stretched !== null && stretched > deps.intervalMs && hasData;
      if (!held) dueAt.delete(projectId);
      if (role !== 'direct') return role === 'leader';
      if (forced || !held) return true;
      if (!dueAt.has(projectId)) dueAt.set(projectId, now() + firstOutageDelayMs(stretched, random));
      return now() >= (dueAt.get(projectId) as number);
    },
    /** After a poll this sidecar made as `role`; `relayed`: whether the answer came from a relay (null: none). */
    polled(projectId: number, role: FleetRole, relayed: boolean | null): void {
      if (relayed !== null) upstreamIsRelay = relayed;
      const stretched = directIntervalMs(role);
      if (stretched !== null && stretched > deps.intervalMs) dueAt.set(projectId, now() + nextOutageDelayMs(stretched, random));
    },
    /**
     * A change was noticed: run `load` after a random part of the spread that the fleet's fetch of a body the size
     * of `head`'s takes (at once when that is nothing); a wait already pending covers this notice too.
     */
    spread(projectId: number, head: SnapshotHead | null, load: () => void): void {
      if (spreads.has(projectId)) return;
      const stored = (head?.cohorts?.stored ?? 0) + (head?.plain?.stored ?? 0);
      const delay = Math.floor(random() * fetchSpreadMs(fleetSize ?? 1, stored, deps.fetchBytesPerSecond, deps.intervalMs));
      if (delay === 0) return load();
      const timer = setTimeout(() => {
        spreads.delete(projectId);
        load();
      }, delay);
      timer.unref();
      spreads.set(projectId, timer);
    },
    /** Clear the pending spread waits. */
    close(): void {
      for (const timer of spreads.values()) clearTimeout(timer);
      spreads.clear();
    },
  };
}

/** The pacing handle. */
export type FleetPacing = ReturnType<typeof createFleetPacing>;
