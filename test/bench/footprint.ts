/**
 * Footprint (issue 19): the built sidecar's RSS and start-up against a bare node process holding the same bytes,
 * as ratios measured in the same run. `BENCH_ONLY=footprint npm run bench`, or after `npm run build`:
 *
 *   npx tsx test/bench/footprint.ts
 *
 * For each round (BENCH_FOOTPRINT_ROUNDS, default 3; medians reported), fresh processes pinned to core 0:
 * - idle: `node dist/main.js` offline on a bootstrap file of makeDefinitions(n) for n = 30 and 1,000, and
 *   test/bench/bare-server.mjs on the same file (a node:http server holding those bytes); VmRSS 2 s after both are
 *   up, and again at 15 s (BENCH_FOOTPRINT_SETTLE_SECONDS), once V8's memory reducer, which runs some seconds after
 *   allocation stops, has given back what start-up grew (the sidecar's heap grows while it loads the snapshot);
 * - start → ready: from the sidecar's spawn until its /readyz answers 200, with 1,000 flags, and the CPU time the
 *   process had used by then (user + system, /proc; 10 ms ticks), which depends far less on the machine's load.
 *   On a node with a module compile cache (>= 22.1, the image's), every sidecar start here reads one warmed by
 *   scripts/warm-compile-cache.mjs, as the image's do (its Dockerfile); each round also times one start without it;
 * - after load: both servers on the 60-flag body of the snapshot bench, `wrk -t1 -c50` on core 1 for
 *   BENCH_FOOTPRINT_LOAD_SECONDS (default 10) against each (the sidecar's `/flags/definitions?send_cohorts`, the
 *   same bytes from the bare server), VmRSS right after; once with node's defaults and once with the image's
 *   NODE_OPTIONS (the Dockerfile's ENV, given to both processes).
 * Env: BENCH_NODE (the node binary run for both, e.g. .ci/node-lts/node_modules/.bin/node; default this one's);
 * BENCH_FOOTPRINT_MAIN (the sidecar's entry, default dist/main.js: another build to compare);
 * BENCH_FOOTPRINT_PORT_BASE (default 18110: the sidecar's API port; ops +1, the bare server +10, or
 * BENCH_FOOTPRINT_BARE_PORT).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { recordAim } from './aims.js';
import { makeDefinitions } from './definitions.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const node = process.env.BENCH_NODE ?? process.execPath;
const rounds = Number(process.env.BENCH_FOOTPRINT_ROUNDS ?? 3);
const loadSeconds = Number(process.env.BENCH_FOOTPRINT_LOAD_SECONDS ?? 10);
const settleSeconds = Number(process.env.BENCH_FOOTPRINT_SETTLE_SECONDS ?? 15);
const key = 'phx_footprint_key';
const token = 'phc_footprint';
const portBase = Number(process.env.BENCH_FOOTPRINT_PORT_BASE ?? 18110);
const apiPort = portBase;
const opsPort = portBase + 1;
const barePort = Number(process.env.BENCH_FOOTPRINT_BARE_PORT ?? portBase + 10);
const sidecarMain = process.env.BENCH_FOOTPRINT_MAIN ?? 'dist/main.js';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** The NODE_OPTIONS the image sets (its Dockerfile's ENV line), so the bench measures what is shipped. */
export function imageNodeOptions(dockerfile: string): string {
  const value = /NODE_OPTIONS="([^"]*)"/.exec(dockerfile)?.[1];
  if (value === undefined) throw new Error('no NODE_OPTIONS="…" in the Dockerfile');
  return value;
}

/** CPU time (user + system) `pid` has used, in ms. */
const cpuMs = (pid: number | undefined): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks of 10 ms
};

const rssMiB = (pid: number | undefined): number =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

function start(args: string[], env: Record<string, string>): ChildProcess {
  const child = spawn('taskset', ['-c', '0', node, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // stderr (the start-up banner, warnings) is kept and shown only if the process fails.
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => void (stderr = (stderr + chunk.toString('utf8')).slice(-4000)));
  child.on('exit', (code, signal) => {
    if (code !== 0 && signal === null) console.error(`${args.join(' ')} exited with ${code}:\n${stderr}`);
  });
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/** Milliseconds from `since` until `url` answers 200 (polled every 2 ms, at most 30 s). */
async function until200(url: string, since: number, child: ChildProcess): Promise<number> {
  while (performance.now() - since < 30_000) {
    if (child.exitCode !== null) throw new Error(`${url}: the process exited with ${child.exitCode}`);
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) return performance.now() - since;
    } catch {
      /* not listening yet */
    }
    await sleep(2);
  }
  throw new Error(`${url} did not answer 200 within 30 s`);
}

interface Processes {
  sidecar: ChildProcess;
  bare: ChildProcess;
  readyMs: number;
  readyCpuMs: number;
}

/** A fresh sidecar (offline on `file`) and bare server (same file), both up; `use` runs, then both stop. */
async function withPair<T>(dir: string, file: string, nodeOptions: string, use: (p: Processes) => Promise<T>): Promise<T> {
  const options: Record<string, string> = nodeOptions ? { NODE_OPTIONS: nodeOptions } : {};
  const spawned = performance.now();
  const sidecar = startSidecar(dir, file, { ...options, ...compileCache });
  let bare: ChildProcess | null = null;
  try {
    const readyMs = await until200(`http://127.0.0.1:${opsPort}/readyz`, spawned, sidecar);
    const readyCpuMs = cpuMs(sidecar.pid);
    bare = start(['test/bench/bare-server.mjs', file, String(barePort), 'W/"x"'], options);
    await until200(`http://127.0.0.1:${barePort}/`, performance.now(), bare);
    return await use({ sidecar, bare, readyMs, readyCpuMs });
  } finally {
    await Promise.all([stop(sidecar), ...(bare ? [stop(bare)] : [])]);
  }
}

/** The built sidecar offline on `file` with the footprint key, on the bench's ports. */
const startSidecar = (dir: string, file: string, env: Record<string, string>): ChildProcess =>
  start([sidecarMain], {
    ...env,
    FLAG_SIDECAR_BOOTSTRAP_FILE: file,
    FLAG_SIDECAR_KEYS_FILE: join(dir, 'keys.json'),
    FLAG_SIDECAR_PROJECTS: `1:${token}`,
    FLAG_SIDECAR_LISTEN: `127.0.0.1:${apiPort}`,
    FLAG_SIDECAR_OPS_LISTEN: `127.0.0.1:${opsPort}`,
    FLAG_SIDECAR_LOG_LEVEL: 'warn',
  });

/** Start → ready of one sidecar start with `env` (no bare server), in ms. */
async function timedStart(dir: string, file: string, env: Record<string, string>): Promise<number> {
  const spawned = performance.now();
  const sidecar = startSidecar(dir, file, env);
  try {
    return await until200(`http://127.0.0.1:${opsPort}/readyz`, spawned, sidecar);
  } finally {
    await stop(sidecar);
  }
}

/**
 * The environment of the image's starts: on a node with a module compile cache, one warmed for the sidecar's
 * entry by scripts/warm-compile-cache.mjs in `dir`, read-only (the Dockerfile's ENV); on an older node, none.
 */
function warmCompileCache(dir: string): Record<string, string> {
  const supported = execFileSync(node, ['-p', 'typeof require("node:module").enableCompileCache'], { encoding: 'utf8' }).trim() === 'function';
  if (!supported) return {};
  const cache = join(dir, 'compile-cache');
  execFileSync(node, ['scripts/warm-compile-cache.mjs', cache, sidecarMain], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  return { NODE_COMPILE_CACHE: cache, NODE_COMPILE_CACHE_READONLY: '1' };
}
let compileCache: Record<string, string> = {};

function load(url: string): void {
  execFileSync('taskset', ['-c', '1', 'wrk', '-t1', '-c50', `-d${loadSeconds}s`, '-H', `Authorization: Bearer ${key}`, url], { encoding: 'utf8' });
}

const ratio = (s: number, b: number) => `${s.toFixed(1)} / ${b.toFixed(1)} MiB = **${(s / b).toFixed(2)}×**`;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'flag-sidecar-footprint-'));
  const sha256 = createHash('sha256').update(key).digest('hex');
  writeFileSync(join(dir, 'keys.json'), JSON.stringify({ keys: [{ sha256, label: 'footprint', scopes: ['feature_flag:read'] }] }));
  const files = new Map([30, 60, 1000].map((n) => [n, join(dir, `snapshot-${n}.json`)]));
  for (const [n, file] of files) writeFileSync(file, JSON.stringify(makeDefinitions(n)));
  const image = imageNodeOptions(readFileSync(join(root, 'Dockerfile'), 'utf8'));
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  console.log(`footprint on node ${version}: ${rounds} rounds, medians; load: wrk -c50 for ${loadSeconds} s on the snapshot GET (60 flags)`);
  const idle = new Map<number, { s: number[]; b: number[] }>([30, 1000].map((n) => [n, { s: [], b: [] }]));
  const settled = new Map<number, { s: number[]; b: number[] }>([30, 1000].map((n) => [n, { s: [], b: [] }]));
  const ready: number[] = [];
  const readyCpu: number[] = [];
  compileCache = warmCompileCache(dir);
  const cached = compileCache.NODE_COMPILE_CACHE !== undefined;
  const readyUncached: number[] = [];
  const loaded = new Map<string, { s: number[]; b: number[] }>(['', image].map((o) => [o, { s: [], b: [] }]));
  try {
    for (let round = 0; round < rounds; round++) {
      for (const [n, sample] of idle) {
        await withPair(dir, files.get(n) as string, '', async ({ sidecar, bare, readyMs, readyCpuMs }) => {
          if (n === 1000) ready.push(readyMs);
          if (n === 1000) readyCpu.push(readyCpuMs);
          await sleep(2000);
          sample.s.push(rssMiB(sidecar.pid));
          sample.b.push(rssMiB(bare.pid));
          await sleep(settleSeconds * 1000 - 2000);
          const later = settled.get(n) as { s: number[]; b: number[] };
          later.s.push(rssMiB(sidecar.pid));
          later.b.push(rssMiB(bare.pid));
        });
      }
      if (cached) readyUncached.push(await timedStart(dir, files.get(1000) as string, {}));
      for (const [options, sample] of loaded) {
        await withPair(dir, files.get(60) as string, options, async ({ sidecar, bare }) => {
          load(`http://127.0.0.1:${apiPort}/flags/definitions?token=${token}&send_cohorts`);
          sample.s.push(rssMiB(sidecar.pid));
          load(`http://127.0.0.1:${barePort}/flags/definitions`);
          sample.b.push(rssMiB(bare.pid));
        });
      }
      const last = (m: ReadonlyMap<unknown, { s: number[]; b: number[] }>, k: 's' | 'b') => [...m.values()].map((x) => x[k].at(-1)?.toFixed(1)).join(' / ');
      console.log(
        `  round ${round + 1}: ready ${ready.at(-1)?.toFixed(0)} ms (${readyCpu.at(-1)?.toFixed(0)} ms CPU)${cached ? `, ${readyUncached.at(-1)?.toFixed(0)} ms without the compile cache` : ''}; idle 30 / 1,000 flags at 2 s: sidecar ${last(idle, 's')}, bare ${last(idle, 'b')} MiB; ` +
          `at ${settleSeconds} s: sidecar ${last(settled, 's')}, bare ${last(settled, 'b')} MiB; after load (defaults / image): sidecar ${last(loaded, 's')}, bare ${last(loaded, 'b')} MiB`,
      );
    }
    const i30 = idle.get(30) as { s: number[]; b: number[] };
    const i1000 = idle.get(1000) as { s: number[]; b: number[] };
    const plain = loaded.get('') as { s: number[]; b: number[] };
    const imaged = loaded.get(image) as { s: number[]; b: number[] };
    console.log(`\n| node ${version} (sidecar / bare, medians of ${rounds}) | value | aim |`);
    console.log('|---|---|---|');
    const s30 = settled.get(30) as { s: number[]; b: number[] };
    const s1000 = settled.get(1000) as { s: number[]; b: number[] };
    console.log(`| RSS idle 2 s after start, 30 flags | ${ratio(median(i30.s), median(i30.b))} | ≤ 1.2× |`);
    console.log(`| RSS idle 2 s after start, 1,000 flags | ${ratio(median(i1000.s), median(i1000.b))} | ≤ 1.2× |`);
    console.log(`| RSS idle ${settleSeconds} s after start, 30 flags | ${ratio(median(s30.s), median(s30.b))} | ≤ 1.2× |`);
    console.log(`| RSS idle ${settleSeconds} s after start, 1,000 flags | ${ratio(median(s1000.s), median(s1000.b))} | ≤ 1.2× |`);
    console.log(`| RSS after c=50 load, node defaults | ${ratio(median(plain.s), median(plain.b))} | ≤ 1.25× |`);
    console.log(`| RSS after c=50 load, NODE_OPTIONS="${image}" (the image's) | ${ratio(median(imaged.s), median(imaged.b))} | ≤ 1.25× |`);
    const how = cached ? 'with the image\'s compile cache' : 'no compile cache on this node';
    console.log(`| start → ready, 1,000 flags (${how}) | **${median(ready).toFixed(0)} ms** (${ready.map((x) => x.toFixed(0)).join(', ')}) | ≤ 250 ms |`);
    if (cached) console.log(`| start → ready, 1,000 flags, without the compile cache | ${median(readyUncached).toFixed(0)} ms (${readyUncached.map((x) => x.toFixed(0)).join(', ')}) | |`);
    console.log(`| CPU time of the sidecar from spawn to ready, 1,000 flags | ${median(readyCpu).toFixed(0)} ms (${readyCpu.map((x) => x.toFixed(0)).join(', ')}) | |`);
    const aim = (what: string, sample: { s: number[]; b: number[] }, atMost: number) =>
      recordAim({ part: 'footprint', what: `node ${version}: ${what}`, value: median(sample.s) / median(sample.b), unit: '×', atMost, detail: `${median(sample.s).toFixed(1)} / ${median(sample.b).toFixed(1)} MiB` });
    aim(`RSS idle ${settleSeconds} s after start, 30 flags, to a bare process holding the bytes`, s30, 1.2);
    aim(`RSS idle ${settleSeconds} s after start, 1,000 flags, to a bare process holding the bytes`, s1000, 1.2);
    aim('RSS after c=50 load (the image\'s NODE_OPTIONS), to the bare server after the same load', imaged, 1.25);
    recordAim({ part: 'footprint', what: `node ${version}: start → ready from disk, 1,000 flags (median)`, value: median(ready), unit: ' ms', atMost: 250, detail: `${how}; samples ${ready.map((x) => x.toFixed(0)).join(', ')}${cached ? `; without it ${median(readyUncached).toFixed(0)} ms` : ''}` });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
