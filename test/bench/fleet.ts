/**
 * Fleet benchmark (issue 16), run by `npm run bench` (BENCH_ONLY=fleet) after dist/ is built: sidecar processes
 * (dist/main.js) against an in-process stand-in upstream that counts requests, with and without fleet mode on a
 * private redis-server it starts and stops itself.
 * 1. Upstream requests per minute for 1, 5 and 20 sidecars, each mode measured over BENCH_FLEET_SECONDS (default
 *    30) at FLAG_SIDECAR_POLL_INTERVAL=2s, also given per poll interval (what one lone sidecar makes: 1).
 * 2. Propagation: the upstream definitions change at a random moment; time until every sidecar (5) serves the new
 *    ETag — p50/p99 over BENCH_FLEET_CHANGES (default 20) changes, and the fan-out (first sidecar to last).
 * 3. Failover: kill -9 of the leader, 10 times (BENCH_FLEET_KILLS): time until the upstream sees the next poll
 *    from another sidecar, and until another sidecar reports itself leader.
 * 4. Redis cost per pod (issue 38): 20 sidecars at the default poll interval and lease, idle, over
 *    BENCH_FLEET_CHATTER_SECONDS (default 60): commands Redis ran per pod per second (INFO stats
 *    total_commands_processed, which also counts the commands scripts run, less the bench's own INFO), commands the
 *    sidecars sent (their flag_sidecar_redis_* metrics) and connections per pod (INFO clients).
 * Cases 1–3 poll every 2 s with a 3 s lease, so the figures come in minutes, not hours; scale by the interval.
 * BENCH_FLEET_CASES (comma list of rate, propagation, failover, chatter; default all) runs some of them.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createConnection, createServer as createNetServer } from 'node:net';
import { makeDefinitions } from './definitions.js';
import { ownKey, startSidecarProcess, startStandInUpstream, stopAll, token, type Sidecar, type StandInUpstream } from './fleet-processes.js';

const windowSeconds = Number(process.env.BENCH_FLEET_SECONDS ?? 30);
const changes = Number(process.env.BENCH_FLEET_CHANGES ?? 20);
const kills = Number(process.env.BENCH_FLEET_KILLS ?? 10);
const chatterSeconds = Number(process.env.BENCH_FLEET_CHATTER_SECONDS ?? 60);
const cases = new Set((process.env.BENCH_FLEET_CASES ?? 'rate,propagation,failover,chatter').split(',').map((c) => c.trim()));
const intervalMs = 2000;
const leaseMs = 3000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The stand-in upstream (fleet-processes.ts) with 60 flags. */
const startUpstream = (): Promise<StandInUpstream> => startStandInUpstream(makeDefinitions(60) as { flags: Array<Record<string, unknown>> });

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const s = createNetServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });

async function startRedis(): Promise<{ url: string; port: number; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  await sleep(300);
  return { url: `redis://127.0.0.1:${port}`, port, stop: async () => void (child.kill('SIGKILL'), await once(child, 'exit')) };
}

/** Start sidecar `index`; `timing: 'default'` leaves the poll interval and lease at their defaults. */
function startSidecar(index: number, upstream: string, redis: string | null, timing: 'bench' | 'default' = 'bench'): Sidecar {
  return startSidecarProcess(index, 18100, upstream, {
    ...(timing === 'bench' ? { FLAG_SIDECAR_POLL_INTERVAL: `${intervalMs}ms`, FLAG_SIDECAR_FLEET_LEASE: `${leaseMs}ms` } : {}),
    FLAG_SIDECAR_REDIS_URL: redis ?? undefined,
  });
}

async function waitReady(sidecars: readonly Sidecar[]): Promise<void> {
  for (const s of sidecars) {
    for (let i = 0; ; i++) {
      const ok = await fetch(`${s.ops}/readyz`).then((r) => r.ok, () => false);
      if (ok) break;
      if (i > 600) throw new Error(`${s.ops} never became ready`);
      await sleep(50);
    }
  }
}

/** The ETag a sidecar serves for project 1's definitions, or null when it does not answer. */
const servedEtag = (s: Sidecar): Promise<string | null> =>
  fetch(`${s.api}/flags/definitions?token=${token}&send_cohorts`, { headers: { authorization: `Bearer ${ownKey}` } }).then(
    async (r) => (await r.arrayBuffer(), r.ok ? r.headers.get('etag') : null),
    () => null,
  );

const pct = (xs: readonly number[], p: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
};

async function requestRate(n: number, fleet: boolean): Promise<string> {
  const upstream = await startUpstream();
  const redis = fleet ? await startRedis() : null;
  const sidecars = await Promise.all(Array.from({ length: n }, (_, i) => startSidecar(i, upstream.url, redis?.url ?? null)));
  try {
    await waitReady(sidecars);
    await sleep(2 * intervalMs);
    const before = upstream.count();
    await sleep(windowSeconds * 1000);
    const requests = upstream.count() - before;
    const perMinute = (requests * 60) / windowSeconds;
    const perInterval = requests / ((windowSeconds * 1000) / intervalMs);
    return `| ${n} | ${fleet ? 'fleet (Redis)' : 'per pod'} | ${perMinute.toFixed(1)} | ${perInterval.toFixed(2)} |`;
  } finally {
    await stopAll(sidecars);
    await redis?.stop();
    upstream.server.close();
  }
}

async function propagation(fleet: boolean): Promise<string> {
  const upstream = await startUpstream();
  const redis = fleet ? await startRedis() : null;
  const sidecars = await Promise.all(Array.from({ length: 5 }, (_, i) => startSidecar(i, upstream.url, redis?.url ?? null)));
  const all: number[] = [];
  const fanOut: number[] = [];
  try {
    await waitReady(sidecars);
    await sleep(2 * intervalMs);
    for (let c = 0; c < changes; c++) {
      await sleep(Math.random() * intervalMs);
      const started = performance.now();
      const wanted = upstream.change();
      const seenAt = new Map<number, number>();
      while (seenAt.size < sidecars.length && performance.now() - started < 10 * intervalMs) {
        await Promise.all(
          sidecars.map(async (s, i) => {
            if (!seenAt.has(i) && (await servedEtag(s)) === wanted) seenAt.set(i, performance.now());
          }),
        );
        await sleep(10);
      }
      if (seenAt.size < sidecars.length) throw new Error(`change ${c} did not reach every sidecar within ${10 * intervalMs} ms`);
      const times = [...seenAt.values()];
      all.push(Math.max(...times) - started);
      fanOut.push(Math.max(...times) - Math.min(...times));
    }
    return `| ${fleet ? 'fleet (Redis)' : 'per pod'} | ${pct(all, 50).toFixed(0)} | ${pct(all, 99).toFixed(0)} | ${pct(fanOut, 50).toFixed(0)} | ${pct(fanOut, 99).toFixed(0)} |`;
  } finally {
    await stopAll(sidecars);
    await redis?.stop();
    upstream.server.close();
  }
}

/** The index of the sidecar reporting itself leader of project 1, or -1. */
async function leaderOf(sidecars: readonly Sidecar[]): Promise<number> {
  const roles = await Promise.all(
    sidecars.map((s) =>
      fetch(`${s.ops}/status`).then(
        async (r) => ((await r.json()) as { projects: Array<{ fleet?: { role?: string } | null }> }).projects[0]?.fleet?.role ?? null,
        () => null,
      ),
    ),
  );
  return roles.indexOf('leader');
}

async function failover(): Promise<string> {
  const upstream = await startUpstream();
  const redis = await startRedis();
  const sidecars = await Promise.all(Array.from({ length: 5 }, (_, i) => startSidecar(i, upstream.url, redis.url)));
  const takeover: number[] = [];
  const nextPoll: number[] = [];
  try {
    await waitReady(sidecars);
    for (let k = 0; k < kills; k++) {
      let leader = -1;
      for (let i = 0; i < 400 && leader < 0; i++) {
        leader = await leaderOf(sidecars);
        if (leader < 0) await sleep(25);
      }
      if (leader < 0) throw new Error('no sidecar reports itself leader');
      await sleep(Math.random() * intervalMs);
      const victim = sidecars[leader] as Sidecar;
      const killedAt = performance.now();
      victim.child.kill('SIGKILL');
      await once(victim.child, 'exit');
      let newLeader = -1;
      while (newLeader < 0 && performance.now() - killedAt < 10 * leaseMs) {
        newLeader = await leaderOf(sidecars);
        if (newLeader < 0) await sleep(10);
      }
      if (newLeader < 0) throw new Error(`no new leader within ${10 * leaseMs} ms of kill ${k}`);
      takeover.push(performance.now() - killedAt);
      while (!upstream.polls().some((t) => t > killedAt) && performance.now() - killedAt < 10 * leaseMs) await sleep(10);
      const first = upstream.polls().find((t) => t > killedAt);
      if (first === undefined) throw new Error(`no poll within ${10 * leaseMs} ms of kill ${k}`);
      nextPoll.push(first - killedAt);
      sidecars[leader] = await startSidecar(leader, upstream.url, redis.url);
      await waitReady([sidecars[leader] as Sidecar]);
    }
    const fmt = (xs: number[]): string => `${pct(xs, 50).toFixed(0)} / ${Math.max(...xs).toFixed(0)}`;
    return `leader kill -9, ${kills} times (lease ${leaseMs} ms, poll interval ${intervalMs} ms): new leader reported after p50 / max ${fmt(takeover)} ms; upstream polled again after p50 / max ${fmt(nextPoll)} ms (each: ${takeover.map((t) => t.toFixed(0)).join(', ')})`;
  } finally {
    await stopAll(sidecars);
    await redis.stop();
    upstream.server.close();
  }
}

/** `INFO section` of the Redis on 127.0.0.1:`port`: the bulk string, read to its announced length. */
function info(port: number, section: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write(`INFO ${section}\r\n`));
    let reply = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      reply = Buffer.concat([reply, chunk]);
      const header = /^\$(\d+)\r\n/.exec(reply.toString('latin1', 0, 32));
      if (header && reply.length >= header[0].length + Number(header[1])) {
        socket.end();
        resolve(reply.toString('utf8', header[0].length, header[0].length + Number(header[1])));
      }
    });
    socket.on('error', reject);
  });
}

/** A field of an INFO reply (`name:value` lines), as a number (NaN when absent). */
const infoField = (info: string, name: string): number => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1]);
/** Calls of one command in an INFO commandstats reply (0 when never called). */
const commandCalls = (info: string, name: string): number => Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);

/** Redis commands the sidecar sent by operation: answered ones (latency histogram counts) plus failed ones (errors but connection errors). */
async function commandsSent(s: Sidecar): Promise<Map<string, number>> {
  const text = await (await fetch(`${s.ops}/metrics`)).text();
  const sent = new Map<string, number>();
  for (const [, operation, value] of text.matchAll(/^flag_sidecar_redis_(?:command_duration_seconds_count|errors_total)\{operation="([^"]+)"\} (\d+)/gm)) {
    if (operation !== 'connection') sent.set(operation as string, (sent.get(operation as string) ?? 0) + Number(value));
  }
  return sent;
}

/** The sum of per-operation counts over sidecars. */
function summed(maps: ReadonlyArray<Map<string, number>>): Map<string, number> {
  const sum = new Map<string, number>();
  for (const map of maps) for (const [operation, n] of map) sum.set(operation, (sum.get(operation) ?? 0) + n);
  return sum;
}

/** 20 idle sidecars at the default interval and lease: what each costs Redis, per second. */
async function chatter(n = 20): Promise<string> {
  const upstream = await startUpstream();
  const redis = await startRedis();
  const sidecars = await Promise.all(Array.from({ length: n }, (_, i) => startSidecar(i, upstream.url, redis.url, 'default')));
  try {
    await waitReady(sidecars);
    await sleep(15_000); // past the first election, the first publication and the followers' first loads
    const snapshot = async () => ({
      stats: await info(redis.port, 'stats'),
      commands: await info(redis.port, 'commandstats'),
      sent: summed(await Promise.all(sidecars.map(commandsSent))),
      at: performance.now(),
    });
    const before = await snapshot();
    await sleep(chatterSeconds * 1000);
    const after = await snapshot();
    const clients = infoField(await info(redis.port, 'clients'), 'connected_clients') - 1; // less this INFO's own
    const seconds = (after.at - before.at) / 1000;
    const ran = infoField(after.stats, 'total_commands_processed') - infoField(before.stats, 'total_commands_processed') - (commandCalls(after.commands, 'info') - commandCalls(before.commands, 'info'));
    const names = ['evalsha', 'eval', 'ping', 'get', 'mget', 'pttl', 'publish', 'pexpire', 'set'];
    const byName = names.map((name) => `${name} ${((commandCalls(after.commands, name) - commandCalls(before.commands, name)) / n / seconds).toFixed(3)}`).join(', ');
    const perOperation = [...after.sent].map(([operation, count]) => [operation, (count - (before.sent.get(operation) ?? 0)) / n / seconds] as const).filter(([, rate]) => rate > 0);
    const sent = perOperation.reduce((sum, [, rate]) => sum + rate, 0);
    return [
      `| ${n} | ${(ran / n / seconds).toFixed(3)} | ${sent.toFixed(3)} | ${(clients / n).toFixed(2)} |`,
      `  Redis ran per pod per second, by command (inside scripts included): ${byName}`,
      `  sidecars sent per pod per second, by operation: ${perOperation.map(([operation, rate]) => `${operation} ${rate.toFixed(3)}`).join(', ')}`,
    ].join('\n');
  } finally {
    await stopAll(sidecars);
    await redis.stop();
    upstream.server.close();
  }
}

if (cases.has('rate')) {
  console.log(`fleet: upstream requests over ${windowSeconds} s per case, poll interval ${intervalMs} ms, lease ${leaseMs} ms`);
  const rows: string[] = [];
  for (const n of [1, 5, 20]) {
    for (const fleet of [false, true]) {
      rows.push(await requestRate(n, fleet));
      console.log(rows[rows.length - 1]);
    }
  }
  console.log('\n| sidecars | mode | upstream requests / min | per poll interval |\n|---|---|---|---|');
  console.log(rows.join('\n'));
}
if (cases.has('propagation')) {
  console.log(`\npropagation of an upstream change to all of 5 sidecars, ${changes} changes (ms):`);
  console.log('| mode | p50 | p99 | fan-out p50 | fan-out p99 |\n|---|---|---|---|---|');
  for (const fleet of [false, true]) console.log(await propagation(fleet));
}
if (cases.has('failover')) console.log(`\n${await failover()}`);
if (cases.has('chatter')) {
  console.log(`\nRedis cost per pod, idle sidecars at the default poll interval and lease, over ${chatterSeconds} s:`);
  console.log('| sidecars | commands Redis ran / pod / s | commands sent / pod / s | connections / pod |\n|---|---|---|---|');
  console.log(await chatter());
}
