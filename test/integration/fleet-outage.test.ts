/**
 * Fleet mode when Redis goes away (issue 38 item 1): a sidecar that last saw a fleet of N (counted by the leader,
 * here 2 sidecars and stand-in subscribers) polls upstream directly only every N × 60 s / FLAG_SIDECAR_FLEET_OUTAGE_BUDGET,
 * the first time anywhere in that interval (random fixed at 0.5 here: half of it), while a caller's read-your-writes
 * poll still goes at once; behind a relay it keeps its normal interval. /status and flag_sidecar_poll_route say which.
 */
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { fleetKeys } from '../../src/fleet/keys.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { pollingEnv, startProjectOneUpstream, status } from '../support/polling-env.js';
import { startPrivateRedis, type PrivateRedis } from '../support/redis.js';
import { subscribeMany } from '../support/redis-subscribers.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

const running: Array<{ stop(): Promise<void> }> = [];
let upstream: FakeUpstream | null = null;
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop()));
  await upstream?.close();
  upstream = null;
});

type FleetView = { role: string; route: string; fleet_size: number | null; direct_interval_seconds: number | null };
const fleetView = async (s: TestSidecar): Promise<FleetView> => (await status(s)).projects[0]?.fleet as FleetView;

/** Two sidecars on a private Redis whose leader counts a fleet of 30 (28 stand-ins), polling `upstreamUrl`. */
async function fleetOfThirty(upstreamUrl: string, env: Record<string, string>): Promise<{ redis: PrivateRedis; sidecars: TestSidecar[] }> {
  const redis = await startPrivateRedis();
  const channel = fleetKeys('outage', new URL(upstreamUrl)).snapshotChannel;
  const standIns = await subscribeMany(redis.port, channel, 28);
  onTestFinished(() => standIns.close());
  const sidecars: TestSidecar[] = [];
  for (let i = 0; i < 2; i += 1) {
    const s = await startTestSidecar({
      ...env,
      FLAG_SIDECAR_UPSTREAM_URL: upstreamUrl,
      FLAG_SIDECAR_POLL_INTERVAL: '200ms',
      FLAG_SIDECAR_REDIS_URL: redis.url,
      FLAG_SIDECAR_REDIS_PREFIX: 'outage',
      FLAG_SIDECAR_FLEET_LEASE: '1s',
      FLAG_SIDECAR_FLEET_OUTAGE_BUDGET: '60',
      FLAG_SIDECAR_LOG_LEVEL: 'warn',
    }, { random: () => 0.5 });
    running.push(s);
    sidecars.push(s);
  }
  await waitFor(async () => (await Promise.all(sidecars.map(fleetView))).every((v) => v.fleet_size === 30 && v.route === 'fleet'), 'the fleet of 30 seen by both', 10_000);
  await waitFor(() => sidecars.every((s) => s.store.ready()), 'both ready');
  return { redis, sidecars };
}

describe('fleet mode in a Redis outage', () => {
  it('direct polls stretched to the budget by the fleet size last seen; a read-your-writes poll goes at once', async () => {
    upstream = await startProjectOneUpstream();
    const { redis, sidecars } = await fleetOfThirty(upstream.url, pollingEnv(upstream));
    await redis.kill();
    await waitFor(async () => (await Promise.all(sidecars.map(fleetView))).every((v) => v.role === 'direct'), 'both direct', 10_000);
    const polls = upstream.polls().length;
    for (const s of sidecars) {
      // 30 sidecars × 60 s / 60 a minute: one poll each 30 s (the interval is 200 ms); the first 15 s in.
      expect(await fleetView(s)).toMatchObject({ route: 'direct_budgeted', fleet_size: 30, direct_interval_seconds: 30 });
      const metrics = await (await fetch(`${s.opsUrl}/metrics`)).text();
      expect(metrics).toContain('flag_sidecar_poll_route{project="1",route="direct_budgeted"} 1');
      expect(metrics).toContain('flag_sidecar_poll_route{project="1",route="fleet"} 0');
    }
    // Ten intervals of 200 ms: unbudgeted, about 20 polls.
    await new Promise((r) => setTimeout(r, 2000));
    expect(upstream.polls().length - polls).toBe(0);
    await sidecars[0]?.poller?.pollNow(1);
    expect(upstream.polls().length - polls).toBe(1);
  }, 30_000);

  it('behind a relay, direct polls keep the normal interval (the relay absorbs them)', async () => {
    upstream = await startProjectOneUpstream();
    const relay = await startTestSidecar({ ...pollingEnv(upstream), FLAG_SIDECAR_LOG_LEVEL: 'warn' });
    running.push(relay);
    await waitFor(() => relay.store.ready(), 'relay ready');
    const { redis, sidecars } = await fleetOfThirty(relay.apiUrl, pollingEnv(upstream));
    await redis.kill();
    await waitFor(async () => (await Promise.all(sidecars.map(fleetView))).every((v) => v.role === 'direct'), 'both direct', 10_000);
    for (const s of sidecars) expect(await fleetView(s)).toMatchObject({ route: 'relay', fleet_size: 30, direct_interval_seconds: null });
    const polled = (s: TestSidecar): number | null => s.poller?.status(1)?.lastPollAt ?? null;
    const before = sidecars.map(polled);
    await waitFor(() => sidecars.every((s, i) => (polled(s) ?? 0) > (before[i] ?? 0)), 'each sidecar polls the relay itself', 5000);
  }, 30_000);
});
