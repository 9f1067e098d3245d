/**
 * Fleet mode in-process: sidecars sharing the run's Redis (a random prefix per test) elect one leader per
 * project, which alone polls upstream and publishes; followers load its snapshot (at start, on notice, on the
 * timer), serve it like the leader, ask it to poll after a write, and mark the plain variant wanted. Garbage
 * in Redis is refused and counted; a leader whose lease was taken cannot overwrite the new leader's snapshot.
 */
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { bearer, exampleDefinitions, get, upstreamKey } from '../support/fixtures.js';
import { call, personalKeys } from '../support/flag-api-env.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { pollingEnv, projectOneToken as token, snapshotPath, startProjectOneUpstream, status, withFlag } from '../support/polling-env.js';
import { fleetKeys } from '../../src/fleet/keys.js';
import { createBodyDigest, encodeHead, headOf } from '../../src/fleet/snapshot-head.js';
import { createVariant, emptyProject, withChanges } from '../../src/store/snapshot.js';
import { parseDefinitions } from '../../src/upstream/payload.js';
import { sealAs } from '../support/seal.js';
import { redisCall, runRedisPort, runRedisUrl, startPrivateRedis, testPrefix } from '../support/redis.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

const running: TestSidecar[] = [];
let upstream: FakeUpstream | null = null;
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop()));
  await upstream?.close();
  upstream = null;
});

async function fleetOf(count: number, prefix: string, extra: Record<string, string> = {}): Promise<TestSidecar[]> {
  upstream ??= await startProjectOneUpstream(personalKeys);
  const env = {
    ...pollingEnv(upstream),
    FLAG_SIDECAR_POLL_INTERVAL: '200ms',
    FLAG_SIDECAR_REDIS_URL: runRedisUrl,
    FLAG_SIDECAR_REDIS_PREFIX: prefix,
    FLAG_SIDECAR_FLEET_LEASE: '1s',
    FLAG_SIDECAR_LOG_LEVEL: 'info',
    ...extra,
  };
  const started: TestSidecar[] = [];
  for (let i = 0; i < count; i += 1) {
    const s = await startTestSidecar(env);
    running.push(s);
    started.push(s);
  }
  return started;
}

type FleetView = { role: string; leader: string | null; generation: number | null };
const fleetOfProject = async (s: TestSidecar): Promise<FleetView> => (await status(s)).projects[0]?.fleet as FleetView;
const roles = async (sidecars: TestSidecar[]): Promise<string[]> => Promise.all(sidecars.map(async (s) => (await fleetOfProject(s)).role));
const read = (s: TestSidecar) => get(s.apiUrl + snapshotPath, bearer(upstreamKey));

describe('fleet polling (in-process, shared redis)', () => {
  it('elects one leader that alone polls upstream; followers serve its snapshot with the same bytes and ETag', async () => {
    const sidecars = await fleetOf(3, testPrefix());
    await waitFor(async () => (await roles(sidecars)).sort().join() === 'follower,follower,leader', 'one leader, two followers');
    await waitFor(() => sidecars.every((s) => s.store.ready()), 'every sidecar ready');
    const views = await Promise.all(sidecars.map(fleetOfProject));
    const leader = views.find((v) => v.role === 'leader') as FleetView;
    expect(new Set(views.map((v) => v.leader)).size).toBe(1);
    expect(new Set(views.map((v) => v.generation))).toEqual(new Set([leader.generation]));
    // Over ~10 intervals, about 10 polls in all (one poller), not 30.
    const before = upstream?.polls().length ?? 0;
    await new Promise((r) => setTimeout(r, 2000));
    const polls = (upstream?.polls().length ?? 0) - before;
    expect(polls).toBeGreaterThanOrEqual(5);
    expect(polls).toBeLessThanOrEqual(14);
    for (const s of sidecars) {
      const res = await read(s);
      expect(res.status).toBe(200);
      expect(res.text).toBe(JSON.stringify(exampleDefinitions()));
      expect(res.headers.get('etag')).toBe(upstream?.etag(1));
      expect(res.headers.get('x-flag-sidecar-source')).toBe('upstream');
      // 304s at the leader refresh fetched-at in Redis: Age stays true on followers.
      expect(Number(res.headers.get('age'))).toBeLessThanOrEqual(1);
    }
    const metrics = await (await fetch(`${sidecars[0]?.opsUrl}/metrics`)).text();
    expect(metrics).toMatch(/flag_sidecar_fleet_role\{project="1",role="(leader|follower)"\} 1/);
  });

  it('a new leader polls when the fleet\'s poll is due, not one interval after its own last tick', async () => {
    const prefix = testPrefix();
    upstream ??= await startProjectOneUpstream(personalKeys);
    const keys = fleetKeys(prefix, new URL(upstream.url));
    // A leader killed a moment ago, before it ever published: its lease runs out in 500 ms.
    await redisCall(runRedisPort, 'SET', keys.lease(1), 'ghost/1/deadbeef|5', 'PX', '500');
    const started = Date.now();
    await fleetOf(1, prefix, { FLAG_SIDECAR_POLL_INTERVAL: '6s' });
    await waitFor(() => (upstream?.polls().length ?? 0) > 0, 'the first poll', 10_000);
    // The fleet's last poll is long overdue: the sidecar polls as soon as it holds the lease (not 6 s later).
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('carries an upstream change to every follower, and a released lease to a follower at once', async () => {
    // A 6 s lease: a handover by expiry would take at least 4 s; by release it takes a moment.
    const sidecars = await fleetOf(2, testPrefix(), { FLAG_SIDECAR_FLEET_LEASE: '6s' });
    await waitFor(async () => (await roles(sidecars)).sort().join() === 'follower,leader', 'a leader and a follower');
    upstream?.setDefinitions(1, withFlag('fleet-wide'));
    await waitFor(async () => {
      const bodies = await Promise.all(sidecars.map(async (s) => (await read(s)).text));
      return bodies.every((b) => b.includes('fleet-wide'));
    }, 'change on every sidecar');
    const leaderIndex = (await roles(sidecars)).indexOf('leader');
    const leader = sidecars[leaderIndex] as TestSidecar;
    const follower = sidecars[1 - leaderIndex] as TestSidecar;
    running.splice(running.indexOf(leader), 1);
    const stoppedAt = Date.now();
    await leader.stop();
    await waitFor(async () => (await fleetOfProject(follower)).role === 'leader', 'follower takes over', 5000);
    // Released, not expired.
    expect(Date.now() - stoppedAt).toBeLessThan(2500);
  });

  it('read-your-writes through a follower: it asks the leader to poll, and the reply comes once its snapshot shows the write', async () => {
    // A long interval: only the follower's request can make the leader poll in time.
    const sidecars = await fleetOf(2, testPrefix(), { FLAG_SIDECAR_POLL_INTERVAL: '30s' });
    await waitFor(async () => (await roles(sidecars)).sort().join() === 'follower,leader', 'a leader and a follower');
    const follower = sidecars[(await roles(sidecars)).indexOf('follower')] as TestSidecar;
    await waitFor(() => follower.store.ready(), 'follower ready');
    upstream?.flagApi.setDefinitionsLag(150);
    const before = upstream?.polls().length ?? 0;
    const created = await call(`${follower.apiUrl}/api/projects/1/feature_flags/`, 'phx_writer', {
      method: 'POST',
      body: JSON.stringify({ key: 'written-through-follower', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } }),
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('x-flag-sidecar-synced')).toBe('true');
    expect((await read(follower)).text).toContain('written-through-follower');
    expect((upstream?.polls().length ?? 0) - before).toBeGreaterThanOrEqual(1);
  });

  it('a follower asked for the variant without cohorts has the leader poll it', async () => {
    const sidecars = await fleetOf(2, testPrefix());
    await waitFor(async () => (await roles(sidecars)).sort().join() === 'follower,leader', 'a leader and a follower');
    const follower = sidecars[(await roles(sidecars)).indexOf('follower')] as TestSidecar;
    await waitFor(() => follower.store.ready(), 'follower ready');
    const res = await get(`${follower.apiUrl}/api/feature_flag/local_evaluation?token=${token}`, bearer(upstreamKey));
    expect(res.status).toBe(200);
    await waitFor(() => follower.store.get(1)?.plain != null, 'plain variant loaded from the fleet');
    expect(upstream?.polls().some((r) => r.url === '/api/projects/1/feature_flags/local_evaluation/')).toBe(true);
  });

  it('a follower keeps remote config warm: it refreshes after a snapshot the leader took in that changed the flag', async () => {
    const sidecars = await fleetOf(2, testPrefix());
    upstream?.flagApi.setRemoteConfig(1, 3, { payload: '{"banner": "staff"}' });
    await waitFor(async () => (await roles(sidecars)).sort().join() === 'follower,leader', 'a leader and a follower');
    const follower = sidecars[(await roles(sidecars)).indexOf('follower')] as TestSidecar;
    await waitFor(() => follower.store.ready(), 'follower ready');
    await waitFor(() => follower.store.get(1)?.cohorts?.etag === upstream?.etag(1), 'follower holds the remote config flag');
    const asked = () => upstream?.requests.filter((r) => r.url.includes('/remote_config')).length ?? 0;
    const path = `${follower.apiUrl}/api/projects/1/feature_flags/3/remote_config/`;
    const first = await call(path, upstreamKey);
    expect(first.status).toBe(200);
    await waitFor(() => asked() === 2, 'the caller’s read through and the warm fetch');
    await new Promise((r) => setTimeout(r, 1000)); // about five polls that change nothing
    expect(asked()).toBe(2);
    upstream?.flagApi.setRemoteConfig(1, 3, { payload: '{"banner": "everyone"}' });
    await waitFor(() => asked() === 3, 'the refresh after the changed snapshot was taken in', 5000);
    await waitFor(async () => (await call(path, upstreamKey)).text === JSON.stringify('{"banner": "everyone"}'), 'the new payload');
  });

  it('followers serve like the leader through a quota period: its 402 body, then the new served ETag', async () => {
    const sidecars = await fleetOf(2, testPrefix());
    await waitFor(async () => (await roles(sidecars)).sort().join() === 'follower,leader', 'a leader and a follower');
    await waitFor(() => sidecars.every((s) => s.store.ready()), 'every sidecar ready');
    const quota = '{"type":"quota_limited","detail":"over","code":"payment_required"}';
    upstream?.setMode({ kind: 'status', status: 402, body: quota });
    await waitFor(async () => (await Promise.all(sidecars.map(async (s) => (await read(s)).status))).every((c) => c === 402), '402 everywhere');
    expect((await read(sidecars[1] as TestSidecar)).text).toBe(quota);
    upstream?.setMode({ kind: 'normal' });
    await waitFor(async () => (await Promise.all(sidecars.map(async (s) => (await read(s)).status))).every((c) => c === 200), '200 everywhere');
    const etags = await Promise.all(sidecars.map(async (s) => (await read(s)).headers.get('etag')));
    await waitFor(async () => {
      const now = await Promise.all(sidecars.map(async (s) => (await read(s)).headers.get('etag')));
      return now[0] === now[1];
    }, 'the same served ETag everywhere');
    expect(etags[0]).not.toBe(upstream?.etag(1));
  });

  it('a sidecar started while upstream is down is ready at once from the fleet', async () => {
    const prefix = testPrefix();
    const [leader] = await fleetOf(1, prefix);
    await waitFor(() => leader?.store.ready() ?? false, 'leader ready');
    await waitFor(async () => (await redisCall(runRedisPort, 'KEYS', `${prefix}:*snapshot-head`)).includes('snapshot-head'), 'head published');
    await upstream?.goDown();
    const [late] = await fleetOf(1, prefix);
    await waitFor(() => late?.store.ready() ?? false, 'ready from redis', 3000);
    expect((await fleetOfProject(late as TestSidecar)).role).toBe('follower');
    const res = await read(late as TestSidecar);
    expect(res.status).toBe(200);
    expect(res.text).toBe(JSON.stringify(exampleDefinitions()));
  });

  it('refuses and counts garbage in redis, and keeps serving', async () => {
    const prefix = testPrefix();
    const [leader] = await fleetOf(1, prefix);
    await waitFor(async () => (await fleetOfProject(leader as TestSidecar)).role === 'leader', 'leader');
    await waitFor(async () => (await redisCall(runRedisPort, 'KEYS', `${prefix}:*snapshot-head`)).includes('snapshot-head'), 'head published');
    const headKey = /\$\d+\r\n(\S+snapshot-head)\r\n/.exec(await redisCall(runRedisPort, 'KEYS', `${prefix}:*snapshot-head`))?.[1] as string;
    // Another instance "takes" the lease and writes garbage: the old leader is fenced out and follows.
    const leaseKey = headKey.replace(/snapshot-head$/, 'lease');
    await redisCall(runRedisPort, 'SET', leaseKey, 'intruder/1/00000000|999', 'PX', '60000');
    await redisCall(runRedisPort, 'SET', headKey, '{"v":1,"generation":"x"}', 'PX', '60000');
    await waitFor(async () => (await fleetOfProject(leader as TestSidecar)).role === 'follower', 'old leader fenced out');
    await waitFor(async () => /flag_sidecar_fleet_snapshots_total\{project="1",source="rejected"\} [1-9]/.test(await (await fetch(`${leader?.opsUrl}/metrics`)).text()), 'refusal counted');
    expect((await redisCall(runRedisPort, 'GET', headKey))).toContain('"generation":"x"');
    const res = await read(leader as TestSidecar);
    expect(res.status).toBe(200);
    expect(res.text).toBe(JSON.stringify(exampleDefinitions()));
  });

  it('refuses a sealed body that is not Brotli (or not the announced one), counts it and polls upstream itself', async () => {
    const prefix = testPrefix();
    upstream ??= await startProjectOneUpstream(personalKeys);
    const keys = fleetKeys(prefix, new URL(upstream.url));
    // A leader that never renews holds the lease; its head announces the example body, its body key holds raw JSON.
    const body = Buffer.from(JSON.stringify(exampleDefinitions()));
    const parsed = parseDefinitions(body);
    if (!parsed.ok) throw new Error(parsed.error);
    const variant = createVariant({ body, definitions: parsed.value, upstreamEtag: '"raw"', fetchedAt: Date.now(), source: 'upstream' });
    const project = withChanges(emptyProject(1, token), { cohorts: variant });
    const poll = { outcome: 'updated' as const, error: null, failures: 0, at: Date.now(), lastSuccessAt: Date.now() };
    const head = headOf(project, { poll, generation: 5, leader: 'ghost/1/deadbeef', fleetSize: 2, relay: false, stored: { cohorts: body.length + 73 } }, createBodyDigest());
    await redisCall(runRedisPort, 'SET', keys.lease(1), 'ghost/1/deadbeef|5', 'PX', '60000');
    await redisCall(runRedisPort, 'SET', keys.snapshot(1, 'cohorts'), sealAs('snapshot-body', keys.snapshot(1, 'cohorts'), body.toString()), 'PX', '60000');
    await redisCall(runRedisPort, 'SET', keys.snapshotHead(1), sealAs('snapshot-head', keys.snapshotHead(1), encodeHead(head)), 'PX', '60000');
    const [sidecar] = await fleetOf(1, prefix);
    const s = sidecar as TestSidecar;
    await waitFor(() => s.logs.some((l) => String(l.cause).includes('cohorts body is not valid Brotli')), 'the refusal logged');
    await waitFor(() => s.store.ready(), 'ready from its own poll');
    expect(await (await fetch(`${s.opsUrl}/metrics`)).text()).toMatch(/flag_sidecar_fleet_snapshots_total\{project="1",source="rejected"\} [1-9]/);
    expect((await fleetOfProject(s)).role).toBe('direct');
    expect(s.store.get(1)?.cohorts?.upstreamEtag).toBe(upstream.etag(1));
  });

  it('Redis flushed: the leader takes the lease again under a new generation and publishes anew', async () => {
    const prefix = testPrefix();
    const sidecars = await fleetOf(2, prefix);
    await waitFor(async () => (await roles(sidecars)).sort().join() === 'follower,leader', 'a leader and a follower');
    const before = (await fleetOfProject(sidecars[0] as TestSidecar)).generation as number;
    await redisCall(runRedisPort, 'EVAL', "for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) end return 0", '0', `${prefix}*`);
    await waitFor(async () => (await redisCall(runRedisPort, 'KEYS', `${prefix}:*snapshot:cohorts`)).includes('snapshot:cohorts'), 'snapshot published again', 5000);
    await waitFor(async () => {
      const views = await Promise.all(sidecars.map(fleetOfProject));
      return views.filter((v) => v.role === 'leader').length === 1 && views.every((v) => v.generation !== null && v.generation !== before);
    }, 'a new generation served everywhere', 5000);
    for (const s of sidecars) expect((await read(s)).status).toBe(200);
  });

  it('Redis hung: every sidecar polls directly within a few seconds and no read waits on Redis; resumed → one leader', async () => {
    const redis = await startPrivateRedis();
    const sidecars = await fleetOf(2, testPrefix(), { FLAG_SIDECAR_REDIS_URL: redis.url });
    await waitFor(async () => (await roles(sidecars)).sort().join() === 'follower,leader', 'a leader and a follower');
    await waitFor(() => sidecars.every((s) => s.store.ready()), 'every sidecar ready');
    redis.pause();
    onTestFinished(() => redis.resume());
    const pausedAt = Date.now();
    let slowest = 0;
    while (!(await roles(sidecars)).every((r) => r === 'direct')) {
      expect(Date.now() - pausedAt).toBeLessThan(8000);
      for (const s of sidecars) {
        const started = Date.now();
        const res = await read(s);
        expect(`${res.status} ${res.text}`).toMatch(/^200 /);
        slowest = Math.max(slowest, Date.now() - started);
      }
    }
    expect(slowest).toBeLessThan(200);
    const polls = upstream?.polls().length ?? 0;
    await waitFor(() => (upstream?.polls().length ?? 0) >= polls + 4, 'direct polls');
    redis.resume();
    await waitFor(async () => (await roles(sidecars)).sort().join() === 'follower,leader', 'fleet mode again', 15_000);
  }, 40_000);
});
