/**
 * Fleet-wide read-your-writes and shared endpoint runs (issue 16 items 4 and 5): two in-process sidecars on one
 * Redis prefix in front of the fake upstream. A write through A is seen through B right after (B's cached flag
 * list, and B's definitions after its re-poll); a run computed through A serves B for a key upstream granted, a
 * key without a grant still runs upstream; a write to the endpoint retires the shared result; garbage in Redis is
 * ignored; with Redis down writes succeed and each sidecar keeps its own caches, dropped once Redis is back.
 */
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fleetKeys } from '../../src/fleet/keys.js';
import { planRun } from '../../src/http/routes/endpoint-run-plan.js';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { bearer, exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { redisCall, runRedisPort, startPrivateRedis, testPrefix } from '../support/redis.js';
import { sealAs } from '../support/seal.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

const token = 'phc_fleetcachesone';
let upstream: FakeUpstream;
const sidecars: TestSidecar[] = [];

beforeEach(async () => {
  upstream = await startFakeUpstream({
    projects: { 1: { token, definitions: exampleDefinitions() } },
    keys: [upstreamKey],
    personalKeys: {
      phx_writer: { scopes: ['feature_flag:write', 'endpoint:write'] },
      phx_reader: { scopes: ['feature_flag:read', 'endpoint:read'] },
      phx_reader_two: { scopes: ['endpoint:read'] },
    },
  });
  upstream.endpointsApi.seed(1, { name: 'daily', query: { kind: 'HogQLQuery', query: 'SELECT 1' } });
});
afterEach(async () => {
  await Promise.all(sidecars.splice(0).map((s) => s.stop()));
  await upstream.close();
});

/** Settings of a test fleet. */
interface FleetOptions {
  /** Redis port (default: the run's Redis). */
  readonly port?: number;
  readonly redisTimeout?: string;
  /** Read-through TTL (default 10 s). */
  readonly cacheTtl?: string;
}

/** Start a sidecar of the fleet with `prefix` (polling every 30 s: only a re-poll shows a write soon). */
async function start(prefix: string, options: FleetOptions): Promise<TestSidecar> {
  const sidecar = await startTestSidecar({
    FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
    FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
    FLAG_SIDECAR_PROJECTS: `1:${token}`,
    FLAG_SIDECAR_POLL_INTERVAL: '30s',
    FLAG_SIDECAR_UPSTREAM_TIMEOUT: '1s',
    FLAG_SIDECAR_REDIS_URL: `redis://127.0.0.1:${options.port ?? runRedisPort}`,
    FLAG_SIDECAR_REDIS_PREFIX: prefix,
    FLAG_SIDECAR_REDIS_TIMEOUT: options.redisTimeout ?? '1s',
    ...(options.cacheTtl ? { FLAG_SIDECAR_CACHE_TTL: options.cacheTtl } : {}),
  });
  sidecars.push(sidecar);
  await sidecar.poller?.pollNow(1);
  await waitFor(() => sidecar.store.ready(), 'snapshot');
  return sidecar;
}

/** Start `n` sidecars and wait until each listens on the invalidation channel. */
async function fleet(n: number, prefix: string, options: FleetOptions = {}): Promise<TestSidecar[]> {
  const port = options.port ?? runRedisPort;
  const started: TestSidecar[] = [];
  for (let i = 0; i < n; i += 1) started.push(await start(prefix, options));
  const channel = fleetKeys(prefix, new URL(upstream.url)).invalidationChannel;
  await waitFor(async () => (await subscribers(port, channel)) >= n, 'every sidecar subscribed');
  return started;
}

/** Subscribers of `channel` (PUBSUB NUMSUB). */
async function subscribers(port: number, channel: string): Promise<number> {
  const reply = await redisCall(port, 'PUBSUB', 'NUMSUB', channel);
  return Number(/:(\d+)\r\n$/.exec(reply)?.[1] ?? 0);
}

async function call(sidecar: TestSidecar, path: string, key: string, init: { method?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = bearer(key);
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${sidecar.apiUrl}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, cache: response.headers.get('x-flag-sidecar-cache') };
}

const flags = '/api/projects/1/feature_flags';
const runPath = '/api/projects/1/endpoints/daily/run';
const run = (sidecar: TestSidecar, key: string, body: unknown = {}) => call(sidecar, runPath, key, { body });
const upstreamRuns = (): number => upstream.endpointsApi.runCalls().length;
/** Whether flag 4 is active in the list as `sidecar` serves it. */
const listedActive = async (sidecar: TestSidecar): Promise<boolean | undefined> =>
  ((JSON.parse((await call(sidecar, `${flags}/`, 'phx_writer')).text) as { results: Array<{ id: number; active: boolean }> }).results.find((f) => f.id === 4))?.active;
const metric = async (sidecar: TestSidecar, pattern: RegExp): Promise<number> =>
  Number(pattern.exec(await (await fetch(`${sidecar.opsUrl}/metrics`)).text())?.[1] ?? 0);

describe('fleet-wide read-your-writes', () => {
  it('a flag write through A is seen through B: its cached list at once, its definitions after its re-poll', async () => {
    const [a, b] = (await fleet(2, testPrefix())) as [TestSidecar, TestSidecar];
    expect(await listedActive(b)).toBe(true);
    expect((await call(b, `${flags}/`, 'phx_writer')).cache).toBe('hit');
    const before = upstream.requests.filter((r) => r.url.includes('local_evaluation')).length;
    // Upstream shows the write in local_evaluation late: A waits for it, and tells B only then.
    upstream.flagApi.setDefinitionsLag(300);
    const patched = await call(a, `${flags}/4/`, 'phx_writer', { method: 'PATCH', body: { active: false } });
    expect([patched.status, patched.headers.get('x-flag-sidecar-synced')]).toEqual([200, 'true']);
    await waitFor(async () => (await listedActive(b)) === false, "B's flag list showing the write", 3000);
    const evaluated = (): unknown => b.store.get(1)?.cohorts?.definitions.flags.find((f) => f.id === 4)?.active;
    await waitFor(() => evaluated() === false, "B's definitions showing the write", 3000);
    expect(upstream.requests.filter((r) => r.url.includes('local_evaluation')).length).toBeGreaterThan(before);
    expect(await metric(b, /flag_sidecar_fleet_invalidations_total\{direction="received"\} (\d+)/)).toBe(1);
    // A does not apply its own message twice.
    expect(await metric(a, /flag_sidecar_fleet_invalidations_total\{direction="received"\} (\d+)/)).toBe(0);
  });

  it('ignores invalid messages and messages about projects it does not serve', async () => {
    const prefix = testPrefix();
    const [b] = (await fleet(1, prefix)) as [TestSidecar];
    const channel = fleetKeys(prefix, new URL(upstream.url)).invalidationChannel;
    expect(await listedActive(b)).toBe(true);
    const garbage = ['not json', '[]', '{"v":1,"project":1,"resource":"everything","origin":"x"}', '{"v":1,"project":999,"resource":"flags","origin":"x"}', 'x'.repeat(5000)];
    for (const message of garbage) await redisCall(runRedisPort, 'PUBLISH', channel, message);
    await waitFor(async () => (await metric(b, /flag_sidecar_fleet_invalidations_total\{direction="ignored"\} (\d+)/)) === garbage.length, 'every message ignored');
    expect((await call(b, `${flags}/`, 'phx_writer')).cache).toBe('hit');
    // A valid one from another instance is applied.
    await redisCall(runRedisPort, 'PUBLISH', channel, JSON.stringify({ v: 1, project: 1, resource: 'reads', origin: 'another/1/00000000' }));
    await waitFor(async () => (await call(b, `${flags}/`, 'phx_writer')).cache === 'miss', 'the valid message applied');
  });
});

describe('shared endpoint runs', () => {
  it('a run through A serves B for a granted key; a key without a grant runs upstream; a write retires the result', async () => {
    const [a, b] = (await fleet(2, testPrefix())) as [TestSidecar, TestSidecar];
    const first = await run(a, 'phx_reader', { variables: { n: 1 } });
    expect([first.status, first.cache, upstreamRuns()]).toEqual([200, 'miss', 1]);
    // B: the key's grant and A's result come from Redis; no upstream run.
    let seen = '';
    await waitFor(async () => {
      const fromRedis = await run(b, 'phx_reader', { variables: { n: 1 } });
      seen = `${fromRedis.status} ${fromRedis.cache} ${fromRedis.text.slice(0, 120)}`;
      return fromRedis.text === first.text;
    }, () => `B serving the shared run (last: ${seen})`);
    expect(upstreamRuns()).toBe(1);
    const fromB = await run(b, 'phx_reader', { variables: { n: 1 } });
    expect([fromB.status, fromB.headers.get('x-flag-sidecar-source'), fromB.text]).toEqual([200, 'cache', first.text]);
    // A key upstream never ran it for goes upstream (and is granted from then on).
    const other = await run(b, 'phx_reader_two', { variables: { n: 1 } });
    expect([other.status, other.cache, upstreamRuns()]).toEqual([200, 'miss', 2]);
    // Another run shared before the write, never run on B.
    expect((await run(a, 'phx_reader', { variables: { n: 2 } })).cache).toBe('miss');
    expect(upstreamRuns()).toBe(3);
    const patched = await call(a, '/api/projects/1/endpoints/daily', 'phx_writer', { method: 'PATCH', body: { description: 'changed' } });
    expect(patched.status).toBe(200);
    // B's own copy is dropped by A's message, and the shared results are retired: both run upstream again.
    await waitFor(async () => (await run(b, 'phx_reader', { variables: { n: 1 } })).cache === 'miss', "B's copy dropped");
    expect(upstreamRuns()).toBe(4);
    const again = await run(b, 'phx_reader', { variables: { n: 2 } });
    expect([again.status, again.cache, upstreamRuns()]).toEqual([200, 'miss', 5]);
  });

  it('ignores garbage stored in Redis for a run and a grant', async () => {
    const prefix = testPrefix();
    const [b] = (await fleet(1, prefix)) as [TestSidecar];
    const keys = fleetKeys(prefix, new URL(upstream.url));
    const sha = (text: string): string => createHash('sha256').update(text).digest('hex');
    const runKey = (n: number): string => {
      const plan = planRun('daily', { variables: { n } }, undefined);
      if (plan.kind !== 'cached') throw new Error('a cached plan expected');
      return keys.endpointRun(1, sha(`1\u0000${plan.key}`));
    };
    const header = (fields: Record<string, unknown>) =>
      JSON.stringify({ v: 1, gen: '', status: 200, type: 'application/json', fetched: Date.now(), expires: Date.now() + 60_000, ...fields });
    const valid = `${header({})}\n{"results":"forged"}`;
    // A key without a grant anywhere: a grant that is not a number is no grant, and a stored result is not served.
    await redisCall(runRedisPort, 'SET', keys.endpointGrant(1, sha(`${sha('phx_reader_two')}:personal\u00001\u0000daily`)), 'garbage', 'PX', '60000');
    const sealedRun = (n: number, value: string): string => sealAs('endpoint_run', runKey(n), value);
    await redisCall(runRedisPort, 'SET', runKey(1), sealedRun(1, valid), 'PX', '60000');
    const ungranted = await run(b, 'phx_reader_two', { variables: { n: 1 } });
    expect([ungranted.status, ungranted.cache, upstreamRuns()]).toEqual([200, 'miss', 1]);
    expect(ungranted.text).not.toContain('forged');
    // A granted key: every malformed entry is refused (sealed or not) and the run goes upstream.
    const forged = [
      'garbage',
      `${header({ status: 500 })}\n{"results":"forged"}`,
      `${header({ type: 'text/html\r\nx-evil: 1' })}\n{"results":"forged"}`,
      `${header({})}\nnot json`,
      `${header({ expires: Date.now() + 48 * 3_600_000 })}\n{"results":"forged"}`,
      `${header({ gen: 'retired' })}\n{"results":"forged"}`,
    ];
    for (const [i, value] of forged.entries()) {
      await redisCall(runRedisPort, 'SET', runKey(10 + i), sealedRun(10 + i, value), 'PX', '60000');
      const answer = await run(b, 'phx_reader_two', { variables: { n: 10 + i } });
      expect([answer.status, answer.cache]).toEqual([200, 'miss']);
      expect(answer.text).not.toContain('forged');
      expect(upstreamRuns()).toBe(2 + i);
    }
    expect(await metric(b, /flag_sidecar_fleet_shared_cache_total\{cache="endpoint_run",result="invalid"\} (\d+)/)).toBe(5);
    // The same entry, well formed but unsealed (an older version, or a writer without the fleet's secret): refused.
    await redisCall(runRedisPort, 'SET', runKey(20), valid, 'PX', '60000');
    expect((await run(b, 'phx_reader_two', { variables: { n: 20 } })).text).not.toContain('forged');
    expect(await metric(b, /flag_sidecar_unverifiable_state_total\{kind="endpoint_run"\} (\d+)/)).toBe(1);
    // Sealed with the fleet's secret: served (only a sidecar of the fleet could have written it).
    await redisCall(runRedisPort, 'SET', runKey(21), sealedRun(21, valid), 'PX', '60000');
    expect((await run(b, 'phx_reader_two', { variables: { n: 21 } })).text).toBe('{"results":"forged"}');
  });
});

describe('with Redis down', () => {
  it('writes succeed, each sidecar keeps its own caches, and they are dropped when Redis is back', async () => {
    const redis = await startPrivateRedis();
    const [a, b] = (await fleet(2, testPrefix(), { port: redis.port, redisTimeout: '200ms', cacheTtl: '60s' })) as [TestSidecar, TestSidecar];
    expect(await listedActive(b)).toBe(true);
    await run(a, 'phx_reader');
    // A hung Redis holds a write about the Redis timeout (200 ms here), never fails it.
    redis.pause();
    const held = Date.now();
    expect((await call(a, '/api/projects/1/endpoints/daily', 'phx_writer', { method: 'PATCH', body: { description: 'x' } })).status).toBe(200);
    expect(Date.now() - held).toBeLessThan(1500);
    redis.resume();
    await redis.kill();
    await waitFor(async () => (await (await fetch(`${a.opsUrl}/metrics`)).text()).includes('flag_sidecar_redis_up 0'), 'A sees Redis down');
    const started = Date.now();
    const patched = await call(a, `${flags}/4/`, 'phx_writer', { method: 'PATCH', body: { active: false } });
    expect(patched.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2000);
    // B is told nothing: its cached list stays until its own TTL, as without fleet mode.
    expect((await call(b, `${flags}/`, 'phx_writer')).cache).toBe('hit');
    // Runs are per pod: B's key has no grant there, and B runs upstream itself.
    expect((await run(b, 'phx_reader')).cache).toBe('miss');
    expect(upstreamRuns()).toBe(2);
    await redis.restart();
    // Back on Redis, B cannot know what it missed: its cached reads are dropped.
    await waitFor(async () => (await call(b, `${flags}/`, 'phx_writer')).cache === 'miss', "B's caches dropped on reconnection", 15_000);
    expect(await listedActive(b)).toBe(false);
  });

  it('a sidecar started while Redis is down listens once Redis is up', async () => {
    const redis = await startPrivateRedis();
    await redis.kill();
    const prefix = testPrefix();
    const b = await start(prefix, { port: redis.port, cacheTtl: '60s' });
    expect(await listedActive(b)).toBe(true);
    await redis.restart();
    const channel = fleetKeys(prefix, new URL(upstream.url)).invalidationChannel;
    await waitFor(async () => (await subscribers(redis.port, channel)) === 1, 'B subscribed', 15_000);
    // (Its reconnection dropped its caches: the list is read and cached again.)
    await waitFor(async () => (await call(b, `${flags}/`, 'phx_writer')).cache === 'hit', 'the list cached again');
    await redisCall(redis.port, 'PUBLISH', channel, JSON.stringify({ v: 1, project: 1, resource: 'reads', origin: 'another/1/00000000' }));
    await waitFor(async () => (await call(b, `${flags}/`, 'phx_writer')).cache === 'miss', 'the message applied');
  });
});
