/**
 * The leader lease of one project in fleet mode: a Redis key `lease` holding `<instance id>|<generation>` with a
 * TTL of FLAG_SIDECAR_FLEET_LEASE. Acquiring is one script (take the key only when it is free and, when it took,
 * INCR the project's fencing generation); renewing is a compare-and-renew script (extends the TTL only while
 * the value is still ours); releasing at shutdown is a compare-and-delete, so a rolling restart hands over at
 * once. The timing (renew every third of the lease, take it as lost before it can expire in Redis, followers
 * retry just after the holder's TTL runs out) is decided by lease-decision.ts.
 *
 * Generations only grow as far as the fleet can tell: a new one is above every generation this sidecar has seen,
 * so a Redis that lost the counter (flushed, restarted empty) does not hand out an old number again.
 *
 * Guarantees: never throws; a failed or timed-out command leaves the lease as it was until the decision says it
 * is lost; `holdsLease()` is false as soon as the lease may have expired, whatever the timers do; every key
 * written has a TTL. The holder read back from Redis is untrusted and checked before use.
 */
import type { Logger } from '../logger.js';
import type { FleetMetrics } from '../metrics/fleet-metrics.js';
import type { FleetKeys } from './keys.js';
import { followerRetryMs, leaseDecision, type LeaseTiming } from './lease-decision.js';
import type { FleetRedis, RedisReply } from './redis.js';
import { maxGeneration } from './snapshot-head.js';

/** How long the generation counter outlives the last leader (it is refreshed at every renewal). */
export const generationTtlMs = 24 * 3_600_000;

// KEYS: lease, generation. ARGV: instance id, lease ms, generation TTL ms, highest generation seen (the new one is
// above it, also when Redis lost the counter or holds garbage there). → {1, value} taken (or already ours) | {0, holder, pttl}
const acquireScript = `
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
return {1, value}`;

// KEYS: lease, generation. ARGV: our value, lease ms, generation TTL ms. → 1 renewed | 0 not ours
const renewScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return 1
end
return 0`;

// KEYS: lease. ARGV: our value. → 1 deleted | 0 not ours
const releaseScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

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
  readonly now: () => number;
  readonly random: () => number;
  readonly logger: Logger;
  readonly metrics: FleetMetrics;
  /** Hears every change of this sidecar's hold on the lease. */
  readonly onChange: (change: 'acquired' | 'lost' | 'released') => void;
}

/** Create the lease of one project; `start()` begins trying to take it. */
export function createLease(deps: LeaseDeps) {
  const { redis, keys, projectId, instanceId, timing, now, logger, metrics } = deps;
  const project = String(projectId);
  const keyArgs = [keys.lease(projectId), keys.generation(projectId)];
  let held = false;
  let value: string | null = null;
  let generation: number | null = null;
  let highestSeen = 0;
  let confirmedAt: number | null = null;
  let holder: string | null = null;
  let holderTtlMs: number | null = null;
  let failing = false;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  let stopped = false;

  function lose(reason: string): void {
    if (!held) return;
    held = false;
    value = null;
    confirmedAt = null;
    if (holder === instanceId) holder = null;
    metrics.leaseChanges.inc({ project, change: 'lost' });
    logger.warn({ project: projectId, reason }, 'fleet lease lost; no longer polling upstream for the fleet');
    deps.onChange('lost');
  }

  async function acquire(): Promise<void> {
    const sentAt = now();
    const args = [instanceId, String(timing.leaseMs), String(generationTtlMs), String(highestSeen)];
    const reply = await redis.command('lease_acquire', ['EVAL', acquireScript, '2', ...keyArgs, ...args]);
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
    holderTtlMs = typeof pttl === 'number' ? pttl : null;
  }

  async function renew(current: string): Promise<void> {
    const sentAt = now();
    const reply = await redis.command('lease_renew', ['EVAL', renewScript, '2', ...keyArgs, current, String(timing.leaseMs), String(generationTtlMs)]);
    if (reply === 1) {
      if (value === current) confirmedAt = sentAt;
    } else if (value === current) {
      lose('taken by another sidecar');
    }
  }

  async function step(): Promise<void> {
    // Stopped (shutting down): never take the lease again, e.g. on hearing our own release notice.
    if (stopped) return;
    const decision = leaseDecision({ held, confirmedAt }, now(), timing);
    if (decision.expired) lose(redis.up() ? 'not renewed in time' : 'redis unavailable');
    const attempted = redis.up();
    if (attempted) {
      try {
        if (decision.action === 'renew' && value !== null) await renew(value);
        else if (decision.action === 'acquire') await acquire();
        failing = false;
      } catch {
        failing = true; // counted and logged by the client
      }
    }
    if (stopped) return;
    const after = leaseDecision({ held, confirmedAt }, now(), timing);
    const delay = held
      ? after.action === 'none' ? after.nextInMs : decision.nextInMs
      : followerRetryMs(attempted && !failing ? holderTtlMs : null, timing.leaseMs, deps.random);
    schedule(delay);
  }

  function schedule(delayMs: number): void {
    if (timer !== null) clearTimeout(timer);
    if (stopped) return;
    timer = setTimeout(() => void run(), delayMs);
    timer.unref();
  }

  function run(): Promise<void> {
    running ??= step().finally(() => (running = null));
    return running;
  }

  return {
    /** Begin: try to take the lease now, then keep it or keep trying. */
    start(): void {
      void run();
    },
    /** Decide now (Redis came back, the holder released): resolves once the attempt is done; nothing once stopped. Never rejects. */
    attemptNow(): Promise<void> {
      if (stopped) return running ?? Promise.resolve();
      if (timer !== null) clearTimeout(timer);
      return running ?? run();
    },
    /** The lease is ours and cannot have expired yet. */
    holdsLease(): boolean {
      return held && !leaseDecision({ held, confirmedAt }, now(), timing).expired;
    },
    /** Our lease value (`<instance>|<generation>`, for fenced writes) while held, else null. */
    value: (): string | null => (held ? value : null),
    /** Fencing generation of our lease (the last one we held). */
    generation: (): number | null => generation,
    /** The holder as last seen (our id while we hold it), or null. */
    holder: (): string | null => (held ? instanceId : holder),
    /** The last lease command failed (Redis refused or timed out): the fleet cannot elect through us. */
    failing: (): boolean => failing,
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
        const reply = await redis.command('lease_release', ['EVAL', releaseScript, '1', keys.lease(projectId), current]);
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
