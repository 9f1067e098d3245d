/**
 * The lease scripts against the run's Redis (a random prefix per test): one holder at a time, a fencing
 * generation that grows, compare-and-renew that notices a taken lease, compare-and-delete that releases only
 * our own lease, a TTL on every key.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { fleetKeys } from '../../src/fleet/keys.js';
import { createLease, type Lease } from '../../src/fleet/lease.js';
import { createFleetRedis, type FleetRedis } from '../../src/fleet/redis.js';
import { createLogger } from '../../src/logger.js';
import { createFleetMetrics } from '../../src/metrics/fleet-metrics.js';
import { redisCall, runRedisPort, runRedisUrl, testPrefix } from '../support/redis.js';
import { waitFor } from '../support/start-sidecar.js';

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function setup(prefix: string) {
  const redis: FleetRedis = createFleetRedis({
    url: new URL(runRedisUrl),
    timeoutMs: 250,
    logger: createLogger('silent'),
    metrics: createFleetMetrics(new Registry()),
    random: Math.random,
  });
  redis.start();
  closers.push(() => redis.close());
  await waitFor(() => redis.up(), 'redis up');
  const keys = fleetKeys(prefix, new URL('http://upstream.test'));
  const changes: string[] = [];
  const lease = (instanceId: string): Lease => {
    const l = createLease({
      redis,
      keys,
      projectId: 1,
      instanceId,
      timing: { leaseMs: 1000, marginMs: 300 },
      now: Date.now,
      random: Math.random,
      logger: createLogger('silent'),
      metrics: createFleetMetrics(new Registry()),
      onChange: (change) => changes.push(`${instanceId} ${change}`),
    });
    closers.push(() => l.stop());
    return l;
  };
  return { keys, lease, changes };
}

describe('fleet lease', () => {
  it('one holder at a time; the other sees it; a released lease goes to the other with a higher generation', async () => {
    const { keys, lease, changes } = await setup(testPrefix());
    const a = lease('pod-a/1/aaaaaaaa');
    a.start();
    await waitFor(() => a.holdsLease(), 'a holds');
    const b = lease('pod-b/2/bbbbbbbb');
    b.start();
    await b.attemptNow();
    expect(b.holdsLease()).toBe(false);
    expect(b.holder()).toBe('pod-a/1/aaaaaaaa');
    const first = a.generation() as number;
    expect(await redisCall(runRedisPort, 'GET', keys.lease(1))).toContain(`pod-a/1/aaaaaaaa|${first}`);
    const ttl = Number(/:(\d+)/.exec(await redisCall(runRedisPort, 'PTTL', keys.lease(1)))?.[1]);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(1000);
    expect(Number(/:(\d+)/.exec(await redisCall(runRedisPort, 'PTTL', keys.generation(1)))?.[1])).toBeGreaterThan(1000);
    // Renewals keep it past several lease lengths.
    await new Promise((r) => setTimeout(r, 2500));
    expect(a.holdsLease()).toBe(true);
    expect(b.holdsLease()).toBe(false);
    expect(await a.stop()).toBe(true);
    await b.attemptNow();
    expect(b.holdsLease()).toBe(true);
    expect(b.generation()).toBeGreaterThan(first);
    expect([...changes].sort()).toEqual(['pod-a/1/aaaaaaaa acquired', 'pod-a/1/aaaaaaaa released', 'pod-b/2/bbbbbbbb acquired']);
  });

  it('compare-and-renew: a lease taken by another is lost at the next renewal, and not released by us', async () => {
    const { keys, lease, changes } = await setup(testPrefix());
    const a = lease('pod-a/1/aaaaaaaa');
    a.start();
    await waitFor(() => a.holdsLease(), 'a holds');
    await redisCall(runRedisPort, 'SET', keys.lease(1), 'intruder/9/99999999|77', 'PX', '60000');
    await waitFor(() => !a.holdsLease(), 'a lost it', 3000);
    expect(changes).toEqual(['pod-a/1/aaaaaaaa acquired', 'pod-a/1/aaaaaaaa lost']);
    await waitFor(() => a.holder() === 'intruder/9/99999999', 'the new holder seen', 3000);
    expect(await a.stop()).toBe(false);
    expect(await redisCall(runRedisPort, 'GET', keys.lease(1))).toContain('intruder/9/99999999|77');
  });

  it('a stopped lease is never taken again: a release notice heard during shutdown does not re-acquire it', async () => {
    const { keys, lease, changes } = await setup(testPrefix());
    const a = lease('pod-a/1/aaaaaaaa');
    a.start();
    await waitFor(() => a.holdsLease(), 'a holds');
    expect(await a.stop()).toBe(true);
    // The relay hears its own "released" notice (and other sidecars' ones) and asks for an attempt.
    await a.attemptNow();
    expect(a.holdsLease()).toBe(false);
    expect(await redisCall(runRedisPort, 'EXISTS', keys.lease(1))).toContain('0');
    a.markLost('another leader holds the lease');
    await new Promise((r) => setTimeout(r, 100));
    expect(await redisCall(runRedisPort, 'EXISTS', keys.lease(1))).toContain('0');
    expect(changes).toEqual(['pod-a/1/aaaaaaaa acquired', 'pod-a/1/aaaaaaaa released']);
  });

  it('takes the lease over garbage in the generation key, above every generation it saw', async () => {
    const { keys, lease } = await setup(testPrefix());
    await redisCall(runRedisPort, 'SET', keys.generation(1), 'not a number');
    const a = lease('pod-a/1/aaaaaaaa');
    a.observe(41);
    a.start();
    await waitFor(() => a.holdsLease(), 'a holds');
    expect(a.generation()).toBe(42);
    expect(a.failing()).toBe(false);
  });
});
