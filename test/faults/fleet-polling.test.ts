/**
 * Fleet mode with real sidecar processes (src/main.ts) on a private redis-server, against the fake upstream:
 * N sidecars poll upstream as one (one poll per interval, give or take lease handovers); an upstream change
 * reaches every sidecar within about an interval; kill -9 of the leader → polls resume within the lease;
 * Redis killed → every sidecar polls directly; Redis back → one poller again. A reader hitting every live
 * sidecar all along sees only 200s. Poll interval 200 ms and lease 1 s; counts are asserted with room for a
 * loaded 2-core machine. The processes run the built entry point (what the image runs, built from src/ for this
 * file; built-entry.ts): four starting at once under tsx held the 2-core machine for seconds.
 */
import { onTestFinished, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { builtEntry } from '../support/built-entry.js';
import { bearer, upstreamKey } from '../support/fixtures.js';
import { pollingEnv, snapshotPath, startProjectOneUpstream, withFlag } from '../support/polling-env.js';
import { startPrivateRedis, type PrivateRedis } from '../support/redis.js';
import { spawnSidecar, type SidecarProcess } from '../support/spawn-sidecar.js';
import { waitFor } from '../support/start-sidecar.js';

const entry = builtEntry();
const intervalMs = 200;
const leaseMs = 1000;

interface Member {
  readonly proc: SidecarProcess;
  readonly api: string;
  readonly ops: string;
  alive: boolean;
}

async function startFleet(count: number, upstream: FakeUpstream, redis: PrivateRedis, extra: Record<string, string> = {}): Promise<Member[]> {
  const env = {
    ...extra,
    ...pollingEnv(upstream),
    FLAG_SIDECAR_POLL_INTERVAL: `${intervalMs}ms`,
    FLAG_SIDECAR_FLEET_LEASE: `${leaseMs}ms`,
    FLAG_SIDECAR_REDIS_URL: redis.url,
    FLAG_SIDECAR_LOG_LEVEL: 'info', // spawnSidecar learns the URLs from the info-level "flag-sidecar listening" line
  };
  const procs = Array.from({ length: count }, () => spawnSidecar(env, { entry }));
  onTestFinished(() => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  });
  const members = await Promise.all(procs.map(async (proc) => ({ proc, ...(await proc.listening), alive: true })));
  for (const m of members) await waitFor(async () => (await fetch(`${m.ops}/readyz`)).status === 200, 'sidecar ready', 20_000);
  return members;
}

const roleOf = async (m: Member): Promise<string> => {
  const body = (await (await fetch(`${m.ops}/status`)).json()) as { projects: Array<{ fleet: { role: string } }> };
  return body.projects[0]?.fleet.role ?? 'none';
};
const roles = async (members: Member[]): Promise<string[]> => Promise.all(members.filter((m) => m.alive).map(roleOf));
const oneLeader = async (members: Member[]): Promise<boolean> => {
  const seen = await roles(members);
  return seen.filter((r) => r === 'leader').length === 1 && seen.filter((r) => r === 'follower').length === seen.length - 1;
};

/** Reads every live sidecar's snapshot path every ~25 ms until stopped; collects every status that is not 200. */
function startReader(members: Member[]) {
  const failures: string[] = [];
  let reads = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      await Promise.all(
        members
          .filter((m) => m.alive)
          .map(async (m) => {
            const res = await fetch(m.api + snapshotPath, { headers: bearer(upstreamKey) }).catch((error: Error) => ({ status: error.message, text: async () => '' }));
            await res.text();
            reads += 1;
            if (res.status !== 200) failures.push(`${m.api}: ${res.status}`);
          }),
      );
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  return {
    failures,
    reads: () => reads,
    async stop(): Promise<void> {
      running = false;
      await loop;
    },
  };
}

/** Upstream polls during `ms`. */
async function pollsDuring(upstream: FakeUpstream, ms: number): Promise<number> {
  const before = upstream.polls().length;
  await new Promise((r) => setTimeout(r, ms));
  return upstream.polls().length - before;
}

describe('fleet polling across processes', () => {
  it('four sidecars poll as one; a change reaches all within about an interval; kill -9 of the leader → polls resume within the lease', async () => {
    const upstream = await startProjectOneUpstream();
    onTestFinished(() => upstream.close());
    const redis = await startPrivateRedis();
    const members = await startFleet(4, upstream, redis);
    await waitFor(() => oneLeader(members), 'one leader, three followers', 10_000);
    const reader = startReader(members);

    // 2 s at a 200 ms interval: ~10 polls for the fleet (40 without fleet mode).
    const steady = await pollsDuring(upstream, 2000);
    expect(steady).toBeGreaterThanOrEqual(5);
    expect(steady).toBeLessThanOrEqual(16);

    const changedAt = Date.now();
    upstream.setDefinitions(1, withFlag('fleet-change'));
    await waitFor(async () => {
      const bodies = await Promise.all(members.map(async (m) => (await fetch(m.api + snapshotPath, { headers: bearer(upstreamKey) })).text()));
      return bodies.every((b) => b.includes('fleet-change'));
    }, 'the change on every sidecar', 5000);
    expect(Date.now() - changedAt).toBeLessThan(3 * intervalMs + 1000);

    const leader = members[(await roles(members)).indexOf('leader')] as Member;
    leader.alive = false;
    await new Promise((r) => setTimeout(r, 100)); // the reader stops hitting it before it dies
    const killedAt = Date.now();
    const pollsAtKill = upstream.polls().length;
    leader.proc.child.kill('SIGKILL');
    await waitFor(() => upstream.polls().length >= pollsAtKill + 2, 'polls resume', 10_000);
    expect(Date.now() - killedAt).toBeLessThan(leaseMs + 4 * intervalMs + 1000);
    await waitFor(() => oneLeader(members), 'a new leader among the survivors', 10_000);
    const after = await pollsDuring(upstream, 2000);
    expect(after).toBeGreaterThanOrEqual(5);
    expect(after).toBeLessThanOrEqual(16);

    await reader.stop();
    expect(reader.reads()).toBeGreaterThan(100);
    expect(reader.failures).toEqual([]);
  }, 60_000);

  it('Redis killed → every sidecar polls upstream itself and serves on; Redis back → one poller again', async () => {
    const upstream = await startProjectOneUpstream();
    onTestFinished(() => upstream.close());
    const redis = await startPrivateRedis();
    // A budget that does not stretch 3 pods' interval (3 × 60 s / 900 = 200 ms): each polls as on its own
    // (the stretch by fleet size is test/integration/fleet-outage.test.ts).
    const members = await startFleet(3, upstream, redis, { FLAG_SIDECAR_FLEET_OUTAGE_BUDGET: '900' });
    await waitFor(() => oneLeader(members), 'one leader, two followers', 10_000);
    const reader = startReader(members);

    await redis.kill();
    await waitFor(async () => (await roles(members)).every((r) => r === 'direct'), 'every sidecar direct', 10_000);
    // 2 s at 200 ms, three pollers: ~30 polls.
    const direct = await pollsDuring(upstream, 2000);
    expect(direct).toBeGreaterThanOrEqual(18);

    await redis.restart();
    await waitFor(() => oneLeader(members), 'fleet mode again', 20_000);
    const fleet = await pollsDuring(upstream, 2000);
    expect(fleet).toBeLessThanOrEqual(16);
    expect(fleet).toBeLessThan(direct);

    await reader.stop();
    expect(reader.reads()).toBeGreaterThan(100);
    expect(reader.failures).toEqual([]);
  }, 60_000);
});
