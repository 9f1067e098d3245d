/**
 * Memory sizing (docs/operations.md#sizing): the built entry point's RSS for 0, 1,000, 5,000 and 10,000 flags.
 *
 *   npm run build && npx tsx test/bench/sizing.ts
 *
 * For each size (makeDefinitions(n) of definitions.ts, the benchmarks' realistic flags: conditions, variants,
 * payloads, a cohort) it starts `node dist/main.js` twice, loopback only:
 * - offline on a bootstrap file of that body: time to /readyz on the ops port, VmRSS after a 2 s settle (idle),
 *   then after one local_evaluation GET, one without `send_cohorts` and one `POST /flags?v=2` evaluating every flag
 *   for one user (another settle), and the peak (VmHWM);
 * - online against a stand-in upstream in this process whose definitions change on every poll (1 s interval; both
 *   variants, with and without cohorts, each answered with a new body and ETag, persisted to a temp snapshot dir),
 *   for SIZING_CHURN_SECONDS (default 15): the steady state of a sidecar whose flags keep changing — old and new
 *   snapshots overlap during each swap — as VmRSS at the end and VmHWM (peak).
 * Env: SIZING_FLAGS (comma list, default 0,1000,5000,10000), SIZING_CHURN_SECONDS, SIZING_SETTLE_MS (default 2000),
 * SIZING_POLL_INTERVAL (online, default 1s), SIZING_NODE_OPTIONS (NODE_OPTIONS of every sidecar started, e.g.
 * `--max-old-space-size=128`, to see what a heap cap does).
 *
 * With SIZING_SEMI_SPACE (comma list of MiB values and/or `default`, e.g. `default,8,4,2`; needs `wrk`), it also
 * measures RSS and throughput under load for each `--max-semi-space-size` (given as NODE_OPTIONS, as the image
 * would): the sidecar offline on the 60-flag body pinned to core 0, `wrk -t1 -c50` on core 1 for SIZING_LOAD_SECONDS
 * (default 20) against the snapshot path, RSS right after.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchUser, makeDefinitions } from './definitions.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const sizes = (process.env.SIZING_FLAGS ?? '0,1000,5000,10000').split(',').filter((s) => s.trim() !== '').map(Number);
const churnSeconds = Number(process.env.SIZING_CHURN_SECONDS ?? 15);
const settleMs = Number(process.env.SIZING_SETTLE_MS ?? 2000);
const semiSpaces = (process.env.SIZING_SEMI_SPACE ?? '').split(',').map((s) => s.trim()).filter(Boolean);
const loadSeconds = Number(process.env.SIZING_LOAD_SECONDS ?? 20);
const pollInterval = process.env.SIZING_POLL_INTERVAL ?? '1s';
const nodeOptions = process.env.SIZING_NODE_OPTIONS ?? '';
const key = 'phx_sizing_key';
const token = 'phc_sizing';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** VmRSS and VmHWM (peak RSS) of a process, in MiB. */
function memory(pid: number | undefined): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1]) / 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/** A free loopback port (the sidecar needs a known ops port to be probed). */
async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

interface Running {
  readonly child: ChildProcess;
  readonly api: string;
  readonly ops: string;
}

async function startSidecar(env: Record<string, string>, pin = false): Promise<Running> {
  const [apiPort, opsPort] = [await freePort(), await freePort()];
  const args = ['dist/main.js'];
  const child = spawn(pin ? 'taskset' : process.execPath, pin ? ['-c', '0', process.execPath, ...args] : args, {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      FLAG_SIDECAR_LISTEN: `127.0.0.1:${apiPort}`,
      FLAG_SIDECAR_OPS_LISTEN: `127.0.0.1:${opsPort}`,
      FLAG_SIDECAR_LOG_LEVEL: 'warn',
      ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // stderr (the start-up banner, warnings) is kept and shown only if the sidecar dies.
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4000);
  });
  child.on('exit', (code, signal) => {
    if (code !== 0 && signal === null) console.error(`sidecar exited with ${code}:\n${stderr}`);
  });
  return { child, api: `http://127.0.0.1:${apiPort}`, ops: `http://127.0.0.1:${opsPort}` };
}

/** Milliseconds from now until /readyz answers 200 (at most 60 s). */
async function untilReady(sidecar: Running): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < 60_000) {
    if (sidecar.child.exitCode !== null) throw new Error(`sidecar exited with ${sidecar.child.exitCode}`);
    try {
      if ((await fetch(`${sidecar.ops}/readyz`)).status === 200) return performance.now() - started;
    } catch {
      /* not listening yet */
    }
    await sleep(10);
  }
  throw new Error('sidecar not ready within 60 s');
}

async function stop(sidecar: Running): Promise<void> {
  if (sidecar.child.exitCode !== null) return;
  const exited = once(sidecar.child, 'exit');
  sidecar.child.kill('SIGTERM');
  await exited;
}

/** The requests an app makes: both local_evaluation variants and one evaluation of every flag. */
async function exercise(sidecar: Running): Promise<void> {
  const auth = { authorization: `Bearer ${key}` };
  for (const query of ['?send_cohorts', '']) {
    const res = await fetch(`${sidecar.api}/api/projects/1/feature_flags/local_evaluation/${query}`, { headers: auth });
    if (res.status !== 200) throw new Error(`local_evaluation${query}: ${res.status}`);
    await res.arrayBuffer();
  }
  const res = await fetch(`${sidecar.api}/flags?v=2`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      token,
      distinct_id: benchUser.distinctId,
      person_properties: benchUser.personProperties,
      groups: benchUser.groups,
    }),
  });
  if (res.status !== 200) throw new Error(`/flags: ${res.status}`);
  await res.arrayBuffer();
}

/** Two versions of an n-flag body that differ (a rollout moved), so every poll brings a change. */
function churnBodies(n: number): Array<{ cohorts: string; plain: string; etag: string }> {
  return [0, 1].map((version) => {
    const defs = makeDefinitions(n) as { flags: Array<{ version: number }>; cohorts: unknown };
    for (const flag of defs.flags) flag.version += version;
    if (defs.flags.length === 0) (defs as Record<string, unknown>).revision = version;
    const cohorts = JSON.stringify(defs);
    const plain = JSON.stringify({ ...defs, cohorts: {} });
    return { cohorts, plain, etag: `W/"v${version}"` };
  });
}

/** A stand-in upstream whose local_evaluation answer alternates between two versions on every request. */
async function churningUpstream(n: number): Promise<{ server: Server; url: string; polls: () => number }> {
  const bodies = churnBodies(n);
  let served = 0;
  const server = createServer((req, res) => {
    if (!(req.url ?? '').includes('/local_evaluation')) return void res.writeHead(404).end('{}');
    const body = bodies[served % 2] as (typeof bodies)[number];
    served += 1;
    const withCohorts = (req.url ?? '').includes('send_cohorts');
    res.writeHead(200, { 'content-type': 'application/json', etag: body.etag }).end(withCohorts ? body.cohorts : body.plain);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, polls: () => served };
}

const mib = (x: number) => x.toFixed(1);

/** V8 heap in use (live data and not yet collected garbage), from the sidecar's own /metrics. */
async function heapUsedMiB(sidecar: Running): Promise<number> {
  const text = await (await fetch(`${sidecar.ops}/metrics`)).text();
  return Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1]) / 1024 / 1024;
}

async function main(): Promise<void> {
  if (!existsSync(join(root, 'dist/main.js'))) {
    console.error('dist/main.js is missing: run `npm run build` first.');
    process.exit(1);
  }
  const dir = mkdtempSync(join(tmpdir(), 'flag-sidecar-sizing-'));
  const keysFile = join(dir, 'keys.json');
  const sha256 = createHash('sha256').update(key).digest('hex');
  writeFileSync(keysFile, JSON.stringify({ keys: [{ sha256, label: 'sizing', scopes: ['feature_flag:read'] }] }));
  console.log(
    `node ${process.version}; settle ${settleMs} ms; online: definitions changing on every poll for ${churnSeconds} s, poll interval ${pollInterval}` +
      `${nodeOptions ? `; NODE_OPTIONS=${nodeOptions}` : ''}\n`,
  );
  const rows: string[] = [];
  try {
    for (const n of sizes) {
      const file = join(dir, `snapshot-${n}.json`);
      writeFileSync(file, JSON.stringify(makeDefinitions(n)));
      const kib = readFileSync(file).length / 1024;
      let heapMiB = Number.NaN;

      const offline = await startSidecar({ FLAG_SIDECAR_BOOTSTRAP_FILE: file, FLAG_SIDECAR_KEYS_FILE: keysFile, FLAG_SIDECAR_PROJECTS: `1:${token}` });
      let readyMs: number;
      let idle: { rss: number; peak: number };
      let used: { rss: number; peak: number };
      try {
        readyMs = await untilReady(offline);
        await sleep(settleMs);
        idle = memory(offline.child.pid);
        await exercise(offline);
        await sleep(settleMs);
        used = memory(offline.child.pid);
        heapMiB = await heapUsedMiB(offline);
      } finally {
        await stop(offline);
      }

      const upstream = await churningUpstream(n);
      const snapshotDir = join(dir, `snapshots-${n}`);
      const online = await startSidecar({
        FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
        FLAG_SIDECAR_UPSTREAM_KEY: key,
        FLAG_SIDECAR_PROJECTS: `1:${token}`,
        FLAG_SIDECAR_POLL_INTERVAL: pollInterval,
        FLAG_SIDECAR_SNAPSHOT_DIR: snapshotDir,
      });
      let churn: { rss: number; peak: number };
      let polls: number;
      try {
        await untilReady(online);
        await exercise(online);
        await sleep(churnSeconds * 1000);
        churn = memory(online.child.pid);
        polls = upstream.polls();
      } finally {
        await stop(online);
        upstream.server.close();
      }
      const row = `| ${n.toLocaleString('en-US')} | ${kib < 10 ? kib.toFixed(1) : kib.toFixed(0)} | ${readyMs.toFixed(0)} | ${mib(idle.rss)} | ${mib(used.rss)} | ${mib(heapMiB)} | ${mib(used.peak)} | ${mib(churn.rss)} | ${mib(churn.peak)} | ${polls} |`;
      console.log(row);
      rows.push(row);
    }
    if (rows.length > 0) {
      console.log(
        '\n| flags | bootstrap KiB | ready ms | offline idle RSS MiB | offline RSS after requests MiB | offline V8 heap used MiB | offline peak MiB | online, changing every poll: RSS MiB | online peak MiB | upstream answers |',
      );
      console.log('|---|---|---|---|---|---|---|---|---|---|');
      for (const row of rows) console.log(row);
    }
    if (semiSpaces.length > 0) await underLoad(dir, keysFile);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** RSS and throughput under saturating load, for each --max-semi-space-size. */
async function underLoad(dir: string, keysFile: string): Promise<void> {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error('SIZING_SEMI_SPACE needs wrk: apt-get install -y wrk');
  }
  const file = join(dir, 'snapshot-60.json');
  writeFileSync(file, JSON.stringify(makeDefinitions(60)));
  console.log(`\nunder load: 60 flags (${(readFileSync(file).length / 1024).toFixed(0)} KiB body), wrk -t1 -c50 for ${loadSeconds} s (3 s warm-up)`);
  console.log('| --max-semi-space-size | req/s | RSS before MiB | RSS after load MiB | peak MiB |');
  console.log('|---|---|---|---|---|');
  for (const semi of semiSpaces) {
    const env: Record<string, string> = { FLAG_SIDECAR_BOOTSTRAP_FILE: file, FLAG_SIDECAR_KEYS_FILE: keysFile, FLAG_SIDECAR_PROJECTS: `1:${token}` };
    if (semi !== 'default') env.NODE_OPTIONS = `--max-semi-space-size=${semi}`;
    const sidecar = await startSidecar(env, true);
    try {
      await untilReady(sidecar);
      await sleep(settleMs);
      const before = memory(sidecar.child.pid);
      const url = `${sidecar.api}/flags/definitions?token=${token}&send_cohorts`;
      const wrk = (seconds: number) =>
        execFileSync('taskset', ['-c', '1', 'wrk', '-t1', '-c50', `-d${seconds}s`, '-H', `Authorization: Bearer ${key}`, url], { encoding: 'utf8' });
      wrk(3);
      const out = wrk(loadSeconds);
      const after = memory(sidecar.child.pid);
      const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
      console.log(`| ${semi === 'default' ? 'default' : `${semi} MiB`} | ${rps.toFixed(0)} | ${mib(before.rss)} | ${mib(after.rss)} | ${mib(after.peak)} |`);
    } finally {
      await stop(sidecar);
    }
  }
}

await main();
