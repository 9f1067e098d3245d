/**
 * The fleet's Redis client for tests: started at once, its health check every 100 ms (pinging after a timeout,
 * or after `idlePingMs` without an answer: default 100 ms), closed when the test ends.
 */
import { Registry } from 'prom-client';
import { onTestFinished } from 'vitest';
import type { RedisMode } from '../../src/config/parsers.js';
import { createFleetRedis, type FleetRedis } from '../../src/fleet/redis.js';
import { createLogger } from '../../src/logger.js';
import { createFleetMetrics } from '../../src/metrics/fleet-metrics.js';

/** Connect to `url` (call inside a test). */
export function fleetRedisClient(url: string, options: { timeoutMs?: number; mode?: RedisMode; sentinelMaster?: string | null; idlePingMs?: number; registry?: Registry } = {}): FleetRedis {
  const redis = createFleetRedis({
    url: new URL(url),
    mode: options.mode ?? 'standalone',
    sentinelMaster: options.sentinelMaster ?? null,
    timeoutMs: options.timeoutMs ?? 200,
    logger: createLogger('silent'),
    metrics: createFleetMetrics(options.registry ?? new Registry()),
    random: Math.random,
    pingIntervalMs: 100,
    idlePingMs: options.idlePingMs ?? 100,
  });
  onTestFinished(() => redis.close());
  redis.start();
  return redis;
}
