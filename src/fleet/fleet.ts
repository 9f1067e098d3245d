/**
 * Fleet mode's context: the Redis client, the key names, the fleet metrics and this sidecar's instance id, made
 * once in app.ts when FLAG_SIDECAR_REDIS_URL is set (and loaded with a dynamic import, so that without it no
 * fleet code or Redis client is even loaded). The parts of fleet mode (lease and snapshot relay, shared caches,
 * invalidation) are built on it. `start()` never waits for Redis: a sidecar whose Redis is down starts and
 * serves as one without fleet mode.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Registry } from 'prom-client';
import type { FleetConfig } from '../config/load.js';
import type { Integrity } from '../integrity.js';
import type { Logger } from '../logger.js';
import { createFleetMetrics, type FleetRole } from '../metrics/fleet-metrics.js';
import type { PollRoute } from './fleet-budget.js';
import { fleetKeys } from './keys.js';
import { createFleetRedis, type RedisStatus } from './redis.js';

/** Dependencies of createFleet. */
export interface FleetDeps {
  readonly config: FleetConfig;
  readonly upstream: URL;
  /** Seals what the fleet shares in Redis (fleet mode is online, so there is always a key). */
  readonly integrity: Integrity;
  readonly registry: Registry;
  readonly logger: Logger;
  readonly now: () => number;
  readonly random: () => number;
}

/** What /status shows per project in fleet mode. */
export interface FleetProjectStatus {
  readonly role: FleetRole;
  /** Instance id of the project's leader as last seen (null: none known). */
  readonly leader: string | null;
  /** Fencing generation of the snapshot served (null: none from the fleet yet). */
  readonly generation: number | null;
  /** How upstream is reached: through the fleet, direct within the outage budget, direct, or through a relay. */
  readonly route: PollRoute;
  /** The fleet's size as last counted or seen in Redis (null: never). */
  readonly fleet_size: number | null;
  /** While `direct_budgeted`: the stretched poll interval, in seconds; else null. */
  readonly direct_interval_seconds: number | null;
}

/** What /status shows of the fleet. */
export interface FleetStatus {
  readonly instance_id: string;
  readonly prefix: string;
  readonly redis_mode: string;
  readonly lease_seconds: number;
  readonly redis: RedisStatus;
}

/** A unique id for this sidecar process: `<hostname>/<pid>/<8 hex>` (the hostname is the pod's name). */
export const newInstanceId = (): string => `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;

/** Create the fleet context; nothing talks to Redis before `start()`. */
export function createFleet(deps: FleetDeps) {
  const { config, logger } = deps;
  const metrics = createFleetMetrics(deps.registry);
  const redis = createFleetRedis({
    url: config.redisUrl,
    mode: config.mode,
    sentinelMaster: config.sentinelMaster,
    timeoutMs: config.timeoutMs,
    logger,
    metrics,
    random: deps.random,
    now: deps.now,
    // Followers and the leader send a lease command at least once a lease: a ping only when even that stopped.
    idlePingMs: config.leaseMs,
  });
  metrics.observeRedis(redis.up);
  const instanceId = newInstanceId();
  const closers: Array<() => Promise<void>> = [];
  return {
    config,
    redis,
    keys: fleetKeys(config.prefix, deps.upstream),
    metrics,
    instanceId,
    integrity: deps.integrity,
    /** Connect to Redis in the background; never waits for it. */
    start(): void {
      redis.start();
      logger.info({ instance: instanceId, prefix: config.prefix }, 'fleet mode on');
    },
    /** Run `close` (a part's shutdown) before Redis is closed; parts close in the reverse order of registration. */
    onClose(close: () => Promise<void>): void {
      closers.push(close);
    },
    /** The fleet as /status shows it. */
    status(): FleetStatus {
      return { instance_id: instanceId, prefix: config.prefix, redis_mode: config.mode, lease_seconds: config.leaseMs / 1000, redis: redis.status() };
    },
    /** Shut the parts down, then Redis. Never rejects. */
    async close(): Promise<void> {
      for (const close of closers.reverse()) await close().catch((error: Error) => logger.warn({ err: error.message }, 'fleet part failed to close'));
      await redis.close();
    },
  };
}

/** The fleet context. */
export type Fleet = ReturnType<typeof createFleet>;
