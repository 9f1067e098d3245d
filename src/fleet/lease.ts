/**
 * The leader lease of one project in fleet mode: a Redis key `lease` holding `<instance id>|<generation>` with a
 * TTL of FLAG_SIDECAR_FLEET_LEASE. Acquiring is one script (take the key only when it is free and, when it took,
 * INCR the project's fencing generation); renewing is a compare-and-renew script (extends the TTL only while
 * the value is still ours); releasing at shutdown is a compare-and-delete, so a rolling restart hands over at
 * once. The timing (renew every third of the lease, take it as lost before it can expire in Redis, followers
 * look just after the holder's TTL runs out) is decided by lease-decision.ts, on a monotonic clock.
 *
 * What it costs Redis: a leader one renewal per third of a lease; a follower one PTTL per lease or so (a plain
 * command; the acquire script only when the lease is gone, or on attemptNow: at start, after a reconnection, on
 * a release notice). Scripts go as EVALSHA.
 *
 * Generations only grow as far as the fleet can tell: a new one is above every generation this sidecar has seen,
 * so a Redis that lost the counter (flushed, restarted empty) does not hand out an old number again.
 *
 * Guarantees: never throws; a failed or timed-out command leaves the lease as it was until the decision says it
 * is lost; `holdsLease()` is false as soon as the lease may have expired, whatever the timers do; `confirm()` lets
 * a leader whose last confirmation is older than a renewal period (the process was paused) check the lease
 * before it acts on it; every key written has a TTL. The holder read back from Redis is untrusted and checked
 * before use.
 */
import type { Logger } from '../logger.js';
import type { FleetMetrics } from '../metrics/fleet-metrics.js';
import type { FleetKeys } from './keys.js';
import { failureRetryMs, followerRetryMs, leaseDecision, type LeaseTiming } from './lease-decision.js';
import { redisScript, type FleetRedis, type RedisReply } from './redis.js';
import { maxGeneration } from './snapshot-head.js';

/** How long the generation counter outlives the last leader (it is refreshed at every renewal). */
export const generationTtlMs = 24 * 3_600_000;

// KEYS: lease, generation. ARGV: instance id, lease ms, generation TTL ms, highest generation seen (the new one is
// above it, also when Redis lost the counter or holds garbage there). → {1, value} taken (or already ours) | {0, holder, pttl}
const acquireScript = redisScript(`
local cur = redis.call('GET', KEYS[1])
if cur then
  if string.sub(cur, 1, string.len(ARGV[1]) + 1) == ARGV[1] .. '|' then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    redis.call('PEXPIRE', KEYS[2], ARGV[3])
    return {1, cur}
  end
  return {0, cur, redis.call('PTTL', KEYS[1])}
end
local gen = redis.pcall('INCR', KEYS[2])
if type(gen) ~= 'number' or gen <= tonumber(ARGV[4]) then
  gen = tonumber(ARGV[4]) + 1
  redis.call('SET', KEYS[2], gen)
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
local value = ARGV[1] .. '|' .. gen
redis.call('SET', KEYS[1], value, 'PX', ARGV[2])
return {1, value}`);

// KEYS: lease, generation. ARGV: our value, lease ms, generation TTL ms. → 1 renewed | 0 not ours
const renewScript = redisScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return 1
end
return 0`);

// KEYS: lease. ARGV: our value. → 1 deleted | 0 not ours
const releaseScript = redisScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`);

/** A lease value `<instance id>|<generation>` → its parts, or null when it is not one. */
export function parseLeaseValue(value: unknown): { instance: string; generation: number } | null {
  if (typeof value !== 'string' || value.length > 300) return null;
  const match = /^([\x21-\x7e]{1,256})\|(\d{1,13})$/.exec(value);
  if (!match) return null;
  return { instance: match[1] as string, generation: Number(match[2]) };
}

/** Dependencies of createLease. */
export interface LeaseDeps {
  readonly redis: FleetRedis;
  readonly keys: FleetKeys;
  readonly projectId: number;
  readonly instanceId: string;
  readonly timing: LeaseTiming;
  /** A monotonic clock in ms (performance.now): a pause of the process shows as time passed, a wall-clock step does not. */
  readonly clock: () => number;
  readonly random: () => number;
  readonly logger: Logger;
  readonly metrics: FleetMetrics;
  /** Hears every change of this sidecar's hold on the lease. */
  readonly onChange: (change: 'acquired' | 'lost' | 'released') => void;
}

/** Create the lease of one project; `start()` begins trying to take it. */
export function createLease(deps: LeaseDeps) {
  const { redis, keys, projectId, instanceId, timing, clock, logger, metrics } = deps;
  const project = String(projectId);
  const keyArgs = [keys.lease(projectId), keys.generation(projectId)];
  let held = false;
  let value: string | null = null;
  let generation: number | null = null;
  let highestSeen = 0;
  let confirmedAt: number | null = null;
  /** The holder as the last acquire attempt saw it (null: none, or not known since). */
  let holder: string | null = null;
  /** Time the holder's lease had left at the last look (null: unknown, so the next look runs the acquire script). */
  let holderTtlMs: number | null = null;
  let failures = 0;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  let stopped = false;

  function lose(reason: string): void {
    if (!held) return;
    held = false;
    value = null;
    confirmedAt = null;
    holderTtlMs = null;
    if (holder === instanceId) holder = null;
    metrics.leaseChanges.inc({ project, change: 'lost' });
    logger.warn({ project: projectId, reason }, 'fleet lease lost; no longer polling upstream for the fleet');
    deps.onChange('lost');
  }

  async function acquire(): Promise<void> {
    const sentAt = clock();
    const args = [instanceId, String(timing.leaseMs), String(generationTtlMs), String(highestSeen)];
    const reply = await redis.script('lease_acquire', acquireScript, keyArgs, args);
    const [took, text, pttl] = Array.isArray(reply) ? (reply as RedisReply[]) : [];
    const parsed = parseLeaseValue(text);
    if (took === 1 && parsed !== null && parsed.instance === instanceId) {
      const wasHeld = held;
      held = true;
      value = text as string;
      generation = parsed.generation;
      highestSeen = Math.max(highestSeen, parsed.generation);
      confirmedAt = sentAt;
      holder = instanceId;
      if (!wasHeld) {
        metrics.leaseChanges.inc({ project, change: 'acquired' });
        logger.info({ project: projectId, generation }, 'fleet lease acquired; polling upstream for the fleet');
        deps.onChange('acquired');
      }
      return;
    }
    holder = parsed?.instance ?? null;
    if (parsed !== null) highestSeen = Math.max(highestSeen, parsed.generation);
    holderTtlMs = typeof pttl === 'number' && pttl > 0 ? pttl : null;
  }

  /**
   * As follower, once the holder's lease may have run out: ask Redis how long it has left (PTTL, a plain command
   * far cheaper than the script); only when it is gone (or has no TTL, so not one a sidecar wrote) run the
   * acquire script. Who holds a renewed lease is not known from this (it may have changed hands meanwhile).
   */
  async function look(): Promise<void> {
    const pttl = await redis.command('lease_look', ['PTTL', keys.lease(projectId)]);
    if (typeof pttl === 'number' && pttl > 0) {
      holderTtlMs = pttl;
      holder = null;
      return;
    }
    await acquire();
  }

  async function renew(current: string): Promise<void> {
    const sentAt = clock();
    const reply = await redis.script('lease_renew', renewScript, keyArgs, [current, String(timing.leaseMs), String(generationTtlMs)]);
    if (reply === 1) {
      if (value === current) confirmedAt = sentAt;
    } else if (value === current) {
      lose('taken by another sidecar');
    }
  }

  /** One decision and its command. `probe`: a follower only looks at the lease (timer ticks), else it tries to take it. */
  async function step(probe: boolean): Promise<void> {
    // Stopped (shutting down): never take the lease again, e.g. on hearing our own release notice.
    if (stopped) return;
    const decision = leaseDecision({ held, confirmedAt }, clock(), timing);
    if (decision.expired) lose(redis.up() ? 'not renewed in time' : 'redis unavailable');
    const current = value;
    const command =
      decision.action === 'renew' && current !== null ? () => renew(current)
      : decision.action === 'acquire' ? (probe && holderTtlMs !== null ? look : acquire)
      : null;
    const attempted = command !== null && redis.up();
    if (attempted) {
      try {
        await command();
        failures = 0;
      } catch {
        failures += 1; // counted and logged by the client
      }
    }
    if (stopped) return;
    const after = leaseDecision({ held, confirmedAt }, clock(), timing);
    let delay: number;
    if (held) delay = after.action === 'none' ? after.nextInMs : decision.nextInMs;
    else if (attempted && failures > 0) delay = failureRetryMs(failures, timing.leaseMs);
    else delay = followerRetryMs(attempted ? holderTtlMs : null, timing.leaseMs, deps.random);
    schedule(delay);
  }

  function schedule(delayMs: number): void {
    if (timer !== null) clearTimeout(timer);
    if (stopped) return;
    timer = setTimeout(() => void run(true), delayMs);
    timer.unref();
  }

  function run(probe: boolean): Promise<void> {
    running ??= step(probe).finally(() => (running = null));
    return running;
  }

  return {
    /** Begin: try to take the lease now, then keep it or keep trying. */
    start(): void {
      void run(false);
    },
    /** Decide now (Redis came back, the holder released): resolves once the attempt is done; nothing once stopped. Never rejects. */
    attemptNow(): Promise<void> {
      if (stopped) return running ?? Promise.resolve();
      if (timer !== null) clearTimeout(timer);
      return running ?? run(false);
    },
    /**
     * Before acting as leader (an upstream poll): when the lease is held but its last confirmation is older than
     * a renewal period — this process was paused (SIGSTOP, a long GC, a starved CPU) or renewals are late —
     * renew it now (a lease that passed meanwhile is found lost). Resolves once checked; never rejects.
     */
    async confirm(): Promise<void> {
      // At most twice: a renewal in flight may have been sent before a pause, and counts from when it was sent.
      for (let tries = 0; tries < 2 && held && !stopped; tries++) {
        if (leaseDecision({ held, confirmedAt }, clock(), timing).action === 'none') return;
        if (running === null && timer !== null) clearTimeout(timer);
        await (running ?? run(false));
      }
    },
    /** The lease is ours and cannot have expired yet. */
    holdsLease(): boolean {
      return held && !leaseDecision({ held, confirmedAt }, clock(), timing).expired;
    },
    /** Our lease value (`<instance>|<generation>`, for fenced writes) while held, else null. */
    value: (): string | null => (held ? value : null),
    /** Fencing generation of our lease (the last one we held). */
    generation: (): number | null => generation,
    /** The holder as the last acquire attempt saw it (our id while we hold it), or null when not known. */
    holder: (): string | null => (held ? instanceId : holder),
    /** Lease commands that failed in a row (Redis refused or timed out); 0 after one succeeded. */
    failures: (): number => failures,
    /** Note a generation seen in the fleet's data, so that a generation this sidecar takes is always higher. */
    observe(seen: number): void {
      if (seen <= maxGeneration) highestSeen = Math.max(highestSeen, seen);
    },
    /** A fenced write found the lease taken: stop acting as leader at once. */
    markLost(reason: string): void {
      lose(reason);
      schedule(0);
    },
    /** Stop the timers and, if held, release the lease (compare-and-delete). Resolves true when released; never rejects. */
    async stop(): Promise<boolean> {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      await running;
      const current = held ? value : null;
      held = false;
      if (current === null) return false;
      try {
        const reply = await redis.script('lease_release', releaseScript, [keys.lease(projectId)], [current]);
        if (reply !== 1) return false;
        metrics.leaseChanges.inc({ project, change: 'released' });
        deps.onChange('released');
        return true;
      } catch {
        return false;
      }
    },
  };
}

/** The lease handle of one project. */
export type Lease = ReturnType<typeof createLease>;
