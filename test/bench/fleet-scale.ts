/**
 * Fleet benchmark at scale (issue 38), run by `npm run bench` (BENCH_ONLY=fleet-scale) after dist/ is built:
 * sidecar processes (dist/main.js) on a private redis-server, against an in-process stand-in upstream.
 * 1. Redis outage: 20 sidecars whose leader counts a fleet of 1,000 (980 stand-in subscribers on the snapshot
 *    channel), Redis killed; upstream polls a minute over BENCH_FLEET_OUTAGE_SECONDS (default 60) at the default
 *    budget (120/min) and at 6,000/min (so the 20 make enough polls to count), each extrapolated to 1,000 pods.
 * 2. The change herd: BENCH_FLEET_HERD_SIZES sidecars (default 5, 20 and 50) for each of BENCH_FLEET_HERD_BODIES
 *    (default 16KB,2.4MB; makeDefinitions with a random description per flag, so it compresses like a real body
 *    rather than 30×), BENCH_FLEET_HERD_CHANGES (default 10) changes each: convergence from upstream's answer to
 *    the leader until every sidecar serves the new ETag (p50 / p99 / max), Redis errors counted by the sidecars,
 *    whether any sidecar left fleet mode, bytes out of Redis per change (INFO total_net_output_bytes, less the
 *    idle rate measured before) and CPU per sidecar per change (user + system time of the processes over the
 *    changes, /proc; the benchmark's own /status polls included).
 * Poll interval 2 s, lease 3 s (a 5 s lease for 50 processes on a small machine).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { loadavg } from 'node:os';
import { brotliCompressSync } from 'node:zlib';
import { fleetKeys } from '../../src/fleet/keys.js';
import { freePort } from '../support/free-port.js';
import { subscribeMany } from '../support/redis-subscribers.js';
import { makeDefinitions } from './definitions.js';
import { startSidecarProcess, startStandInUpstream, stopAll, type Sidecar, type StandInUpstream } from './fleet-processes.js';

const outageSeconds = Number(process.env.BENCH_FLEET_OUTAGE_SECONDS ?? 60);
const herdChanges = Number(process.env.BENCH_FLEET_HERD_CHANGES ?? 10);
const intervalMs = 2000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A body of about `bytes`: realistic flags, each with a random description (so it compresses about 5×). */
function bodyOf(bytes: number): { defs: { flags: Array<Record<string, unknown>> }; body: Buffer } {
  const one = Buffer.byteLength(JSON.stringify(makeDefinitions(100))) / 100 + 260;
  const defs = makeDefinitions(Math.round((bytes * 1.1) / one)) as { flags: Array<Record<string, unknown>> };
  for (const flag of defs.flags) flag.description = randomBytes(120).toString('base64');
  return { defs, body: Buffer.from(JSON.stringify(defs)) };
}

type Upstream = StandInUpstream;

const startUpstream = (bytes: number): Promise<Upstream> => startStandInUpstream(bodyOf(bytes).defs);

async function startRedis(): Promise<{ port: number; url: string; child: ChildProcess; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxclients', '4000'], { stdio: 'ignore' });
  await sleep(300);
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    await once(child, 'exit');
  };
  return { port, url: `redis://127.0.0.1:${port}`, child, stop };
}

/** total_net_output_bytes of the Redis on `port`. */
function redisOutputBytes(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write('*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n'));
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString();
      const match = /total_net_output_bytes:(\d+)/.exec(text);
      if (match) {
        socket.destroy();
        resolve(Number(match[1]));
      }
    });
    socket.on('error', reject);
  });
}

function startSidecar(index: number, upstream: string, redis: string, env: Record<string, string>): Sidecar {
  return startSidecarProcess(index, 19100, upstream, { FLAG_SIDECAR_POLL_INTERVAL: `${intervalMs}ms`, FLAG_SIDECAR_REDIS_URL: redis, ...env });
}

type View = { etag: string | null; role: string | null; route: string | null; fleetSize: number | null };
async function view(s: Sidecar): Promise<View> {
  try {
    const body = (await (await fetch(`${s.ops}/status`)).json()) as { projects: Array<{ with_cohorts: { etag: string } | null; fleet: { role: string; route: string; fleet_size: number | null } }> };
    const p = body.projects[0];
    return { etag: p?.with_cohorts?.etag ?? null, role: p?.fleet.role ?? null, route: p?.fleet.route ?? null, fleetSize: p?.fleet.fleet_size ?? null };
  } catch {
    return { etag: null, role: null, route: null, fleetSize: null };
  }
}
const views = (sidecars: readonly Sidecar[]): Promise<View[]> => Promise.all(sidecars.map(view));

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out: ${what}`);
    await sleep(50);
  }
}

/** Redis errors the sidecars counted, by operation. */
async function redisErrors(sidecars: readonly Sidecar[]): Promise<Map<string, number>> {
  const texts = await Promise.all(sidecars.map((s) => fetch(`${s.ops}/metrics`).then((r) => r.text(), () => '')));
  const counts = new Map<string, number>();
  for (const text of texts) {
    for (const m of text.matchAll(/^flag_sidecar_redis_errors_total\{operation="([^"]*)"\} (\d+)/gm)) counts.set(m[1] as string, (counts.get(m[1] as string) ?? 0) + Number(m[2]));
  }
  return counts;
}

/** The errors counted since `before`, as `total (operation n, …)`. */
function errorsSince(before: Map<string, number>, after: Map<string, number>): string {
  const added = [...after].map(([op, n]) => [op, n - (before.get(op) ?? 0)] as const).filter(([, n]) => n > 0);
  const total = added.reduce((sum, [, n]) => sum + n, 0);
  return total === 0 ? '0' : `${total} (${added.map(([op, n]) => `${op} ${n}`).join(', ')})`;
}

async function outage(budget: number): Promise<string> {
  const upstream = await startUpstream(16_000);
  const redis = await startRedis();
  const standIns = await subscribeMany(redis.port, fleetKeys('flag-sidecar', new URL(upstream.url)).snapshotChannel, 980);
  const sidecars = Array.from({ length: 20 }, (_, i) => startSidecar(i, upstream.url, redis.url, { FLAG_SIDECAR_FLEET_LEASE: '3s', FLAG_SIDECAR_FLEET_OUTAGE_BUDGET: String(budget) }));
  try {
    await until('a fleet of 1,000 seen by all 20', async () => (await views(sidecars)).every((v) => v.fleetSize === 1000 && v.etag !== null), 60_000);
    await redis.stop();
    await until('all 20 direct', async () => (await views(sidecars)).every((v) => v.role === 'direct'), 30_000);
    const routes = new Set((await views(sidecars)).map((v) => v.route));
    const before = upstream.polls().length;
    await sleep(outageSeconds * 1000);
    const perMinute = ((upstream.polls().length - before) * 60) / outageSeconds;
    return `| ${budget} | ${[...routes].join(', ')} | ${perMinute.toFixed(1)} | ${(perMinute * 50).toFixed(0)} | ${(20 * 60_000 / intervalMs).toFixed(0)} |`;
  } finally {
    standIns.close();
    await stopAll(sidecars);
    await redis.stop();
    upstream.server.close();
  }
}

/** `16KB`, `2.4MB` or a plain byte count → bytes. */
function parseBytes(text: string): number {
  const match = /^([\d.]+)\s*(KB|MB)?$/i.exec(text.trim());
  if (match === null) throw new Error(`BENCH_FLEET_HERD_BODIES: ${text} is not a size like 16KB or 2.4MB`);
  return Math.round(Number(match[1]) * (match[2] === undefined ? 1 : match[2].toUpperCase() === 'KB' ? 1e3 : 1e6));
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number | undefined): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
const fleetCpu = (sidecars: readonly Sidecar[]): number => sidecars.reduce((sum, s) => sum + cpuSeconds(s.child.pid), 0);

const pct = (xs: readonly number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.max(0, Math.ceil((p / 100) * xs.length) - 1))] ?? Number.NaN;

async function herd(n: number, bodyBytes: number): Promise<string> {
  const upstream = await startUpstream(bodyBytes);
  const redis = await startRedis();
  const lease = n > 20 ? '5s' : '3s';
  const sidecars = Array.from({ length: n }, (_, i) => startSidecar(i, upstream.url, redis.url, { FLAG_SIDECAR_FLEET_LEASE: lease }));
  const converge: number[] = [];
  const bytes: number[] = [];
  let left = 0;
  try {
    await until(`${n} sidecars ready in fleet mode`, async () => (await views(sidecars)).every((v) => v.etag !== null && v.role !== 'direct' && v.fleetSize === n), 180_000);
    await sleep(3 * intervalMs);
    const errorsBefore = await redisErrors(sidecars);
    const idleFrom = await redisOutputBytes(redis.port);
    await sleep(5000);
    const idleRate = ((await redisOutputBytes(redis.port)) - idleFrom) / 5000;
    const cpuFrom = fleetCpu(sidecars);
    for (let c = 0; c < herdChanges; c++) {
      const outFrom = await redisOutputBytes(redis.port);
      const from = performance.now();
      const wanted = upstream.change();
      for (;;) {
        const vs = await views(sidecars);
        left += vs.filter((v) => v.role === 'direct').length;
        if (vs.every((v) => v.etag === wanted)) break;
        if (performance.now() - from > 30_000) throw new Error(`change ${c} did not converge within 30 s`);
        await sleep(25);
      }
      const done = performance.now();
      converge.push(done - (upstream.answeredAt(wanted) ?? from));
      bytes.push((await redisOutputBytes(redis.port)) - outFrom - idleRate * (performance.now() - from));
      await sleep(intervalMs);
    }
    const cpuMs = ((fleetCpu(sidecars) - cpuFrom) * 1000) / (n * herdChanges);
    const errors = errorsSince(errorsBefore, await redisErrors(sidecars));
    const stored = brotliCompressSync(bodyOf(bodyBytes).body).length;
    const load = loadavg()[0]?.toFixed(0);
    const mb = (b: number): string => (b >= 1e6 ? `${(b / 1e6).toFixed(2)} MB` : `${(b / 1e3).toFixed(1)} KB`);
    return `| ${n} (load ${load}) | ${mb(upstream.size())} (${mb(stored)} stored) | ${pct(converge, 50).toFixed(0)} / ${pct(converge, 99).toFixed(0)} / ${Math.max(...converge).toFixed(0)} | ${errors} | ${left} | ${mb(pct(bytes, 50))} | ${cpuMs.toFixed(0)} |`;
  } finally {
    await stopAll(sidecars);
    await redis.stop();
    upstream.server.close();
  }
}

const parts = (process.env.BENCH_FLEET_SCALE ?? 'outage,herd').split(',');
if (parts.includes('outage')) {
  console.log(`Redis outage, 20 sidecars, fleet of 1,000 counted, poll interval ${intervalMs} ms, ${outageSeconds} s window:`);
  console.log('| budget / min | route | upstream polls / min (20 pods) | extrapolated to 1,000 pods | unbudgeted (20 pods) |\n|---|---|---|---|---|');
  for (const budget of [120, 6000]) console.log(await outage(budget));
}
if (parts.includes('herd')) {
  console.log(`\nchange herd, ${herdChanges} changes each (convergence from upstream's answer to the leader, ms):`);
  console.log('| sidecars | body | converged p50 / p99 / max (ms) | Redis errors | sidecar-samples in direct | bytes out of Redis per change (p50) | CPU per sidecar per change (ms) |\n|---|---|---|---|---|---|---|');
  const bodies = (process.env.BENCH_FLEET_HERD_BODIES ?? '16KB,2.4MB').split(',').map(parseBytes);
  for (const n of (process.env.BENCH_FLEET_HERD_SIZES ?? '5,20,50').split(',').map(Number)) for (const b of bodies) console.log(await herd(n, b));
}
