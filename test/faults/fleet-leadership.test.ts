/**
 * Leadership safety with real sidecar processes (the built entry point) on a private redis-server, against the
 * fake upstream:
 * - a leader stopped (SIGSTOP) for longer than its lease, while another sidecar takes the lease over, then
 *   resumed (SIGCONT), makes no upstream request: it checks its lease before polling and finds it gone. The
 *   paused sidecar polls with its own upstream key, so the fake upstream tells its requests apart (the fleet
 *   secret is shared, so the sidecars still share one fleet);
 * - one failed Redis command (every connection killed once; Redis paused for just over the command timeout)
 *   flips no sidecar to `direct`: /status sampled all along and the role-change log lines say so.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { builtEntry } from '../support/built-entry.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { startFakeUpstream } from '../support/fake-upstream.js';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { pollingEnv, projectOneToken } from '../support/polling-env.js';
import { redisCall, startPrivateRedis, type PrivateRedis } from '../support/redis.js';
import { spawnSidecar, type SidecarProcess } from '../support/spawn-sidecar.js';
import { waitFor } from '../support/start-sidecar.js';

const entry = builtEntry();
const pausedKey = 'phs_pausedsidecarkey';

interface Member {
  readonly proc: SidecarProcess;
  readonly ops: string;
}

const startUpstream = (): Promise<FakeUpstream> =>
  startFakeUpstream({ projects: { 1: { token: projectOneToken, definitions: exampleDefinitions() } }, keys: [upstreamKey, pausedKey] });

async function startMember(upstream: FakeUpstream, redis: PrivateRedis, options: { key?: string; intervalMs: number; leaseMs: number }): Promise<Member> {
  const proc = spawnSidecar(
    {
      ...pollingEnv(upstream),
      FLAG_SIDECAR_UPSTREAM_KEY: options.key ?? upstreamKey,
      FLAG_SIDECAR_FLEET_SECRET: 'fleet-secret-shared-by-every-sidecar-of-the-test',
      FLAG_SIDECAR_POLL_INTERVAL: `${options.intervalMs}ms`,
      FLAG_SIDECAR_FLEET_LEASE: `${options.leaseMs}ms`,
      FLAG_SIDECAR_REDIS_URL: redis.url,
      FLAG_SIDECAR_LOG_LEVEL: 'info',
    },
    { entry },
  );
  onTestFinished(() => {
    proc.child.kill('SIGCONT');
    proc.child.kill('SIGKILL');
  });
  const { ops } = await proc.listening;
  await waitFor(async () => (await fetch(`${ops}/readyz`)).status === 200, 'sidecar ready', 20_000);
  return { proc, ops };
}

const roleOf = async (m: Member): Promise<string> => {
  const body = (await (await fetch(`${m.ops}/status`)).json()) as { projects: Array<{ fleet: { role: string } }> };
  return body.projects[0]?.fleet.role ?? 'none';
};

/** Upstream polls made with `key`, from request index `from` on. */
const pollsWith = (upstream: FakeUpstream, key: string, from: number): number =>
  upstream.requests.slice(from).filter((r) => r.url.includes('local_evaluation') && r.headers.authorization === `Bearer ${key}`).length;

describe('fleet leadership safety', () => {
  it('a leader resumed after a pause longer than its lease polls upstream no more: it checks its lease first', async () => {
    const upstream = await startUpstream();
    onTestFinished(() => upstream.close());
    const redis = await startPrivateRedis();
    // Polls due far more often than renewals: on resuming, the poll timer most likely fires before the lease's.
    const timing = { intervalMs: 100, leaseMs: 2000 };
    const { leaseMs } = timing;
    const paused = await startMember(upstream, redis, { ...timing, key: pausedKey });
    await waitFor(async () => (await roleOf(paused)) === 'leader', 'the first sidecar leads', 10_000);
    const others = [await startMember(upstream, redis, timing), await startMember(upstream, redis, timing)];
    await waitFor(async () => (await Promise.all(others.map(roleOf))).every((r) => r === 'follower'), 'the others follow', 10_000);
    expect(pollsWith(upstream, pausedKey, 0)).toBeGreaterThan(0);
    // Leading for longer than a follower waits for a silent fleet (ten intervals and a lease) before polling itself:
    // resumed with a lease run out and nothing heard from the fleet for that long, it would count as direct.
    await new Promise((r) => setTimeout(r, 10 * timing.intervalMs + leaseMs + 500));

    paused.proc.child.kill('SIGSTOP');
    const stoppedAt = Date.now();
    await waitFor(async () => (await Promise.all(others.map(roleOf))).includes('leader'), 'another sidecar takes the lease', 10_000);
    // Paused for at least two leases: every timer of the paused sidecar (poll, lease, Redis) is due when it resumes.
    await new Promise((r) => setTimeout(r, Math.max(0, stoppedAt + 2 * leaseMs - Date.now())));
    const resumedFrom = upstream.requests.length;
    paused.proc.child.kill('SIGCONT');
    await waitFor(async () => (await roleOf(paused)) === 'follower', 'the resumed sidecar follows', 10_000);
    // Several poll intervals after it resumed.
    await new Promise((r) => setTimeout(r, 1000));
    expect(await roleOf(paused)).toBe('follower');
    expect(pollsWith(upstream, pausedKey, resumedFrom)).toBe(0);
    expect(pollsWith(upstream, upstreamKey, resumedFrom)).toBeGreaterThan(0);
  }, 60_000);

  it('one failed Redis command flips no sidecar to direct: connections killed once, Redis paused past the timeout once', async () => {
    const upstream = await startUpstream();
    onTestFinished(() => upstream.close());
    const redis = await startPrivateRedis();
    const timing = { intervalMs: 200, leaseMs: 1000 };
    const members = [await startMember(upstream, redis, timing)];
    await waitFor(async () => (await roleOf(members[0] as Member)) === 'leader', 'a leader', 10_000);
    members.push(await startMember(upstream, redis, timing), await startMember(upstream, redis, timing));
    await waitFor(async () => (await Promise.all(members.map(roleOf))).filter((r) => r === 'follower').length === 2, 'one leader, two followers', 10_000);

    // Sample every sidecar's role all along the faults.
    const seen = new Set<string>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        for (const role of await Promise.all(members.map(roleOf))) seen.add(role);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    onTestFinished(async () => {
      sampling = false;
      await sampler.catch(() => undefined);
    });
    /** Lease commands that failed, over every sidecar. */
    const errors = async (): Promise<number> => {
      let sum = 0;
      for (const m of members) {
        const text = await (await fetch(`${m.ops}/metrics`)).text();
        for (const [, value] of text.matchAll(/^flag_sidecar_redis_errors_total\{operation="lease_\w+"\} (\d+)/gm)) sum += Number(value);
      }
      return sum;
    };

    // Every sidecar connection (a subscribed RESP3 connection counts as pubsub), one type after the other.
    let killed = 0;
    for (const type of ['normal', 'pubsub']) killed += Number(/^:(\d+)/.exec(await redisCall(redis.port, 'CLIENT', 'KILL', 'TYPE', type))?.[1]);
    expect(killed).toBeGreaterThanOrEqual(members.length);
    await waitFor(async () => (await Promise.all(members.map(async (m) => ((await (await fetch(`${m.ops}/status`)).json()) as { fleet: { redis: { up: boolean } } }).fleet.redis.up))).every(Boolean), 'every sidecar reconnected', 10_000);
    // A pause just past the command timeout (250 ms): a command sent at its start fails, the next one is answered.
    // Repeated until a lease command did fail (the sidecars send a few a second).
    const killedErrors = await errors();
    for (let i = 0; i < 40 && (await errors()) === killedErrors; i++) {
      await redisCall(redis.port, 'CLIENT', 'PAUSE', '320', 'ALL');
      await new Promise((r) => setTimeout(r, 700));
    }
    expect(await errors()).toBeGreaterThan(killedErrors);
    await new Promise((r) => setTimeout(r, 500));
    sampling = false;
    await sampler;

    expect([...seen].sort()).toEqual(['follower', 'leader']);
    for (const m of members) expect(m.proc.logLines().filter((l) => l.msg === 'fleet role changed' && l.role === 'direct')).toEqual([]);
  }, 60_000);
});
