/**
 * The fleet's Redis client on a Redis Cluster (three private nodes, slots split in three) and behind a Sentinel
 * (a private master and Sentinel): commands routed by key, a script on one hash tag, binary replies and pub/sub.
 */
import { describe, expect, it } from 'vitest';
import type { RedisMode } from '../../src/config/parsers.js';
import { firstKey } from '../../src/fleet/redis-connect.js';
import type { FleetRedis } from '../../src/fleet/redis.js';
import { freePort, startPrivateCluster, startPrivateSentinel } from '../support/redis.js';
import { fleetRedisClient } from '../support/fleet-redis-client.js';
import { waitFor } from '../support/start-sidecar.js';
import { tempDir } from '../support/temp-dir.js';

const connect = (url: string, mode: RedisMode, sentinelMaster: string | null = null): FleetRedis =>
  fleetRedisClient(url, { mode, sentinelMaster, timeoutMs: 1000 });

/** What fleet mode asks of any deployment: keys on every slot, a script over one hash tag, binary values, pub/sub. */
async function exercise(redis: FleetRedis): Promise<void> {
  await waitFor(() => redis.up(), 'redis up', 20_000);
  const ready: number[] = [];
  redis.onReady(() => ready.push(1));
  for (let i = 0; i < 20; i++) expect(await redis.command('set', ['SET', `k${i}`, String(i)])).toBe('OK');
  for (let i = 0; i < 20; i++) expect(await redis.command('get', ['GET', `k${i}`])).toBe(String(i));
  const script = "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCR', KEYS[2])";
  expect(await redis.command('eval', ['EVAL', script, '2', 'p:{tag}:a', 'p:{tag}:b', 'x'])).toBe(1);
  const bytes = Buffer.from([0, 200, 13, 10]);
  await redis.command('set', ['SET', 'bin', bytes]);
  expect(await redis.command('get', ['GET', 'bin'], true)).toEqual(bytes);
  const received: string[] = [];
  await redis.subscribe('notices', (m) => received.push(m.toString()));
  await redis.publish('notices', 'hello');
  await waitFor(() => received.length === 1, 'message received');
}

describe('fleet redis client on other deployments', () => {
  it('routes every key of a Redis Cluster and keeps a hash tag on one node', async () => {
    const cluster = await startPrivateCluster(tempDir('fs-cluster-'));
    await exercise(connect(cluster.url, 'cluster'));
  }, 60_000);

  it('joins a cluster that comes up after the sidecar (a cluster client alone would give up)', async () => {
    const port = await freePort();
    const redis = connect(`redis://127.0.0.1:${port}`, 'cluster');
    await new Promise((r) => setTimeout(r, 500));
    expect(redis.up()).toBe(false);
    await startPrivateCluster(tempDir('fs-cluster-'), port);
    await exercise(redis);
  }, 60_000);

  it('finds the master through a Sentinel', async () => {
    const setup = await startPrivateSentinel(tempDir('fs-sentinel-'));
    await exercise(connect(setup.url, 'sentinel', 'fsmaster'));
  }, 60_000);

  it('routes by the first key: a script by its first KEYS entry, PUBLISH anywhere', () => {
    expect(firstKey(['GET', 'a'])).toBe('a');
    expect(firstKey(['EVAL', 's', '2', 'x', 'y', 'arg'])).toBe('x');
    expect(firstKey(['EVAL', 's', '0', 'arg'])).toBeUndefined();
    expect(firstKey(['PUBLISH', 'ch', 'm'])).toBeUndefined();
    expect(firstKey(['ping'])).toBeUndefined();
  });
});
