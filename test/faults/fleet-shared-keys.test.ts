/**
 * Shared key checks (fleet mode) against a hostile or failing Redis: records written into Redis by someone else
 * (garbage, oversized, another key's or project's, from the future) grant nothing and are counted; with Redis
 * killed or hung every key works as without fleet mode, and sharing resumes by itself when Redis is back.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { digestKey } from '../../src/auth/principal.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { bearer } from '../support/fixtures.js';
import { redisCall, runRedisPort, runRedisUrl, startPrivateRedis, testPrefix } from '../support/redis.js';
import {
  principalJson,
  projectOnePath,
  redisReady,
  redisUp,
  requestsWith,
  secretKeyOne,
  sharedCacheCount,
  sharedNames,
  startFleetSidecar,
  startSharedKeysUpstream,
} from '../support/shared-keys-env.js';
import { waitFor, type TestSidecar } from '../support/start-sidecar.js';

let upstream: FakeUpstream;
beforeEach(async () => {
  upstream = await startSharedKeysUpstream();
});
afterEach(async () => {
  await upstream.close();
});

const status = async (sidecar: TestSidecar, key: string): Promise<number> =>
  (await fetch(sidecar.apiUrl + projectOnePath, { headers: { ...bearer(key), connection: 'close' } })).status;

const iso = (ms: number): string => new Date(ms).toISOString();

/** A grant record as a sidecar shares it. */
const grantJson = (digest: string, projectId: number, at: number): string =>
  JSON.stringify({ type: 'grant', digest, vouched_at: iso(at), expires_at: iso(at + 300_000), grace_until: iso(at + 3_900_000), project_id: projectId });

describe('shared key checks, faults', () => {
  it('records planted in Redis (garbage, oversized, foreign, from the future) grant nothing, and are counted', async () => {
    const prefix = testPrefix();
    const now = Date.now();
    const stranger = digestKey('phx_someone_else');
    const planted: Array<[string, string, string]> = [
      ['phx_planted_garbage', 'not json at all', 'garbage'],
      ['phx_planted_oversized', principalJson(digestKey('phx_planted_oversized'), now, { label: 'x'.repeat(20_000) }), 'oversized'],
      ['phx_planted_foreign', principalJson(stranger, now), "another key's record"],
      ['phx_planted_future', principalJson(digestKey('phx_planted_future'), now + 3_600_000), 'vouched for in an hour'],
    ];
    for (const [key, value] of planted) {
      const names = sharedNames(upstream, prefix, key);
      await redisCall(runRedisPort, 'SET', names.key, value, 'PX', '600000');
      await redisCall(runRedisPort, 'SET', names.grant, grantJson(digestKey(key), 1, now), 'PX', '600000');
    }
    // A secret key with another project's grant, and one with another key's grant, under its own names.
    await redisCall(runRedisPort, 'SET', sharedNames(upstream, prefix, 'phs_plantedproject').grant, grantJson(digestKey('phs_plantedproject'), 2, now), 'PX', '600000');
    await redisCall(runRedisPort, 'SET', sharedNames(upstream, prefix, 'phs_plantedstranger').grant, grantJson(stranger, 1, now), 'PX', '600000');

    await upstream.goDown();
    const sidecar = await startFleetSidecar(upstream, runRedisUrl, prefix);
    await redisReady(sidecar);
    for (const [key] of planted) expect([key, await status(sidecar, key)]).toEqual([key, 503]);
    expect(await status(sidecar, 'phs_plantedproject')).toBe(503);
    expect(await status(sidecar, 'phs_plantedstranger')).toBe(503);
    expect(await sharedCacheCount(sidecar, 'principal', 'invalid')).toBe(planted.length);
    expect(await sharedCacheCount(sidecar, 'grant', 'invalid')).toBe(2);
    // Logged once, whatever the number of records.
    expect(sidecar.logs.filter((l) => String(l.msg).startsWith('ignoring an invalid shared key record')).length).toBeLessThanOrEqual(2);

    // Upstream back: such a key is asked upstream, which decides (here: nobody knows it).
    await upstream.comeBack();
    expect(await status(sidecar, 'phx_planted_foreign')).toBe(401);
  });

  it('with Redis killed every key works as without fleet mode, and sharing resumes when Redis is back', async () => {
    const redis = await startPrivateRedis();
    const prefix = testPrefix();
    const a = await startFleetSidecar(upstream, redis.url, prefix);
    const b = await startFleetSidecar(upstream, redis.url, prefix);
    await Promise.all([redisReady(a), redisReady(b)]);

    await redis.kill();
    await waitFor(async () => !(await redisUp(a)) && !(await redisUp(b)), 'redis down on both');
    for (const sidecar of [a, b]) {
      expect(await status(sidecar, 'phx_reader')).toBe(200);
      expect(await status(sidecar, secretKeyOne)).toBe(200);
      expect(await status(sidecar, 'phx_nobody_knows')).toBe(401);
    }
    // Each asked upstream on its own, as without fleet mode.
    expect(requestsWith(upstream, 'phx_reader')).toBe(4);
    expect(requestsWith(upstream, secretKeyOne)).toBe(2);
    expect(await sharedCacheCount(a, 'principal', 'error')).toBeGreaterThan(0);

    await redis.restart();
    await Promise.all([redisReady(a), redisReady(b)]);
    expect(await status(a, 'phx_after_outage')).toBe(200);
    await waitFor(async () => (await sharedCacheCount(a, 'grant', 'write')) > 0, 'the grant shared');
    expect(await status(b, 'phx_after_outage')).toBe(200);
    expect(requestsWith(upstream, 'phx_after_outage')).toBe(2);
  });

  it('with Redis hung, a key is verified upstream within the Redis timeout, not held up', async () => {
    const redis = await startPrivateRedis();
    const prefix = testPrefix();
    const a = await startFleetSidecar(upstream, redis.url, prefix, { FLAG_SIDECAR_REDIS_TIMEOUT: '200ms' });
    await redisReady(a);
    redis.pause();
    try {
      const started = Date.now();
      expect(await status(a, 'phx_slow_redis')).toBe(200);
      // Two Redis reads (the key, then its grant) of at most 200 ms each, plus upstream's answers.
      expect(Date.now() - started).toBeLessThan(2000);
      expect(requestsWith(upstream, 'phx_slow_redis')).toBe(2);
      expect(await sharedCacheCount(a, 'principal', 'error')).toBeGreaterThan(0);
    } finally {
      redis.resume();
    }
  });
});
