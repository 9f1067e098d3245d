/**
 * The lease scripts against the run's Redis (a random prefix per test): one holder at a time, a fencing
 * generation that grows, compare-and-renew that notices a taken lease, compare-and-delete that releases only
 * our own lease, a TTL on every key. On a private Redis: scripts sent as EVALSHA, and sent again with their text
 * when Redis lost them (SCRIPT FLUSH); a leader paused past its lease checks it before acting on it.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { fleetKeys } from '../../src/fleet/keys.js';
import { createLease, type Lease } from '../../src/fleet/lease.js';
import { createFleetRedis, type FleetRedis } from '../../src/fleet/redis.js';
import { createLogger } from '../../src/logger.js';
import { createFleetMetrics } from '../../src/metrics/fleet-metrics.js';
import { redisCall, runRedisPort, runRedisUrl, startPrivateRedis, testPrefix } from '../support/redis.js';
import { waitFor } from '../support/start-sidecar.js';

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function setup(prefix: string, url = runRedisUrl, clock = () => performance.now()) {
  const registry = new Registry();
  const redis: FleetRedis = createFleetRedis({
    url: new URL(url),
    timeoutMs: 250,
    logger: createLogger('silent'),
    metrics: createFleetMetrics(registry),
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
      clock,
      random: Math.random,
      logger: createLogger('silent'),
      metrics: createFleetMetrics(new Registry()),
      onChange: (change) => changes.push(`${instanceId} ${change}`),
    });
    closers.push(() => l.stop());
    return l;
  };
  return { keys, lease, changes, registry };
}

/** Calls of a command on the Redis at `port` so far (INFO commandstats). */
async function calls(port: number, command: string): Promise<number> {
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(await redisCall(port, 'INFO', 'commandstats'))?.[1] ?? 0);
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
    expect(a.failures()).toBe(0);
  });

  it('sends scripts as EVALSHA; after SCRIPT FLUSH the next renewal sends the text once, and the lease is kept', async () => {
    const server = await startPrivateRedis();
    const { lease, changes, registry } = await setup(testPrefix(), server.url);
    const a = lease('pod-a/1/aaaaaaaa');
    a.start();
    await waitFor(() => a.holdsLease(), 'a holds');
    await waitFor(async () => (await calls(server.port, 'evalsha')) >= 4, 'renewals as EVALSHA');
    const loads = async (): Promise<string> => (await registry.getSingleMetricAsString('flag_sidecar_redis_script_loads_total')).split('\n').filter((l) => !l.startsWith('#')).join('\n');
    // A fresh Redis held neither script: each was sent once with its text.
    expect(await calls(server.port, 'eval')).toBe(2);
    expect(await loads()).toBe('flag_sidecar_redis_script_loads_total{operation="lease_acquire"} 1\nflag_sidecar_redis_script_loads_total{operation="lease_renew"} 1');

    await redisCall(server.port, 'SCRIPT', 'FLUSH');
    const flushedAt = await calls(server.port, 'evalsha');
    // Three renewals after the flush (a lease is lost after leaseMs - margin without one).
    await waitFor(async () => (await calls(server.port, 'evalsha')) >= flushedAt + 4, 'renewals after the flush');
    expect(a.holdsLease()).toBe(true);
    expect(a.failures()).toBe(0);
    expect(changes).toEqual(['pod-a/1/aaaaaaaa acquired']);
    expect(await calls(server.port, 'eval')).toBe(3);
    expect(await loads()).toContain('flag_sidecar_redis_script_loads_total{operation="lease_renew"} 2');
  });

  it('confirm(): a leader whose last renewal is older than a renewal period renews first; past its lease, finds it lost', async () => {
    // The clock jumps as it would for a process stopped for a while (its timers late by as much).
    let paused = 0;
    const { keys, lease, changes } = await setup(testPrefix(), runRedisUrl, () => performance.now() + paused);
    const a = lease('pod-a/1/aaaaaaaa');
    a.start();
    await waitFor(() => a.holdsLease(), 'a holds');
    const ttlOf = async (): Promise<number> => Number(/:(\d+)/.exec(await redisCall(runRedisPort, 'PTTL', keys.lease(1)))?.[1]);

    // Half a lease later: due for renewal, still ours; confirm() renews it at once.
    paused += 500;
    await redisCall(runRedisPort, 'PEXPIRE', keys.lease(1), '100');
    await a.confirm();
    expect(await ttlOf()).toBeGreaterThan(500);
    expect(a.holdsLease()).toBe(true);

    // Two leases later, taken over meanwhile: found lost, the new holder seen.
    paused += 2000;
    await redisCall(runRedisPort, 'SET', keys.lease(1), 'pod-b/2/bbbbbbbb|9', 'PX', '60000');
    await a.confirm();
    expect(a.holdsLease()).toBe(false);
    expect(a.holder()).toBe('pod-b/2/bbbbbbbb');
    expect(changes).toEqual(['pod-a/1/aaaaaaaa acquired', 'pod-a/1/aaaaaaaa lost']);
  });
});
