/**
 * One upstream poll per project per fleet. Per project this sidecar is the `leader` (holds the lease: polls
 * upstream as without fleet mode and publishes each cycle's snapshot, snapshot-publisher.ts), a `follower` (never
 * polls upstream while a live leader publishes; loads the fleet's snapshot on each notice and on a timer every
 * lease, snapshot-loader.ts) or `direct` (Redis not usable: polls upstream itself, jittered, as without
 * fleet mode). Followers take the lease when it is free, so a dead leader is replaced within about one lease;
 * when Redis returns, fleet mode resumes by itself. Roles are decided by lease-decision.ts.
 *
 * Also: `pollNow` (read-your-writes) polls upstream as leader or direct, and as follower asks the leader on
 * the poll channel and reads Redis; `ensurePlain` as follower marks the plain variant wanted in Redis so the
 * leader polls it; healthy-cycle listeners hear of followers taking in a snapshot the leader confirmed.
 * Paced by the fleet's size (fleet-pacing.ts): leaders publish a count of the fleet; in a Redis outage direct polls
 * keep the fleet within a budget; on a notice followers spread their reads of the new body.
 * Guarantees: nothing here runs on a request path except pollNow/ensurePlain, which wait on Redis at most a
 * bounded time; never throws into the poller; Redis errors only change the role.
 */
import type { Logger } from '../logger.js';
import type { FleetRole } from '../metrics/fleet-metrics.js';
import { withChanges } from '../store/snapshot.js';
import type { Store } from '../store/store.js';
import type { Poller, PollControl, PollerFleet, PollOutcome, PollStatus } from '../upstream/poller.js';
import type { Fleet, FleetProjectStatus } from './fleet.js';
import { createLease, type Lease } from './lease.js';
import { leaseMargin, roleOf } from './lease-decision.js';
import { createNoticeWaiters } from './notice-waiters.js';
import { createPollRouting } from './poll-routing.js';
import { createFleetPacing } from './fleet-pacing.js';
import { createFleetSizeCounter } from './fleet-size.js';
import { createBodyDigest, encodeNotice, headPollOf, parseNotice, parsePollRequest, pollStatusOf, type SnapshotHead } from './snapshot-head.js';
import { createSnapshotLoader } from './snapshot-loader.js';
import { createSnapshotPublisher } from './snapshot-publisher.js';

/** Dependencies of createSnapshotRelay. */
export interface RelayDeps {
  readonly fleet: Fleet;
  readonly store: Store;
  readonly intervalMs: number;
  readonly maxBodyBytes: number;
  /** Direct polls a minute the whole fleet may make while Redis is gone (FLAG_SIDECAR_FLEET_OUTAGE_BUDGET). */
  readonly outageBudgetPerMinute: number;
  /** Redis egress the followers' fetches of a change aim for, bytes a second (FLAG_SIDECAR_FLEET_FETCH_RATE). */
  readonly fetchBytesPerSecond: number;
  readonly logger: Logger;
  readonly now: () => number;
  readonly random: () => number;
}

interface ProjectState {
  readonly lease: Lease;
  /** The data served was fetched by this sidecar itself (as leader or direct), not loaded from the fleet. */
  own: boolean;
  /** Local time the fleet's head was last seen to change (or the silence clock was reset). */
  lastFleetChangeAt: number;
  /** The fleet's snapshot was refused when last read (so this sidecar polls itself until one verifies). */
  refused: boolean;
  /** The head of the fleet data served (null: none loaded). */
  head: SnapshotHead | null;
  role: FleetRole | null;
  /** A follower asked for this poll: notify even if nothing changed. */
  noticeWanted: boolean;
  /** The load under way, and the one queued behind it (a flood of notices costs at most two reads at a time). */
  loading: Promise<void> | null;
  queued: Promise<void> | null;
}

const healthy = (outcome: PollOutcome | null): boolean => outcome === 'updated' || outcome === 'not_modified';

/** Create the relay for every project of the store; `start(poller)` begins. */
export function createSnapshotRelay(deps: RelayDeps) {
  const { fleet, store, logger, now } = deps;
  const { redis, keys, metrics, instanceId } = fleet;
  const leaseMs = fleet.config.leaseMs;
  const digest = createBodyDigest();
  const { integrity } = fleet;
  const loader = createSnapshotLoader({ redis, keys, store, digest, integrity, maxBodyBytes: deps.maxBodyBytes, metrics, logger, now });
  const publisher = createSnapshotPublisher({ redis, keys, store, instanceId, digest, integrity, metrics, logger });
  const timing = { leaseMs, marginMs: leaseMargin(leaseMs, fleet.config.timeoutMs) };
  const listeners: Array<(projectId: number) => void> = [];
  const waiters = createNoticeWaiters();
  const states = new Map<number, ProjectState>();
  const waitMs = Math.max(1000, 4 * fleet.config.timeoutMs);
  let poller: Poller | null = null;
  let timer: NodeJS.Timeout | null = null;
  /** Polls a new leader makes when the fleet's next poll is due (cleared at close). */
  const dueTimers = new Set<NodeJS.Timeout>();
  let startup: Promise<void> = Promise.resolve();
  let invalidLogged = false;
  const pacing = createFleetPacing({ ...deps, count: createFleetSizeCounter({ redis, channel: keys.snapshotChannel, refreshMs: deps.intervalMs, now }).count });

  const state = (projectId: number): ProjectState => states.get(projectId) as ProjectState;

  function role(projectId: number): FleetRole {
    const s = state(projectId);
    const next = roleOf({
      redisDownMs: redis.downForMs(),
      leaseFailures: s.lease.failures(),
      holdsLease: s.lease.holdsLease(),
      fleetRefused: s.refused,
      lastFleetChangeAt: s.lastFleetChangeAt,
      now: now(),
      intervalMs: deps.intervalMs,
      leaseMs,
    });
    if (next !== s.role) {
      if (s.role !== null || next !== 'direct') logger.info({ project: projectId, role: next, was: s.role }, 'fleet role changed');
      s.role = next;
    }
    return next;
  }

  /** The role before an upstream poll: a leader whose lease was last confirmed too long ago checks it first. */
  async function checkedRole(projectId: number): Promise<FleetRole> {
    await state(projectId).lease.confirm();
    return role(projectId);
  }

  /** Load the fleet's snapshot: at most one read under way per project, and one queued to start after it. */
  function load(projectId: number): Promise<void> {
    const s = state(projectId);
    if (s.loading === null) {
      s.loading = loadOnce(projectId).finally(() => (s.loading = null));
      return s.loading;
    }
    s.queued ??= s.loading.then(() => {
      s.queued = null;
      return load(projectId);
    });
    return s.queued;
  }

  async function loadOnce(projectId: number): Promise<void> {
    const s = state(projectId);
    const result = await loader.load(projectId, s.own);
    if (result.kind === 'rejected' || result.kind === 'loaded') s.refused = result.kind === 'rejected';
    if (result.kind !== 'loaded') return;
    pacing.seen(result.head);
    if (result.changed) s.lastFleetChangeAt = now();
    s.lease.observe(result.head.generation);
    if (!result.fresh && s.own) return;
    s.own = false;
    s.head = result.head;
    if (result.fresh && healthy(result.head.poll.outcome)) for (const listener of listeners) listener(projectId);
  }

  function loadIfFollower(projectId: number): Promise<void> {
    return role(projectId) === 'leader' ? Promise.resolve() : load(projectId);
  }

  async function publish(projectId: number): Promise<void> {
    const s = state(projectId);
    const value = s.lease.value();
    const generation = s.lease.generation();
    if (value === null || generation === null || !redis.up() || poller === null) return;
    const poll = poller.status(projectId);
    const notice = s.noticeWanted;
    s.noticeWanted = false;
    const fleetSize = await pacing.count();
    const result = await publisher.publish(projectId, { leaseValue: value, generation, notice, poll: headPollOf(poll), fleetSize, relay: pacing.upstreamIsRelay() });
    if (result === 'fenced') s.lease.markLost('another leader holds the lease');
    if (result === 'failed' && notice) s.noticeWanted = true;
  }

  /** The lease was acquired: take in what the fleet holds (newer data, the plain variant wanted), then lead. */
  async function adopt(projectId: number): Promise<void> {
    publisher.forget(projectId);
    await load(projectId);
    const wanted = await redis.command('plain_wanted', ['GET', keys.plainWanted(projectId)]).catch(() => null);
    if (wanted !== null && !store.get(projectId)?.plainWanted) store.update(projectId, (p) => withChanges(p, { plainWanted: true }));
    // The fleet's next poll is due one interval after the last one (a dead leader's included), not one interval
    // after this sidecar's own last tick: poll when it is due, at once if overdue.
    const fetchedAt = store.get(projectId)?.cohorts?.fetchedAt ?? 0;
    const dueIn = Math.max(0, fetchedAt + deps.intervalMs - now());
    const due = setTimeout(() => {
      dueTimers.delete(due);
      if (role(projectId) === 'leader') void poller?.pollNow(projectId);
    }, dueIn);
    due.unref();
    dueTimers.add(due);
  }

  /** A message from a channel, parsed; invalid ones are counted and logged once, unknown projects ignored. */
  function accept<T extends { readonly project: number }>(message: T | null): T | null {
    if (message === null) {
      metrics.redisErrors.inc({ operation: 'invalid_message' });
      if (!invalidLogged) logger.warn('fleet message in redis refused (not one this version sends); ignoring such messages');
      invalidLogged = true;
      return null;
    }
    return states.has(message.project) ? message : null;
  }

  async function answerPollRequest(projectId: number, plain: boolean): Promise<void> {
    const s = state(projectId);
    if (role(projectId) !== 'leader' || poller === null) return;
    if (plain && !store.get(projectId)?.plainWanted) store.update(projectId, (p) => withChanges(p, { plainWanted: true }));
    s.noticeWanted = true;
    await poller.pollNow(projectId);
    if (s.noticeWanted) await publish(projectId);
  }

  const hooks: PollerFleet = {
    async shouldPoll(projectId, forced) {
      await startup;
      // The lease checked first (a leader resumed after a pause may have lost it); a poll a caller asked for
      // (read-your-writes) is not held back by the budget.
      return pacing.shouldPoll(projectId, await checkedRole(projectId), forced, store.get(projectId)?.cohorts != null);
    },
    polled(projectId, outcome, relayed) {
      const s = state(projectId);
      pacing.polled(projectId, role(projectId), relayed);
      if (outcome === 'updated') metrics.snapshotsReceived.inc({ project: String(projectId), source: 'upstream' });
      if (healthy(outcome)) s.own = true;
      if (role(projectId) === 'leader') void publish(projectId);
    },
  };

  for (const projectId of store.projectIds()) {
    const lease = createLease({
      redis, keys, projectId, instanceId, timing, clock: () => performance.now(), random: deps.random, logger, metrics,
      onChange: (change) => {
        const s = state(projectId);
        if (change === 'acquired') void adopt(projectId);
        else s.lastFleetChangeAt = now();
        role(projectId);
      },
    });
    states.set(projectId, { lease, own: false, lastFleetChangeAt: now(), refused: false, head: null, role: null, noticeWanted: false, loading: null, queued: null });
  }
  metrics.observeRoles(() => store.projectIds().map((id) => ({ project: String(id), role: role(id), route: pacing.route(role(id)), generation: status(id).generation })));

  function status(projectId: number): FleetProjectStatus {
    const s = state(projectId);
    const r = role(projectId);
    const generation = r === 'leader' ? s.lease.generation() : s.own ? null : (s.head?.generation ?? null);
    const leader = r === 'leader' ? instanceId : (s.lease.holder() ?? s.head?.leader ?? null);
    const stretched = pacing.directIntervalMs(r);
    return { role: r, leader, generation, route: pacing.route(r), fleet_size: pacing.fleetSize(), direct_interval_seconds: stretched === null ? null : stretched / 1000 };
  }

  return {
    /** Hooks the poller consults each cycle. */
    hooks,
    /** Start: subscribe, try to take every lease, load the fleet's snapshots (as soon as Redis answers). */
    start(started: Poller): void {
      poller = started;
      const ids = store.projectIds();
      const syncAll = (): Promise<unknown> =>
        Promise.all(ids.map(async (id) => {
          state(id).lastFleetChangeAt = now();
          await state(id).lease.attemptNow();
          await loadIfFollower(id);
        }));
      // The first polls wait (at most a few Redis timeouts) for the first election, so that a starting follower does not poll upstream.
      startup = new Promise<void>((resolve) => {
        const grace = setTimeout(resolve, Math.max(1000, 4 * fleet.config.timeoutMs));
        grace.unref();
        redis.onReady(() => void syncAll().finally(resolve));
        if (redis.up()) void syncAll().finally(resolve);
      });
      void redis.subscribe(keys.snapshotChannel, (raw) => {
        const notice = accept(parseNotice(raw));
        if (notice === null) return;
        if (notice.kind === 'released') void state(notice.project).lease.attemptNow();
        else {
          // A caller waiting for this notice (read-your-writes) loads at once; the rest of the fleet spreads out.
          waiters.settle(notice.project);
          if (role(notice.project) !== 'leader') pacing.spread(notice.project, state(notice.project).head, () => void loadIfFollower(notice.project));
        }
      }).catch((error: Error) => logger.warn({ err: error.message }, 'fleet: could not subscribe to snapshot notices'));
      void redis.subscribe(keys.pollChannel, (raw) => {
        const request = accept(parsePollRequest(raw));
        if (request !== null) void answerPollRequest(request.project, request.plain);
      }).catch((error: Error) => logger.warn({ err: error.message }, 'fleet: could not subscribe to poll requests'));
      for (const id of ids) state(id).lease.start();
      // A fallback for notices missed, and what shows a 304's refresh (no notice): once a lease is often enough.
      timer = setInterval(() => {
        if (redis.up()) for (const id of ids) void loadIfFollower(id);
      }, Math.max(50, leaseMs));
      timer.unref();
    },
    /** What the API routes use for polling: `polls` routed by role. */
    control(polls: Poller): PollControl {
      return createPollRouting({ poller: polls, store, redis, keys, waiters, waitMs, role: checkedRole, load, publish, listeners });
    },
    /**
     * After a write through another sidecar: a follower reads the fleet's snapshot (the writer already asked the
     * leader to poll), the leader or a direct poller polls upstream. Never rejects.
     */
    refresh(projectId: number): Promise<void> {
      if (!states.has(projectId)) return Promise.resolve();
      return role(projectId) === 'follower' ? load(projectId) : (poller?.pollNow(projectId) ?? Promise.resolve());
    },
    /** The project's role, leader and generation, for /status. */
    status,
    /** The lease value this sidecar holds for the project (to fence what it writes as leader); null when none. */
    leaseValue: (projectId: number): string | null => (states.has(projectId) ? state(projectId).lease.value() : null),
    /** A follower's view of upstream polling (the leader's last poll, from its head); null when this sidecar polls. */
    pollStatus(projectId: number): PollStatus | null {
      const { head } = state(projectId);
      return role(projectId) !== 'follower' || head === null ? null : pollStatusOf(head.poll, now());
    },
    /** Stop loading, release every lease held (followers hear of it and take over at once). Never rejects. */
    async close(): Promise<void> {
      if (timer !== null) clearInterval(timer);
      for (const due of dueTimers) clearTimeout(due);
      pacing.close();
      waiters.settleAll();
      await Promise.all(
        [...states.entries()].map(async ([id, s]) => {
          if (await s.lease.stop()) await redis.publish(keys.snapshotChannel, encodeNotice({ kind: 'released', project: id })).catch(() => undefined);
        }),
      );
    },
  };
}

/** The relay handle. */
export type SnapshotRelay = ReturnType<typeof createSnapshotRelay>;
