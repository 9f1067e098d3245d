/**
 * Polling as the API routes see it in fleet mode, routed by the project's role: as leader or direct, the
 * poller itself (upstream now); as follower, a request on the poll channel to the leader, a wait for its notice
 * (bounded), then a read of Redis, so read-your-writes sees the leader's new snapshot. A follower asked for
 * the plain variant marks it wanted in Redis (with a TTL) so that every leader polls it (when Redis did not take
 * that, the next caller asks again). Healthy-cycle
 * listeners hear of the poller's healthy cycles and of followers taking in a confirmed snapshot.
 * Guarantees: never rejects; waits on Redis at most `waitMs` plus the command timeouts.
 */
import type { FleetRole } from '../metrics/fleet-metrics.js';
import { withChanges } from '../store/snapshot.js';
import type { Store } from '../store/store.js';
import type { PollControl, Poller } from '../upstream/poller.js';
import type { FleetKeys } from './keys.js';
import type { NoticeWaiters } from './notice-waiters.js';
import type { FleetRedis } from './redis.js';
import { encodePollRequest } from './snapshot-head.js';
import { snapshotTtlMs } from './snapshot-publisher.js';

/** Dependencies of createPollRouting. */
export interface PollRoutingDeps {
  readonly poller: Poller;
  readonly store: Store;
  readonly redis: FleetRedis;
  readonly keys: FleetKeys;
  readonly waiters: NoticeWaiters;
  readonly waitMs: number;
  /** The project's role, a leader's lease checked first when its last confirmation is old (never rejects). */
  readonly role: (projectId: number) => Promise<FleetRole>;
  /** Load the fleet's snapshot of a project (never rejects). */
  readonly load: (projectId: number) => Promise<void>;
  /** Publish the project's snapshot as leader (never rejects). */
  readonly publish: (projectId: number) => Promise<void>;
  /** Listeners of followers' confirmed snapshots. */
  readonly listeners: Array<(projectId: number) => void>;
}

/** Create the routed poll control. */
export function createPollRouting(deps: PollRoutingDeps): PollControl {
  const { poller, store, redis, keys, waiters } = deps;

  /** As follower: send `ask` (rejects when Redis fails), wait for the leader's notice, then read Redis; false when not asked. */
  async function askLeader(projectId: number, ask: () => Promise<unknown>): Promise<boolean> {
    const notice = waiters.next(projectId, deps.waitMs);
    const asked = await ask().then(() => true, () => false);
    if (asked) await notice;
    else waiters.settle(projectId);
    await deps.load(projectId);
    return asked;
  }

  return {
    async pollNow(projectId) {
      if ((await deps.role(projectId)) !== 'follower') return poller.pollNow(projectId);
      await askLeader(projectId, () => redis.publish(keys.pollChannel, encodePollRequest({ project: projectId, plain: false })));
    },
    async ensurePlain(projectId) {
      if (store.get(projectId) === undefined) return;
      const role = await deps.role(projectId);
      if (role !== 'follower') {
        await poller.ensurePlain(projectId);
        if (role === 'leader') await deps.publish(projectId);
        return;
      }
      // Read after the role: another caller may have marked it wanted meanwhile.
      if (store.get(projectId)?.plainWanted !== false) return;
      store.update(projectId, (p) => withChanges(p, { plainWanted: true }));
      const asked = await askLeader(projectId, async () => {
        await redis.command('plain_wanted', ['SET', keys.plainWanted(projectId), '1', 'PX', String(snapshotTtlMs)]);
        await redis.publish(keys.pollChannel, encodePollRequest({ project: projectId, plain: true }));
      });
      // Redis did not take the request: not wanted yet as far as the fleet knows, so the next caller asks again.
      if (!asked && store.get(projectId)?.plain === null) store.update(projectId, (p) => withChanges(p, { plainWanted: false }));
    },
    onHealthyCycle(listener) {
      poller.onHealthyCycle(listener);
      deps.listeners.push(listener);
    },
  };
}
