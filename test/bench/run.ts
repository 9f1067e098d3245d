/**
 * `npm run bench`: load benchmark of the snapshot read path (200 with the body, and the 304 revalidation) and of
 * the read-through cache (a cached flag retrieve; concurrent misses coalescing) against a bare node:http server
 * sent the same request and returning the same bytes, measured in the same run. The servers are pinned to core 0
 * and wrk to core 1 (docs/architecture.md#performance-aims); each case is warmed up, then measured in alternating
 * rounds and the median kept.
 * Loopback only, bounded duration. Env: BENCH_SECONDS (per round, default 6), BENCH_ROUNDS (default 5),
 * BENCH_WARMUP_WINDOWS (3 s windows of load before a server's rounds, default 5), BENCH_CONNECTIONS (default 50),
 * BENCH_FLAGS (default 60), BENCH_ONLY (comma list of parts to run: snapshot, paced, read-through, endpoint-run,
 * footprint (or startup), eval, flags-http, regex, fleet, events, spool-replay, ofrep, offload; default all;
 * `instructions`, `instructions-flags` and `instructions-reads` only when named), BENCH_WRITE_DOCS (0: write nothing).
 * At the end it prints what every part recorded (aims.ts: the aims of issue 19 and the throughput ratios) and, when
 * the run completed, writes docs/benchmarks.svg (the ratios as a chart) and the "Latest results" of
 * docs/benchmarks.md from them (latest-results.ts), a partial run (BENCH_ONLY) saying so in both.
 * Fleet mode (issue 16): `fleet` runs test/bench/fleet.ts (upstream requests for 1/5/20 sidecars with and without
 * Redis, propagation of a change, leader failover, Redis commands and connections per pod; its own env
 * BENCH_FLEET_SECONDS, _CHANGES, _KILLS, _CHATTER_SECONDS, _CASES), then test/bench/fleet-scale.ts (issue 38:
 * Redis outage of a fleet of 1,000, change herd; BENCH_FLEET_SCALE, _OUTAGE_SECONDS, _HERD_CHANGES, _HERD_SIZES).
 * Named endpoints (issue 6): `endpoint-run` loads a cached `POST …/endpoints/NAME/run/` (an 8.7 KB HogQL result,
 * run upstream once) against the bare server returning the same body to the same POST, and against the bare
 * server reading the POST body first, in alternating rounds, then side by side with the bare server (both loaded
 * at once, so both feel the machine alike); `instructions` counts instructions per request for the same three
 * under valgrind (test/bench/instructions.sh), steady but blind to cache and inline-cache misses.
 * Local evaluation (issue 5): `eval` runs test/bench/eval.ts pinned to core 0 (the evaluator against posthog-node's
 * local evaluation, in process; its own env BENCH_EVAL_ROUNDS, BENCH_EVAL_MS); `flags-http` loads `POST /flags?v=2`
 * for one user and 30, 300 and 1,000 flags (BENCH_FLAGS_COUNTS) against test/bench/sdk-flags-server.mjs (the SDK's
 * local evaluation behind a bare node:http handler) and the bare server answering the sidecar's bytes, then the
 * sidecar paced, sent a new person each request (alternating with both references, sent the same bodies), and (a
 * second sidecar) the same person with the answer cache off;
 * `instructions-flags` counts instructions per request of the same under valgrind (test/bench/instructions.sh).
 * Events relay (issue 17): `events` runs test/bench/events.ts (events accepted per second on `POST /batch/`
 * against bare servers, and RSS with a full queue); `spool-replay` runs test/bench/spool-replay.ts (start-up, RSS
 * and drain time after a restart on a 200 MiB events spool).
 * OpenFeature (issue 20): `ofrep` loads single-flag OFREP evaluations (`POST /ofrep/v1/evaluate/flags/<first flag>`, the
 * `/flags` bench user as its context) against `POST /flags?v=2` for the same user (all 50 flags, and just that flag)
 * and the bare server reading the body and answering the OFREP bytes, in alternating rounds.
 * Footprint (issue 19): `footprint` runs test/bench/footprint.ts (RSS idle and after load against a bare node process
 * holding the same bytes, start → ready with 1,000 flags) on this Node and on the image's (.ci/node-lts) when installed.
 * Upstream offload (issue 19): `offload` runs test/bench/offload.ts (upstream /flags requests per 1,000 full
 * evaluations of projects holding each kind of flag the sidecar could not decide; counts, no timing).
 * Regex engine (issue 15): `regex` runs test/bench/regex.ts pinned to core 0 (re2js, the sidecar's regex engine,
 * against V8's RegExp in the same process; per match, compile, the pathological case).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { aimsTable, readAims, recordAim, references } from './aims.js';
import { benchUser, evalFlagKey, makeDefinitions, makeEvalDefinitions } from './definitions.js';
import { commitOf, writeLatestResults } from './latest-results.js';
import type { ChartRun } from './ratio-chart.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 6);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
/**
 * Load each server takes before its measured rounds, in windows of 3 s (BENCH_WARMUP_WINDOWS, default 5: 15 s). V8
 * optimizes a server's hot functions on a background thread, which on the one core the server is pinned to runs
 * only between requests: under saturating load the sidecar's CPU per request falls for its first 9–18 s (304: 17.9,
 * 16.5, 14.7, 14.8, 14.6, 14.2 µs in 3 s windows; the bare server, with less code, settles sooner but also within
 * ~12 s). Before 2026-11-27's second session the warm-up was 3 s, so the first rounds measured a sidecar still
 * compiling (docs/benchmarks.md, "How it measures").
 */
const warmupWindows = Number(process.env.BENCH_WARMUP_WINDOWS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const flagCount = Number(process.env.BENCH_FLAGS ?? 60);
/** The parts a run without BENCH_ONLY runs (a full run); `instructions…` only run when named. */
const allParts = ['snapshot', 'paced', 'read-through', 'endpoint-run', 'footprint', 'eval', 'flags-http', 'regex', 'fleet', 'events', 'spool-replay', 'ofrep', 'offload'];
const only = new Set((process.env.BENCH_ONLY ?? allParts.join(',')).split(',').map((part) => part.trim()));
const key = 'phx_bench_key';
const token = 'phc_bench';

function requireWrk(): void {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      console.error('wrk is not installed: apt-get install -y wrk (Debian package), then run again.');
      process.exit(1);
    }
  }
}

function start(command: string, args: string[], env: Record<string, string>): ChildProcess {
  const child = spawn('taskset', ['-c', '0', command, ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  child.on('exit', (code, signal) => {
    if (code !== 0 && signal === null) console.error(`${command} ${args.join(' ')} exited with ${code}`);
  });
  return child;
}

/** The built sidecar on `file` (offline unless `extra` says otherwise), the bench key in its keys file, on core 0. */
const startSidecar = (dir: string, file: string, extra: Record<string, string> = {}): ChildProcess =>
  start('node', ['dist/main.js'], {
    FLAG_SIDECAR_BOOTSTRAP_FILE: file,
    FLAG_SIDECAR_KEYS_FILE: join(dir, 'keys.json'),
    FLAG_SIDECAR_PROJECTS: `1:${token}`,
    FLAG_SIDECAR_LISTEN: '127.0.0.1:18010',
    FLAG_SIDECAR_OPS_LISTEN: '127.0.0.1:18011',
    FLAG_SIDECAR_LOG_LEVEL: 'warn',
    ...extra,
  });

async function waitUp(url: string, headers: Record<string, string>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(url, { headers })).ok) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url} did not come up`);
}

interface Result {
  rps: number;
  p50: number;
  p99: number;
  /** Server CPU time (user + system) per request, in µs: steadier than req/s on a shared machine. */
  cpuUs: number;
}

/** CPU time (user + system) a process has used, in seconds (from /proc, clock ticks of 10 ms). */
const cpuSeconds = (pid: number | undefined): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

const toMs = (text: string): number => {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text);
  if (!m) return Number.NaN;
  return Number(m[1]) * ({ us: 0.001, ms: 1, s: 1000 } as Record<string, number>)[m[2] as string]!;
};

const wrkArgs = (url: string, headers: Record<string, string>, duration: number, script?: string): string[] => {
  // A 30 s timeout: the SDK's server takes tens of ms per 1,000-flag request, so 50 queued ones pass wrk's 2 s default
  // (and, once, 10 s: one request of 152 timed out at 1,000 flags, which voided the whole run).
  const args = ['-c', '1', 'wrk', '-t1', `-c${connections}`, `-d${duration}s`, '--timeout', '30s', '--latency', ...(script ? ['-s', script] : [])];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`);
  return [...args, url];
};

/** wrk's report as a Result; throws on any error wrk saw. */
function wrkResult(out: string, url: string, server: ChildProcess, cpuBefore: number): Result {
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const p50 = toMs(/\s50%\s+(\S+)/.exec(out)?.[1] ?? '');
  const p99 = toMs(/\s99%\s+(\S+)/.exec(out)?.[1] ?? '');
  const errors = /Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)/.exec(out);
  if (errors) throw new Error(`wrk saw errors against ${url}:\n${out}`);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
  return { rps, p50, p99, cpuUs: ((cpuSeconds(server.pid) - cpuBefore) * 1e6) / requests };
}

function wrk(url: string, headers: Record<string, string>, duration: number, server: ChildProcess, script?: string): Result {
  const cpuBefore = cpuSeconds(server.pid);
  return wrkResult(execFileSync('taskset', wrkArgs(url, headers, duration, script), { encoding: 'utf8' }), url, server, cpuBefore);
}

/** wrk started now, for runs side by side (see paired). */
async function wrkAsync(url: string, headers: Record<string, string>, duration: number, server: ChildProcess, script?: string): Promise<Result> {
  const cpuBefore = cpuSeconds(server.pid);
  const child = spawn('taskset', wrkArgs(url, headers, duration, script), { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`wrk exited with ${code} against ${url}`);
  return wrkResult(out, url, server, cpuBefore);
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const rssMiB = (pid: number | undefined): number => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) / 1024;
};

/**
 * Run `body` with a fresh sidecar (offline on `file`, the bench key) and a fresh bare server on the same file,
 * both pinned to core 0; both are stopped afterwards, whatever happens.
 */
async function withServers<T>(
  dir: string,
  file: string,
  etag: string,
  body: (sidecar: ChildProcess, bare: ChildProcess) => Promise<T>,
  sidecarEnv: Record<string, string> = {},
  bareFile = file,
): Promise<T> {
  const sidecar = startSidecar(dir, file, sidecarEnv);
  const bare = start('node', ['test/bench/bare-server.mjs', bareFile, '18020', etag], {});
  try {
    return await body(sidecar, bare);
  } finally {
    sidecar.kill('SIGTERM');
    bare.kill('SIGTERM');
    await Promise.all([once(sidecar, 'exit'), once(bare, 'exit')]);
  }
}

/**
 * The sidecar's request sent to a reference server on `port`: the same path, query and (where callers pass them)
 * headers, so that both parse the same bytes (the Authorization header and the longer request line cost node's
 * parser and header handling ~1% of a read-through hit; before 2026-11-26's fourth session the references were
 * sent `/` or a bare path without headers). The bare server answers every path alike.
 */
function sameRequestOn(url: string, port: number): string {
  const target = new URL(url);
  target.port = String(port);
  return target.href;
}

/**
 * A second bare server (on `port`, same file and ETag as the first) for an A/A control: alternating rounds on this
 * VM move ±30% from one to the next, so a case also reports what the same rounds make of two identical servers.
 */
const startSecondBare = (file: string, port: number, etag: string): ChildProcess => start('node', ['test/bench/bare-server.mjs', file, String(port), etag], {});

/** The A/A control of a run: the second bare server's throughput over the first's, per round and median. */
function aaControl(second: Result[], bare: Result[]): string {
  const aa = second.map((x, i) => x.rps / (bare[i] as Result).rps);
  return `A/A control (a second bare server against the first) ${median(aa).toFixed(2)}× (rounds ${aa.map((x) => x.toFixed(2)).join(', ')})`;
}

/** Records a case's A/A control, drawn in the chart beside the case: how far this run moved two identical servers apart. */
function recordAaControl(part: string, name: string, second: Result[], bare: Result[]): void {
  const aa = second.map((x, i) => x.rps / (bare[i] as Result).rps);
  recordAim({
    part,
    what: `${name}: A/A control, a second bare server's throughput ratio to the first (median of rounds)`,
    value: median(aa),
    unit: '×',
    detail: `rounds ${aa.map((x) => x.toFixed(2)).join(', ')}`,
    chart: { label: `A/A control: a second bare server (${name})`, reference: references.bare, control: true },
  });
}

async function stopped(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'exit');
}

async function main(): Promise<void> {
  if (only.has('eval')) evalPart();
  if (only.has('regex')) regexPart();
  if (only.has('offload')) offloadPart();
  if ([...only].every((part) => part === 'eval' || part === 'regex' || part === 'fleet' || part === 'offload')) {
    if (only.has('fleet')) fleetPart();
    return;
  }
  requireWrk();
  buildDist();
  if (only.has('footprint') || only.has('startup')) footprintPart();
  if ([...only].every((part) => part === 'eval' || part === 'regex' || part === 'fleet' || part === 'events' || part === 'spool-replay' || part === 'offload' || part === 'footprint' || part === 'startup')) {
    if (only.has('fleet')) fleetPart(false);
    if (only.has('events')) eventsPart();
    if (only.has('spool-replay')) spoolReplayPart();
    return;
  }

  const dir = mkdtempSync(join(tmpdir(), 'flag-sidecar-bench-'));
  const body = JSON.stringify(makeDefinitions(flagCount));
  writeFileSync(join(dir, 'snapshot.json'), body);
  const sha256 = createHash('sha256').update(key).digest('hex');
  writeFileSync(join(dir, 'keys.json'), JSON.stringify({ keys: [{ sha256, label: 'bench', scopes: ['feature_flag:read', 'endpoint:read'] }] }));
  const etag = `W/"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`;

  const auth = { Authorization: `Bearer ${key}` };
  const sidecarUrl = `http://127.0.0.1:18010/flags/definitions?token=${token}&send_cohorts`;
  const bareUrl = sameRequestOn(sidecarUrl, 18020);
  const cases = [
    { name: '200 (body)', chart: `snapshot GET 200 (${(body.length / 1000).toFixed(0)} KB body)`, sidecar: [sidecarUrl, auth], bare: [bareUrl, auth] },
    { name: '304 (If-None-Match)', chart: 'snapshot GET 304 (If-None-Match)', sidecar: [sidecarUrl, { ...auth, 'If-None-Match': etag }], bare: [bareUrl, { ...auth, 'If-None-Match': etag }] },
  ] as const;
  console.log(`body ${body.length} bytes, ${flagCount} flags; ${connections} connections; ${rounds} rounds × ${seconds}s per server and case`);
  const rows: string[] = [];
  const rss: string[] = [];
  // Each case gets fresh server processes, so one case's JIT and heap state cannot colour the next.
  for (const c of only.has('snapshot') ? cases : []) {
    await withServers(dir, join(dir, 'snapshot.json'), etag, async (sidecar, bare) => {
      const bare2 = startSecondBare(join(dir, 'snapshot.json'), 18022, etag);
      try {
        await waitUp(sidecarUrl, auth);
        await waitUp(bareUrl, {});
        const bare2Url = sameRequestOn(sidecarUrl, 18022);
        await waitUp(bare2Url, {});
        const { s, b, r } = alternateRounds(c.sidecar[0], c.sidecar[1], sidecar, c.bare[0], bare, undefined, c.bare[1], { url: bare2Url, server: bare2 });
        const sm = { rps: median(s.map((x) => x.rps)), p50: median(s.map((x) => x.p50)), p99: median(s.map((x) => x.p99)) };
        const bm = { rps: median(b.map((x) => x.rps)), p50: median(b.map((x) => x.p50)), p99: median(b.map((x) => x.p99)) };
        // Each round pairs two back-to-back runs; the median of the per-round ratios resists the machine's drift.
        const ratios = s.map((x, i) => x.rps / (b[i] as Result).rps);
        const cpuRatios = s.map((x, i) => (b[i] as Result).cpuUs / x.cpuUs);
        rows.push(
          `| ${c.name} | ${bm.rps.toFixed(0)} | ${sm.rps.toFixed(0)} | **${median(ratios).toFixed(3)}** | ${median(b.map((x) => x.cpuUs)).toFixed(1)} / ${median(s.map((x) => x.cpuUs)).toFixed(1)} | **${median(cpuRatios).toFixed(3)}** | ${bm.p50.toFixed(2)} / ${bm.p99.toFixed(2)} | ${sm.p50.toFixed(2)} / ${sm.p99.toFixed(2)} |`,
        );
        rss.push(`${c.name}: sidecar ${rssMiB(sidecar.pid).toFixed(1)} MiB, bare ${rssMiB(bare.pid).toFixed(1)} MiB`);
        recordAim({
          part: 'snapshot',
          what: `snapshot GET ${c.name}: throughput ratio to the bare server (median of rounds)`,
          value: median(ratios),
          unit: '×',
          atLeast: 0.95,
          detail: `rounds ${ratios.map((x) => x.toFixed(2)).join(', ')}; CPU efficiency ${median(cpuRatios).toFixed(2)}×; ${aaControl(r, b)}`,
          chart: { label: c.chart, reference: references.bare },
        });
        recordAaControl('snapshot', `snapshot ${c.name.split(' ')[0]}`, r, b);
        console.log(`${c.name}: req/s per round: sidecar ${s.map((x) => x.rps.toFixed(0)).join(', ')}; bare ${b.map((x) => x.rps.toFixed(0)).join(', ')}; ratios ${ratios.map((x) => x.toFixed(3)).join(', ')}; CPU µs/req sidecar ${s.map((x) => x.cpuUs.toFixed(1)).join(', ')}, bare ${b.map((x) => x.cpuUs.toFixed(1)).join(', ')}; ${aaControl(r, b)}`);
        // The same two processes loaded at once: both feel the machine alike (paired), so this view moves little
        // between runs, where the alternating rounds' ratio moved by up to 0.15 (docs/benchmarks.md, "How it measures").
        console.log(`  ${c.name}, ${await paired(c.sidecar[0], c.sidecar[1], sidecar, bare)}`);
      } finally {
        await stopped(bare2);
      }
    });
  }
  if (rows.length > 0) printTable(rows, rss);
  if (only.has('paced')) await paced(dir, etag, auth, sidecarUrl, bareUrl);
  if (only.has('read-through')) await readThrough(dir, auth);
  if (only.has('endpoint-run')) await endpointRun(dir, auth);
  if (only.has('instructions')) {
    writeRunFiles(dir);
    execFileSync('bash', ['test/bench/instructions.sh', dir], { cwd: root, stdio: 'inherit' });
  }
  if (only.has('instructions-reads')) {
    writeFlagFile(dir);
    writeFileSync(join(dir, 'etag.txt'), etag);
    execFileSync('bash', ['test/bench/instructions.sh', dir, 'reads'], { cwd: root, stdio: 'inherit' });
  }
  if (only.has('instructions-flags')) {
    const counts = (process.env.INSTR_FLAG_COUNTS ?? '30 1000').split(' ').map(Number);
    for (const count of counts) writeFileSync(join(dir, `flags-defs-${count}.json`), JSON.stringify(makeEvalDefinitions(count)));
    writeFileSync(join(dir, 'flags-body.json'), JSON.stringify({ token, distinct_id: benchUser.distinctId, person_properties: benchUser.personProperties, groups: benchUser.groups, group_properties: benchUser.groupProperties }));
    execFileSync('bash', ['test/bench/instructions.sh', dir, 'flags'], { cwd: root, stdio: 'inherit' });
  }
  if (only.has('flags-http')) await flagsHttp(dir);
  if (only.has('ofrep')) await ofrepPart(dir);
  if (only.has('fleet')) fleetPart(false);
  if (only.has('events')) eventsPart();
  if (only.has('spool-replay')) spoolReplayPart();
}

function buildDist(): void {
  console.log('building dist/ …');
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: root, stdio: 'inherit' });
}

/**
 * Fleet mode (issues 16 and 38): test/bench/fleet.ts, sidecar processes with and without a private redis-server;
 * then test/bench/fleet-scale.ts, a Redis outage with a counted fleet of 1,000 and the change herd at 5/20/50.
 */
function fleetPart(build = true): void {
  if (build) buildDist();
  execFileSync(process.execPath, ['--import', 'tsx', 'test/bench/fleet.ts'], { cwd: root, stdio: 'inherit' });
  execFileSync(process.execPath, ['--import', 'tsx', 'test/bench/fleet-scale.ts'], { cwd: root, stdio: 'inherit' });
}

/**
 * Footprint (issue 19): test/bench/footprint.ts after dist/ is built — RSS idle and after load against a bare node
 * process holding the same bytes, and start → ready — on this Node and, when `npm ci --prefix .ci/node-lts` has
 * installed it, on the image's Node LTS.
 */
function footprintPart(): void {
  execFileSync(process.execPath, ['--import', 'tsx', 'test/bench/footprint.ts'], { cwd: root, stdio: 'inherit' });
  const lts = join(root, '.ci/node-lts/node_modules/.bin/node');
  if (existsSync(lts)) execFileSync(process.execPath, ['--import', 'tsx', 'test/bench/footprint.ts'], { cwd: root, stdio: 'inherit', env: { ...process.env, BENCH_NODE: lts } });
  else console.log('footprint: .ci/node-lts not installed (npm ci --prefix .ci/node-lts), so not measured on the image\'s Node');
}

/** Upstream offload (issue 19): test/bench/offload.ts, upstream /flags requests per 1,000 full evaluations. */
function offloadPart(): void {
  execFileSync(process.execPath, ['--import', 'tsx', 'test/bench/offload.ts'], { cwd: root, stdio: 'inherit' });
}

/** The events relay (issue 17): test/bench/events.ts, after dist/ is built. */
function eventsPart(): void {
  execFileSync(process.execPath, ['--import', 'tsx', 'test/bench/events.ts'], { cwd: root, stdio: 'inherit' });
}

/** Replay of a large events spool after a restart (test/bench/spool-replay.ts), after dist/ is built. */
function spoolReplayPart(): void {
  execFileSync(process.execPath, ['--import', 'tsx', 'test/bench/spool-replay.ts'], { cwd: root, stdio: 'inherit' });
}

/** The evaluator against the SDK's local evaluation, in one process pinned to core 0 (test/bench/eval.ts). */
function evalPart(): void {
  console.log('eval: evaluator vs posthog-node local evaluation (test/bench/eval.ts, core 0) …');
  execFileSync('taskset', ['-c', '0', process.execPath, '--expose-gc', '--import', 'tsx', 'test/bench/eval.ts'], { cwd: root, stdio: 'inherit' });
}

/** The regex engines in one process pinned to core 0 (test/bench/regex.ts). */
function regexPart(): void {
  console.log('regex: re2js vs V8 RegExp (test/bench/regex.ts, core 0) …');
  execFileSync('taskset', ['-c', '0', process.execPath, '--import', 'tsx', 'test/bench/regex.ts'], { cwd: root, stdio: 'inherit' });
}

/**
 * `POST /flags?v=2` for one user (eight person properties, a company group) and N flags (definitions.ts; N from
 * BENCH_FLAGS_COUNTS, default 30,300,1000): the sidecar, offline on those definitions, against two references in
 * alternating rounds, each pinned to core 0, wrk on core 1 with a fixed JSON body: the SDK's local evaluation
 * behind a bare node:http handler (sdk-flags-server.mjs), and the bare server reading the body and answering the
 * bytes the sidecar answered (bare-server.mjs read-body). Then the sidecar alone below saturation.
 */
async function flagsHttp(dir: string): Promise<void> {
  const counts = (process.env.BENCH_FLAGS_COUNTS ?? '30,300,1000').split(',').map(Number);
  const requestBody = JSON.stringify({
    token,
    distinct_id: benchUser.distinctId,
    person_properties: benchUser.personProperties,
    groups: benchUser.groups,
    group_properties: benchUser.groupProperties,
  });
  const script = join(dir, 'flags-post.lua');
  writeFileSync(script, `wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = [==[${requestBody}]==]\n`);
  // Below saturation: each connection waits 10 ms between requests (~4,000 req/s offered by 50 connections).
  const pacedScript = join(dir, 'flags-post-paced.lua');
  writeFileSync(pacedScript, `${readFileSync(script, 'utf8')}function delay()\n  return 10\nend\n`);
  // A new person each request (distinct ids from a counter), where the bench user is the same in every request:
  // what a cache between requests (the bucketing hashes kept per person, hash-memo.ts) cannot help.
  const variedScript = join(dir, 'flags-post-varied.lua');
  const [head, tail] = requestBody.split(JSON.stringify(benchUser.distinctId)) as [string, string];
  writeFileSync(
    variedScript,
    `wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nlocal n = 0\n` +
      `request = function()\n  n = n + 1\n  return wrk.format(nil, nil, nil, [==[${head}]==] .. '"person-' .. n .. '"' .. [==[${tail}]==])\nend\n`,
  );
  const rows: string[] = [];
  for (const count of counts) rows.push(await flagsHttpCase(dir, count, requestBody, script, pacedScript, variedScript));
  console.log(
    `\n| flags | sidecar req/s | sidecar CPU µs/req (per flag) | bare same bytes: req/s, CPU µs/req | ratio to bare: throughput / CPU | SDK server: req/s, CPU µs/req | ratio to SDK: throughput / CPU | p50 / p99 ms sidecar, bare, SDK |\n|---|---|---|---|---|---|---|---|`,
  );
  for (const row of rows) console.log(row);
}

async function flagsHttpCase(dir: string, count: number, requestBody: string, script: string, pacedScript: string, variedScript: string): Promise<string> {
  const file = join(dir, `eval-definitions-${count}.json`);
  writeFileSync(file, JSON.stringify(makeEvalDefinitions(count)));
  const sidecarUrl = 'http://127.0.0.1:18010/flags?v=2';
  const sdkUrl = 'http://127.0.0.1:18050/flags?v=2';
  const bareUrl = 'http://127.0.0.1:18020/flags?v=2';
  const sidecar = startSidecar(dir, file);
  const sdk = start('node', ['test/bench/sdk-flags-server.mjs'], { BENCH_DEFINITIONS_FILE: file, BENCH_PORT: '18050' });
  let bare: ChildProcess | undefined;
  try {
    await waitUp('http://127.0.0.1:18011/readyz', {});
    await waitUp('http://127.0.0.1:18050/', {});
    // One request each before any load: both must answer 200 with the same decisions, or the comparison is void.
    const answer = async (url: string): Promise<string> => {
      const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: requestBody });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`flags-http: POST ${url} answered ${response.status}, not 200:\n${text.slice(0, 500)}`);
      return text;
    };
    const decisions = (text: string): Record<string, unknown> => {
      const parsed = JSON.parse(text) as { flags?: Record<string, { enabled?: unknown; variant?: unknown; metadata?: { payload?: unknown } }>; errorsWhileComputingFlags?: unknown };
      if (typeof parsed.flags !== 'object' || parsed.flags === null) throw new Error(`flags-http: no v2 flags map:\n${text.slice(0, 500)}`);
      if (parsed.errorsWhileComputingFlags !== false) throw new Error(`flags-http: errorsWhileComputingFlags: ${String(parsed.errorsWhileComputingFlags)}`);
      return Object.fromEntries(Object.entries(parsed.flags).map(([k, d]) => [k, [d.enabled, d.variant, d.metadata?.payload ?? null]]));
    };
    const sidecarAnswer = await answer(sidecarUrl);
    const ours = decisions(sidecarAnswer);
    // posthog-node's local evaluation lists an inactive flag as false; upstream's flags service, and so the sidecar,
    // leaves it out (docs/evaluation.md): compared on the active flags.
    const inactive = new Set(
      (JSON.parse(readFileSync(file, 'utf8')) as { flags: { key: string; active?: boolean }[] }).flags.filter((f) => f.active === false).map((f) => f.key),
    );
    const theirs = Object.fromEntries(Object.entries(decisions(await answer(sdkUrl))).filter(([k]) => !inactive.has(k)));
    const keys = Object.keys(theirs);
    const differing = [...new Set([...keys, ...Object.keys(ours)])].filter((k) => JSON.stringify(ours[k]) !== JSON.stringify(theirs[k]));
    if (differing.length > 0) {
      throw new Error(`flags-http: the sidecar and the SDK server disagree on ${differing.join(', ')}: ${JSON.stringify(differing.slice(0, 3).map((k) => ({ k, sidecar: ours[k], sdk: theirs[k] })))}`);
    }
    const answerFile = join(dir, `flags-answer-${count}.json`);
    writeFileSync(answerFile, sidecarAnswer);
    bare = start('node', ['test/bench/bare-server.mjs', answerFile, '18020', 'W/"x"', 'read-body'], {});
    await waitUp('http://127.0.0.1:18020/', {});
    console.log(`flags-http, ${count} flags: the sidecar and the SDK server answer 200 with the same ${keys.length} flags; request ${requestBody.length} B, answer ${Buffer.byteLength(sidecarAnswer)} B`);
    const { s, b, r } = alternateRounds(sidecarUrl, {}, sidecar, sdkUrl, sdk, script, {}, { url: bareUrl, server: bare });
    const m = (xs: Result[], k: keyof Result) => median(xs.map((x) => x[k]));
    const ratio = (ref: Result[], k: 'rps' | 'cpuUs') => median(s.map((x, i) => (k === 'rps' ? x.rps / (ref[i] as Result).rps : (ref[i] as Result).cpuUs / x.cpuUs)));
    console.log(
      `  per round: sidecar req/s ${s.map((x) => x.rps.toFixed(0)).join(', ')}, CPU µs/req ${s.map((x) => x.cpuUs.toFixed(1)).join(', ')}; ` +
        `bare req/s ${r.map((x) => x.rps.toFixed(0)).join(', ')}; SDK req/s ${b.map((x) => x.rps.toFixed(0)).join(', ')}; ` +
        `RSS after load: sidecar ${rssMiB(sidecar.pid).toFixed(1)} MiB, SDK server ${rssMiB(sdk.pid).toFixed(1)} MiB`,
    );
    const p: Result[] = [];
    for (let round = 0; round < rounds; round++) p.push(wrk(sidecarUrl, {}, seconds, sidecar, pacedScript));
    const perRound = (ref: Result[]) => s.map((x, i) => (x.rps / (ref[i] as Result).rps).toFixed(2)).join(', ');
    const rest = `CPU ratio ${ratio(r, 'cpuUs').toFixed(2)}×; rounds ${perRound(r)}`;
    const flags = `${count.toLocaleString('en-US')} flags`;
    const sameBody = { label: `/flags?v=2, ${flags}, the same body`, reference: references.bare };
    const toSdk = {
      part: 'flags-http',
      what: `POST /flags?v=2, ${count} flags: throughput ratio to posthog-node behind node:http`,
      value: ratio(b, 'rps'),
      unit: '×',
      detail: `CPU ratio ${ratio(b, 'cpuUs').toFixed(1)}×; rounds ${perRound(b)}`,
      chart: { ...sameBody, reference: references.sdk },
    };
    if (count <= 30) {
      recordAim({ part: 'flags-http', what: `POST /flags?v=2, ${count} flags: sidecar CPU per request`, value: m(s, 'cpuUs'), unit: ' µs', atMost: 45 });
      recordAim({ part: 'flags-http', what: `POST /flags?v=2, ${count} flags: throughput ratio to the bare server (same bytes)`, value: ratio(r, 'rps'), unit: '×', atLeast: 0.35, detail: rest, chart: sameBody });
      recordAim({ ...toSdk, atLeast: 20 });
    } else {
      recordAim({ part: 'flags-http', what: `POST /flags?v=2, ${count} flags: sidecar CPU per flag, end to end`, value: m(s, 'cpuUs') / count, unit: ' µs', atMost: 1 });
      recordAim({ part: 'flags-http', what: `POST /flags?v=2, ${count} flags: throughput ratio to the bare server (same bytes)`, value: ratio(r, 'rps'), unit: '×', atLeast: 0.5, detail: rest, chart: sameBody });
      recordAim(toSdk);
    }
    console.log(`  paced (each of ${connections} connections waiting 10 ms between requests): ~${m(p, 'rps').toFixed(0)} req/s; sidecar p50 / p99 ms ${m(p, 'p50').toFixed(2)} / ${m(p, 'p99').toFixed(2)}`);
    // A new person each request, alternating with both references sent the same bodies: the sidecar evaluates each
    // one (no kept answer), so its evaluation code is warmed first; the references do the same work as before.
    warm(sidecarUrl, {}, sidecar, variedScript);
    const v: Result[] = [];
    const vr: Result[] = [];
    const vb: Result[] = [];
    for (let round = 0; round < rounds; round++) {
      v.push(wrk(sidecarUrl, {}, seconds, sidecar, variedScript));
      vr.push(wrk(bareUrl, {}, seconds, bare, variedScript));
      vb.push(wrk(sdkUrl, {}, seconds, sdk, variedScript));
    }
    const varied = (ref: Result[]): number[] => v.map((x, i) => x.rps / (ref[i] as Result).rps);
    const list = (xs: number[]): string => xs.map((x) => x.toFixed(2)).join(', ');
    console.log(
      `  a new person each request: sidecar req/s ${v.map((x) => x.rps.toFixed(0)).join(', ')}, CPU µs/req ${v.map((x) => x.cpuUs.toFixed(1)).join(', ')}; ` +
        `throughput ratio to the bare server ${median(varied(vr)).toFixed(2)}× (rounds ${list(varied(vr))}), to the SDK server ${median(varied(vb)).toFixed(1)}× (rounds ${list(varied(vb))}); ` +
        `${(m(v, 'cpuUs') / m(s, 'cpuUs')).toFixed(2)}× the CPU per request of the same person`,
    );
    const newPerson = { label: `/flags?v=2, ${flags}, a new person each request`, reference: references.bare };
    recordAim({
      part: 'flags-http',
      what: `POST /flags?v=2, ${count} flags, a new person each request: throughput ratio to the bare server (same bytes)`,
      value: median(varied(vr)),
      unit: '×',
      detail: `CPU ${m(v, 'cpuUs').toFixed(1)} µs/req (${(m(v, 'cpuUs') / count).toFixed(2)} per flag); rounds ${list(varied(vr))}`,
      chart: newPerson,
    });
    recordAim({
      part: 'flags-http',
      what: `POST /flags?v=2, ${count} flags, a new person each request: throughput ratio to posthog-node behind node:http`,
      value: median(varied(vb)),
      unit: '×',
      detail: `rounds ${list(varied(vb))}`,
      chart: { ...newPerson, reference: references.sdk },
    });
    // The same person with the answer cache off: what evaluating each request costs (as for a body that changes each
    // time in something no flag reads, or a project whose answers could not be kept).
    const offPort = 18012;
    const off = startSidecar(dir, file, { FLAG_SIDECAR_FLAGS_ANSWER_CACHE_MAX_BYTES: '0', FLAG_SIDECAR_LISTEN: `127.0.0.1:${offPort}`, FLAG_SIDECAR_OPS_LISTEN: `127.0.0.1:${offPort + 1}` });
    try {
      await waitUp(`http://127.0.0.1:${offPort + 1}/readyz`, {});
      const offUrl = `http://127.0.0.1:${offPort}/flags?v=2`;
      warm(offUrl, {}, off, script);
      const o: Result[] = [];
      for (let round = 0; round < rounds; round++) o.push(wrk(offUrl, {}, seconds, off, script));
      console.log(
        `  the same person, answer cache off (FLAG_SIDECAR_FLAGS_ANSWER_CACHE_MAX_BYTES=0): sidecar req/s ${o.map((x) => x.rps.toFixed(0)).join(', ')}, CPU µs/req ${o.map((x) => x.cpuUs.toFixed(1)).join(', ')} ` +
          `(${(m(o, 'cpuUs') / count).toFixed(2)} per flag); median ${(m(o, 'rps') / m(r, 'rps')).toFixed(2)}× the bare server's median req/s (rounds apart, not alternated)`,
      );
    } finally {
      off.kill('SIGTERM');
      await once(off, 'exit');
    }
    return (
      `| ${count} | ${m(s, 'rps').toFixed(0)} | ${m(s, 'cpuUs').toFixed(1)} (${(m(s, 'cpuUs') / count).toFixed(2)}) | ${m(r, 'rps').toFixed(0)}, ${m(r, 'cpuUs').toFixed(1)} | ` +
      `**${ratio(r, 'rps').toFixed(2)}** / **${ratio(r, 'cpuUs').toFixed(2)}** | ${m(b, 'rps').toFixed(0)}, ${m(b, 'cpuUs').toFixed(1)} | **${ratio(b, 'rps').toFixed(1)}** / **${ratio(b, 'cpuUs').toFixed(1)}** | ` +
      `${m(s, 'p50').toFixed(2)} / ${m(s, 'p99').toFixed(2)}, ${m(r, 'p50').toFixed(2)} / ${m(r, 'p99').toFixed(2)}, ${m(b, 'p50').toFixed(2)} / ${m(b, 'p99').toFixed(2)} |`
    );
  } finally {
    const children = [sidecar, sdk, ...(bare ? [bare] : [])];
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((child) => once(child, 'exit')));
  }
}

/** A wrk script POSTing `body` as JSON. */
function postScript(dir: string, name: string, body: string): string {
  const file = join(dir, name);
  writeFileSync(file, `wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = [==[${body}]==]\n`);
  return file;
}

/**
 * OpenFeature (issue 20): single-flag OFREP evaluations per second against `POST /flags?v=2` for the same user
 * (all 50 flags; only that flag) and the bare node:http server reading the body and answering the same OFREP
 * bytes, in alternating rounds; the sidecar offline on the eval definitions, everything on core 0, wrk on core 1.
 */
async function ofrepPart(dir: string): Promise<void> {
  const file = join(dir, 'eval-definitions.json');
  writeFileSync(file, JSON.stringify(makeEvalDefinitions()));
  const key = evalFlagKey(0);
  const context = { targetingKey: benchUser.distinctId, ...benchUser.personProperties, groups: benchUser.groups, group_properties: benchUser.groupProperties };
  const flagsBody = { token, distinct_id: benchUser.distinctId, person_properties: benchUser.personProperties, groups: benchUser.groups, group_properties: benchUser.groupProperties };
  const cases = [
    { name: `OFREP single flag (${key})`, url: `http://127.0.0.1:18010/ofrep/v1/evaluate/flags/${key}`, script: postScript(dir, 'ofrep.lua', JSON.stringify({ context })) },
    { name: 'POST /flags?v=2, 50 flags', url: 'http://127.0.0.1:18010/flags?v=2', script: postScript(dir, 'ofrep-flags.lua', JSON.stringify(flagsBody)) },
    { name: `POST /flags?v=2, flag_keys_to_evaluate [${key}]`, url: 'http://127.0.0.1:18010/flags?v=2', script: postScript(dir, 'ofrep-flags-one.lua', JSON.stringify({ ...flagsBody, flag_keys_to_evaluate: [key] })) },
  ];
  const sidecar = startSidecar(dir, file);
  let bare: ChildProcess | null = null;
  try {
    await waitUp('http://127.0.0.1:18011/readyz', {});
    const first = await fetch(cases[0]!.url, { method: 'POST', body: JSON.stringify({ context }) });
    const answer = await first.text();
    if (first.status !== 200 || !('value' in (JSON.parse(answer) as object))) throw new Error(`ofrep: ${cases[0]!.url} answered ${first.status}: ${answer}`);
    console.log(`ofrep: ${key} → ${answer}`);
    const bareFile = join(dir, 'ofrep-answer.json');
    writeFileSync(bareFile, answer);
    bare = start('node', ['test/bench/bare-server.mjs', bareFile, '18020', '"x"', 'read-body'], {});
    await waitUp('http://127.0.0.1:18020/', {});
    const all = [...cases, { name: 'bare node:http (reads the body, same OFREP bytes)', url: 'http://127.0.0.1:18020/', script: cases[0]!.script }];
    for (const c of all) warm(c.url, {}, c.name.startsWith('bare') ? bare : sidecar, c.script);
    const results = all.map(() => [] as Result[]);
    for (let round = 0; round < rounds; round++) {
      all.forEach((c, i) => results[i]!.push(wrk(c.url, {}, seconds, c.name.startsWith('bare') ? (bare as ChildProcess) : sidecar, c.script)));
    }
    const m = (xs: Result[], k: keyof Result) => median(xs.map((x) => x[k]));
    const bareRps = results[all.length - 1]!.map((x) => x.rps);
    console.log(`\n| case (${connections} connections) | req/s per round | req/s (median) | ratio to bare (median of rounds) | CPU µs/req | p50 / p99 ms |\n|---|---|---|---|---|---|`);
    all.forEach((c, i) => {
      const r = results[i]!;
      const ratios = r.map((x, j) => x.rps / (bareRps[j] as number));
      console.log(`| ${c.name} | ${r.map((x) => x.rps.toFixed(0)).join(', ')} | ${m(r, 'rps').toFixed(0)} | **${median(ratios).toFixed(2)}** | ${m(r, 'cpuUs').toFixed(1)} | ${m(r, 'p50').toFixed(2)} / ${m(r, 'p99').toFixed(2)} |`);
    });
    const single = results[0]!.map((x, j) => x.rps / (bareRps[j] as number));
    recordAim({
      part: 'ofrep',
      what: `OFREP single flag (${key}): throughput ratio to the bare server reading the body (same OFREP bytes)`,
      value: median(single),
      unit: '×',
      detail: `rounds ${single.map((x) => x.toFixed(2)).join(', ')}; CPU µs/req ${m(results[0]!, 'cpuUs').toFixed(1)}`,
      chart: { label: 'OFREP single-flag evaluation (POST, 50 flags)', reference: references.bare },
    });
  } finally {
    sidecar.kill('SIGTERM');
    bare?.kill('SIGTERM');
    await Promise.all([once(sidecar, 'exit'), ...(bare ? [once(bare, 'exit')] : [])]);
  }
}

function printTable(rows: string[], rss: string[]): void {
  console.log(
    '\n| case | bare req/s (median) | sidecar req/s (median) | throughput ratio (median of rounds) | CPU µs/req bare / sidecar | CPU efficiency ratio (bare/sidecar) | bare p50 / p99 ms | sidecar p50 / p99 ms |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
  console.log(`\nRSS after load: ${rss.join('; ')}`);
}

/** Warm both servers up (3 s each), then BENCH_ROUNDS timed wrk rounds alternating sidecar and bare server. */
function alternateRounds(
  sidecarUrl: string,
  auth: Record<string, string>,
  sidecar: ChildProcess,
  bareUrl: string,
  bare: ChildProcess,
  script?: string,
  bareHeaders: Record<string, string> = {},
  second?: { url: string; server: ChildProcess },
): { s: Result[]; b: Result[]; r: Result[] } {
  const warmed = [`sidecar ${warm(sidecarUrl, auth, sidecar, script)}`, `reference ${warm(bareUrl, bareHeaders, bare, script)}`];
  if (second) warmed.push(`second reference ${warm(second.url, bareHeaders, second.server, script)}`);
  console.log(`  warm-up, CPU µs/req per 3 s window: ${warmed.join('; ')}`);
  const s: Result[] = [];
  const b: Result[] = [];
  const r: Result[] = [];
  for (let round = 0; round < rounds; round++) {
    s.push(wrk(sidecarUrl, auth, seconds, sidecar, script));
    b.push(wrk(bareUrl, bareHeaders, seconds, bare, script));
    if (second) r.push(wrk(second.url, bareHeaders, seconds, second.server, script));
  }
  return { s, b, r };
}

/**
 * Load a server for warmupWindows windows of 3 s before it is measured (see warmupWindows); returns its CPU per
 * request in each window, for the record.
 */
function warm(url: string, headers: Record<string, string>, server: ChildProcess, script?: string): string {
  const cpu: string[] = [];
  for (let i = 0; i < warmupWindows; i++) cpu.push(wrk(url, headers, 3, server, script).cpuUs.toFixed(1));
  return cpu.join(', ');
}

/**
 * Warm both servers up, then alternate timed wrk rounds (sidecar at `sidecarUrl`, the bare server on 18020 and the
 * `second` reference each sent the same request: `sameRequestOn`), and summarize: median req/s, per-round and
 * median throughput ratios, CPU per request and its ratio, p99.
 */
function alternate(
  sidecarUrl: string,
  auth: Record<string, string>,
  sidecar: ChildProcess,
  bare: ChildProcess,
  script?: string,
  second?: { port: number; server: ChildProcess; name: string; control?: boolean },
  aim?: { part: string; what: string; atLeast?: number; chart?: { label: string; reference: string } },
): string {
  const reference = second === undefined ? undefined : { url: sameRequestOn(sidecarUrl, second.port), server: second.server };
  const { s, b, r } = alternateRounds(sidecarUrl, auth, sidecar, sameRequestOn(sidecarUrl, 18020), bare, script, auth, reference);
  const ratios = s.map((x, i) => x.rps / (b[i] as Result).rps);
  const cpuRatios = s.map((x, i) => (b[i] as Result).cpuUs / x.cpuUs);
  if (aim !== undefined) {
    recordAim({
      ...aim,
      value: median(ratios),
      unit: '×',
      detail:
        `rounds ${ratios.map((x) => x.toFixed(2)).join(', ')}; CPU efficiency ${median(cpuRatios).toFixed(2)}×` +
        (second === undefined ? '' : second.control === true ? `; ${aaControl(r, b)}` : `; against the ${second.name} ${median(s.map((x, i) => x.rps / (r[i] as Result).rps)).toFixed(2)}×`),
    });
    if (second?.control === true) recordAaControl(aim.part, aim.part, r, b);
  }
  const against = (ref: Result[]): string =>
    `throughput ratio median **${median(s.map((x, i) => x.rps / (ref[i] as Result).rps)).toFixed(3)}**, CPU efficiency ratio median **${median(s.map((x, i) => (ref[i] as Result).cpuUs / x.cpuUs)).toFixed(3)}**`;
  return (
    `req/s bare ${median(b.map((x) => x.rps)).toFixed(0)}, sidecar ${median(s.map((x) => x.rps)).toFixed(0)}; ` +
    `throughput ratio per round ${ratios.map((x) => x.toFixed(3)).join(', ')}, median **${median(ratios).toFixed(3)}**; ` +
    `CPU µs/req bare ${median(b.map((x) => x.cpuUs)).toFixed(1)}, sidecar ${median(s.map((x) => x.cpuUs)).toFixed(1)}, ` +
    `CPU efficiency ratio median **${median(cpuRatios).toFixed(3)}**; p99 ms bare ${median(b.map((x) => x.p99)).toFixed(2)}, sidecar ${median(s.map((x) => x.p99)).toFixed(2)}` +
    (second === undefined
      ? ''
      : `\n  against the ${second.name} (req/s ${median(r.map((x) => x.rps)).toFixed(0)}, CPU µs/req ${median(r.map((x) => x.cpuUs)).toFixed(1)}): ${against(r)}; ` +
        `it against the bare server: throughput ${median(r.map((x, i) => x.rps / (b[i] as Result).rps)).toFixed(3)}, CPU ${median(r.map((x, i) => (b[i] as Result).cpuUs / x.cpuUs)).toFixed(3)}`)
  );
}

/**
 * The sidecar and the bare server (on 18020) loaded at the same time, both on core 0 with one wrk each on core 1,
 * for BENCH_ROUNDS rounds: whatever else the machine does during a round, both feel it alike, so per-round ratios
 * move less than those of alternating rounds. CPU efficiency (the bare server's CPU per request over the
 * sidecar's) is its figure, as it does not depend on how the scheduler split the core; the throughput ratio does,
 * and is shown beside it. Sharing one core's caches weighs on the server touching more memory, so this is the
 * harsher view for the sidecar. The two wrk share core 1 (together they used under half of it, measured: the
 * servers stay the bottleneck).
 */
async function paired(sidecarUrl: string, auth: Record<string, string>, sidecar: ChildProcess, bare: ChildProcess, script?: string): Promise<string> {
  const s: Result[] = [];
  const b: Result[] = [];
  for (let round = 0; round < rounds; round++) {
    // Both runs end (wrk stops after its duration) before a failure of either is reported: no wrk is left behind.
    const [x, y] = await Promise.allSettled([wrkAsync(sidecarUrl, auth, seconds, sidecar, script), wrkAsync(sameRequestOn(sidecarUrl, 18020), auth, seconds, bare, script)]);
    if (x.status === 'rejected') throw x.reason;
    if (y.status === 'rejected') throw y.reason;
    s.push(x.value);
    b.push(y.value);
  }
  const cpu = s.map((x, i) => (b[i] as Result).cpuUs / x.cpuUs);
  const throughput = s.map((x, i) => x.rps / (b[i] as Result).rps);
  const list = (xs: number[]): string => xs.map((x) => x.toFixed(3)).join(', ');
  return (
    `side by side (both at once on one core): CPU efficiency ratio per round ${list(cpu)}, median **${median(cpu).toFixed(3)}**; ` +
    `throughput ratio per round ${list(throughput)}, median ${median(throughput).toFixed(3)}; ` +
    `CPU µs/req bare ${median(b.map((x) => x.cpuUs)).toFixed(1)}, sidecar ${median(s.map((x) => x.cpuUs)).toFixed(1)}`
  );
}

/**
 * The read-through path: a flag retrieve answered from the sidecar's cache (the stand-in upstream answered it
 * once) against the bare server returning the same flag body; then 200 concurrent first requests for another
 * flag while upstream takes 200 ms, counting the upstream requests they caused.
 */
/** The flag retrieve body the stand-in upstream answers for any flag (2.9 KB), as `dir`/flag.json. */
function writeFlagFile(dir: string): string {
  const flagFile = join(dir, 'flag.json');
  const flag = (makeDefinitions(1) as { flags: Array<Record<string, unknown>> }).flags[0] as Record<string, unknown>;
  writeFileSync(flagFile, JSON.stringify({ ...flag, created_by: { id: 1, email: 'a@example.com' }, can_edit: false, tags: [], status: 'ACTIVE', description: 'x'.repeat(2000) }));
  return flagFile;
}

async function readThrough(dir: string, auth: Record<string, string>): Promise<void> {
  const flagFile = writeFlagFile(dir);
  const upstream = start('node', ['test/bench/upstream-server.mjs', join(dir, 'snapshot.json'), flagFile, '18030', '200'], {});
  const env = {
    FLAG_SIDECAR_UPSTREAM_URL: 'http://127.0.0.1:18030',
    FLAG_SIDECAR_UPSTREAM_KEY: 'phs_benchown',
    FLAG_SIDECAR_CACHE_TTL: '1h',
  };
  try {
    await withServers(
      dir,
      join(dir, 'snapshot.json'),
      'W/"x"',
      async (sidecar, bare) => {
        const sidecarUrl = 'http://127.0.0.1:18010/api/projects/1/feature_flags/1/';
        const bare2 = startSecondBare(flagFile, 18022, 'W/"x"');
        try {
          await waitUp(sidecarUrl, auth);
          await waitUp('http://127.0.0.1:18020/', {});
          await waitUp('http://127.0.0.1:18022/', {});
          const second = { port: 18022, server: bare2, name: 'second bare server', control: true };
          const summary = alternate(sidecarUrl, auth, sidecar, bare, undefined, second, {
            part: 'read-through',
            what: 'read-through hit (cached flag retrieve): throughput ratio to the bare server (median of rounds)',
            atLeast: 0.92,
            chart: { label: 'read-through hit (cached flag retrieve, 2.9 KB)', reference: references.bare },
          });
          console.log(`read-through cached hit (flag retrieve, ${readFileSync(flagFile).length} B): ${summary}`);
          console.log(`  ${await paired(sidecarUrl, auth, sidecar, bare)}`);
          const before = Number(await (await fetch('http://127.0.0.1:18030/__count')).text());
          const started = performance.now();
          const answers = await Promise.all(
            Array.from({ length: 200 }, () => fetch('http://127.0.0.1:18010/api/projects/1/feature_flags/2/', { headers: auth }).then((r) => r.status)),
          );
          const elapsed = performance.now() - started;
          const after = Number(await (await fetch('http://127.0.0.1:18030/__count')).text());
          console.log(
            `read-through coalescing: 200 concurrent first requests for one flag (upstream takes 200 ms) → ${after - before} upstream request(s); ` +
              `${answers.filter((x) => x === 200).length} answered 200 in ${elapsed.toFixed(0)} ms`,
          );
        } finally {
          await stopped(bare2);
        }
      },
      env,
      flagFile,
    );
  } finally {
    upstream.kill('SIGTERM');
    await once(upstream, 'exit');
  }
}

/**
 * A named-endpoint run answered from the sidecar's run cache: the first run went upstream (which granted the
 * bench key that endpoint), every later identical run is a memory read — route, credential, scope check, body
 * read and parse, canonical run key, grant lookup, cache lookup, reply, metrics. wrk POSTs the same JSON body
 * to the sidecar and to the bare server (which answers the run's body).
 */
/** The run result the stand-in upstream answers (run.json) and the run request's body (body.json), in `dir`. */
function writeRunFiles(dir: string): { runFile: string; body: string } {
  const runFile = join(dir, 'run.json');
  const rows = Array.from({ length: 200 }, (_, i) => [`2026-11-${String((i % 28) + 1).padStart(2, '0')}`, `/pricing/${i}`, 1000 + i * 7, (i * 0.37).toFixed(2)]);
  writeFileSync(
    runFile,
    JSON.stringify({
      columns: ['day', 'path', 'views', 'rate'],
      types: [['day', 'Date'], ['path', 'String'], ['views', 'UInt64'], ['rate', 'Float64']],
      results: rows,
      hasMore: false,
      is_cached: false,
      last_refresh: '2026-11-23T10:00:00Z',
      next_allowed_client_refresh: '2026-11-23T10:01:00Z',
      timezone: 'UTC',
    }),
  );
  const body = JSON.stringify({ variables: { since: '2026-11-01', country: 'GB' }, refresh: 'blocking' });
  writeFileSync(join(dir, 'body.json'), body);
  return { runFile, body };
}

async function endpointRun(dir: string, auth: Record<string, string>): Promise<void> {
  const { runFile, body } = writeRunFiles(dir);
  const script = join(dir, 'run.lua');
  writeFileSync(script, `wrk.method = "POST"\nwrk.body = '${body}'\nwrk.headers["Content-Type"] = "application/json"\n`);
  const upstream = start('node', ['test/bench/upstream-server.mjs', join(dir, 'snapshot.json'), join(dir, 'snapshot.json'), '18030', '50', runFile], {});
  const env = {
    FLAG_SIDECAR_UPSTREAM_URL: 'http://127.0.0.1:18030',
    FLAG_SIDECAR_UPSTREAM_KEY: 'phs_benchown',
    FLAG_SIDECAR_ENDPOINT_RUN_TTL: '1h',
  };
  const sidecarUrl = 'http://127.0.0.1:18010/api/projects/1/endpoints/daily_views/run/';
  // A second reference: the bare server reading the POST body before it answers (which any server answering by
  // the body must do; the first one never reads it).
  const reading = start('node', ['test/bench/bare-server.mjs', runFile, '18021', 'W/"x"', 'read-body'], {});
  try {
    await withServers(
      dir,
      join(dir, 'snapshot.json'),
      'W/"x"',
      async (sidecar, bare) => {
        await waitUp('http://127.0.0.1:18011/readyz', {});
        const first = await fetch(sidecarUrl, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body });
        if (first.status !== 200) throw new Error(`the first run answered ${first.status}: ${await first.text()}`);
        await first.arrayBuffer();
        await waitUp('http://127.0.0.1:18020/', {});
        await waitUp('http://127.0.0.1:18021/', {});
        const summary = alternate(sidecarUrl, auth, sidecar, bare, script, { port: 18021, server: reading, name: 'bare server reading the body' }, {
          part: 'endpoint-run',
          what: 'endpoint run from the run cache: throughput ratio to the bare server (median of rounds)',
          chart: { label: 'endpoint run from the run cache (8.7 KB)', reference: references.bare },
        });
        console.log(`endpoint run from the run cache (${readFileSync(runFile).length} B result): ${summary}`);
        console.log(`  ${await paired(sidecarUrl, auth, sidecar, bare, script)}`);
        const runs = Number(await (await fetch('http://127.0.0.1:18030/__count')).text());
        console.log(`  upstream ran the query ${runs} time(s) in all`);
      },
      env,
      runFile,
    );
  } finally {
    upstream.kill('SIGTERM');
    reading.kill('SIGTERM');
    await Promise.all([once(upstream, 'exit'), once(reading, 'exit')]);
  }
}

/**
 * Latency below saturation: the same 50 connections, each pausing 2 ms between requests (wrk's delay() hook),
 * so both servers see the same offered load well under their capacity and p99 shows service time, not queueing.
 */
async function paced(dir: string, etag: string, auth: Record<string, string>, sidecarUrl: string, bareUrl: string): Promise<void> {
  const script = join(dir, 'paced.lua');
  writeFileSync(script, 'function delay()\n  return 2\nend\n');
  await withServers(dir, join(dir, 'snapshot.json'), etag, async (sidecar, bare) => {
    await waitUp(sidecarUrl, auth);
    await waitUp(bareUrl, {});
    const { s, b } = alternateRounds(sidecarUrl, auth, sidecar, bareUrl, bare, script, auth);
    const p = (xs: Result[], k: 'p50' | 'p99' | 'rps') => median(xs.map((x) => x[k]));
    console.log(
      `paced 200 (body), 50 connections each waiting 2 ms between requests: offered ~${p(s, 'rps').toFixed(0)} req/s; ` +
        `p50 / p99 ms: bare ${p(b, 'p50').toFixed(2)} / ${p(b, 'p99').toFixed(2)}, sidecar ${p(s, 'p50').toFixed(2)} / ${p(s, 'p99').toFixed(2)}`,
    );
  });
}

/**
 * The run as the chart's title and the results section name it: its date, Node, commit (taken before anything runs),
 * the parts when not all of them ran, and the settings and load that make its figures comparable or not.
 */
function describeRun(commit: string, loadAtStart: number): ChartRun {
  const partial = allParts.some((part) => !only.has(part)) ? [...only] : undefined;
  const settings = `${rounds} rounds of ${seconds} s after ${warmupWindows} warm-up windows of 3 s, ${connections} connections`;
  return {
    date: new Date().toISOString().slice(0, 10),
    node: process.version,
    commit,
    ...(partial === undefined ? {} : { partial }),
    note: `${settings}; load average ${loadAtStart.toFixed(1)} at start, ${loadavg()[0]!.toFixed(1)} at end`,
  };
}

// Every part records what it measured (aims.ts) in one file, shared with the scripts it starts; at the end the run
// prints them as a table and, unless BENCH_WRITE_DOCS=0, writes docs/benchmarks.svg and the latest results of
// docs/benchmarks.md from them (latest-results.ts). A run that fails part-way writes neither.
const aimsFile = join(mkdtempSync(join(tmpdir(), 'flag-sidecar-aims-')), 'aims.jsonl');
process.env.BENCH_AIMS_FILE = aimsFile;
const runCommit = commitOf(root);
const loadAtStart = loadavg()[0]!;
let completed = false;
try {
  await main();
  completed = true;
} finally {
  const results = readAims(aimsFile);
  const table = aimsTable(results);
  if (table !== null) console.log(`\nAims and ratios, this run:\n\n${table}`);
  if (completed && process.env.BENCH_WRITE_DOCS !== '0') {
    const files = { docFile: join(root, 'docs/benchmarks.md'), svgFile: join(root, 'docs/benchmarks.svg'), image: 'benchmarks.svg' };
    console.log(`\n${writeLatestResults(results, describeRun(runCommit, loadAtStart), files)}`);
  }
}
