/**
 * Events relay benchmark (issue 17), run by `npm run bench` (BENCH_ONLY=events) after dist/ is built.
 * 1. Events accepted per second: wrk (core 1, BENCH_CONNECTIONS connections, default 50) POSTs one 100-event
 *    posthog-node batch to `/batch/` — the body posthog-node 5 itself sent to a capturing server, plain and gzip —
 *    against the sidecar (core 0, forwarding to a stand-in upstream on core 1 that reads each batch and answers
 *    200, so the queue drains) and against two bare node:http servers on core 0 answering `{"status":1}`: one only
 *    reading the body, one also gunzipping and JSON.parsing it (the least a relay that looks at events must do).
 *    Alternating rounds (BENCH_ROUNDS × BENCH_SECONDS), medians and per-round ratios; any non-2xx fails the run.
 * 2. RSS with a full queue: the sidecar with its events URL on a closed port, fed batches until it answers 503
 *    (queue at FLAG_SIDECAR_EVENTS_QUEUE_MAX_BYTES, default 64 MiB), against the bare server after taking the same
 *    requests.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync, gzipSync } from 'node:zlib';
import { PostHog } from 'posthog-node';
import { makeDefinitions } from './definitions.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const token = 'phc_bench';
const batchEvents = 100;
const sidecarPort = 18010;
const barePort = 18020;
const parsePort = 18021;
const upstreamPort = 18031;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function start(core: number, args: string[], env: Record<string, string> = {}): ChildProcess {
  const child = spawn('taskset', ['-c', String(core), process.execPath, ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  child.on('exit', (code, signal) => {
    if (code !== 0 && signal === null) console.error(`${args.join(' ')} exited with ${code}`);
  });
  return child;
}

async function stop(...children: ChildProcess[]): Promise<void> {
  await Promise.all(children.map((child) => (child.exitCode !== null || child.signalCode !== null ? undefined : (child.kill('SIGTERM'), once(child, 'exit')))));
}

async function waitUp(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      await (await fetch(url)).arrayBuffer();
      return;
    } catch {
      await sleep(50);
    }
  }
  throw new Error(`${url} did not come up`);
}

/** The JSON text posthog-node 5 sends for 100 captures (flushAt 100), as a capturing server received it. */
async function sdkBatch(): Promise<string> {
  let resolveBody: (body: string) => void = () => undefined;
  const got = new Promise<string>((resolve) => (resolveBody = resolve));
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":1}');
      if (req.url?.startsWith('/batch')) resolveBody((raw[0] === 0x1f ? gunzipSync(raw) : raw).toString('utf8'));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = new PostHog(token, { host: `http://127.0.0.1:${(server.address() as { port: number }).port}`, flushAt: batchEvents, flushInterval: 60_000 });
  for (let i = 0; i < batchEvents; i++) {
    client.capture({
      distinctId: `user-${i % 17}`,
      event: i % 5 === 0 ? '$feature_flag_called' : 'order placed',
      properties:
        i % 5 === 0
          ? { $feature_flag: 'checkout-redesign', $feature_flag_response: 'test', locally_evaluated: false, $feature_flag_request_id: 'b2b9c3c6-1d2e-4f3a-9b8c-0d1e2f3a4b5c' }
          : { order_id: `ord_${100000 + i}`, amount: 42.5 + i, currency: 'EUR', items: 3, plan: 'pro', $current_url: `https://shop.example.com/checkout/${i}` },
      groups: { company: 'acme-inc' },
    });
  }
  const body = await got;
  await client.shutdown();
  server.close();
  return body;
}

interface Result {
  /** Requests answered 200 per second (events accepted = 100 × this). */
  readonly rps: number;
  /** Share of answers that were 503 (queue full: backpressure, the SDK sends the batch again). */
  readonly refused: number;
  readonly p99: number;
  /** Server CPU (user + system) per request, µs. */
  readonly cpuUs: number;
}

const cpuSeconds = (pid: number | undefined): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
};
const rssMiB = (pid: number | undefined): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const toMs = (text: string): number => {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text);
  return m ? Number(m[1]) * ({ us: 0.001, ms: 1, s: 1000 } as Record<string, number>)[m[2] as string]! : Number.NaN;
};

/**
 * One wrk run (core 1) of `script` against `url`, waiting up to 10 s per answer (a full queue's slow answers are
 * measured, not counted as errors). Non-2xx answers are the 503s of a full queue (the wrk script
 * counts any other status and the run fails on it, as on socket errors); rps and CPU count only the 200s.
 */
function wrk(url: string, script: string, duration: number, server: ChildProcess): Result {
  const before = cpuSeconds(server.pid);
  const out = execFileSync('taskset', ['-c', '1', 'wrk', '-t1', `-c${connections}`, `-d${duration}s`, '--timeout', '10s', '--latency', '-s', script, url], { encoding: 'utf8' });
  if (/Socket errors|unexpected status/.test(out)) throw new Error(`wrk saw errors against ${url}:\n${out}`);
  const m = /(\d+) requests in ([\d.]+)(ms|s)/.exec(out);
  const requests = Number(m?.[1]);
  const elapsed = Number(m?.[2]) / (m?.[3] === 'ms' ? 1000 : 1);
  const accepted = requests - Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  if (!(accepted > 0)) throw new Error(`no request was accepted by ${url}:\n${out}`);
  return { rps: accepted / elapsed, refused: 1 - accepted / requests, p99: toMs(/\s99%\s+(\S+)/.exec(out)?.[1] ?? ''), cpuUs: ((cpuSeconds(server.pid) - before) * 1e6) / accepted };
}

/** A wrk script POSTing `bodyFile` (read as bytes) with `headers`. */
function script(dir: string, name: string, bodyFile: string, headers: Record<string, string>): string {
  const file = join(dir, `${name}.lua`);
  const lines = Object.entries(headers).map(([k, v]) => `wrk.headers["${k}"] = "${v}"`);
  const check = ['function response(status, headers, body)', '  if status ~= 200 and status ~= 503 then', '    print("unexpected status " .. status)', '  end', 'end'];
  writeFileSync(file, [`local f = io.open("${bodyFile}", "rb")`, 'wrk.body = f:read("*a")', 'f:close()', 'wrk.method = "POST"', ...lines, ...check, ''].join('\n'));
  return file;
}

const metric = (text: string, name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);

function sidecarEnv(dir: string, eventsUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    FLAG_SIDECAR_BOOTSTRAP_FILE: join(dir, 'snapshot.json'),
    FLAG_SIDECAR_KEYS_FILE: join(dir, 'keys.json'),
    FLAG_SIDECAR_PROJECTS: `1:${token}`,
    FLAG_SIDECAR_LISTEN: `127.0.0.1:${sidecarPort}`,
    FLAG_SIDECAR_OPS_LISTEN: '127.0.0.1:18011',
    FLAG_SIDECAR_LOG_LEVEL: 'error',
    FLAG_SIDECAR_EVENTS_URL: eventsUrl,
    ...extra,
  };
}

async function throughput(dir: string, label: string, bodyFile: string, headers: Record<string, string>, env: Record<string, string> = {}): Promise<string> {
  const ok = join(dir, 'ok.json');
  const upstream = start(1, ['test/bench/bare-server.mjs', ok, String(upstreamPort), 'x', 'sink']);
  const sidecar = start(0, ['dist/main.js'], sidecarEnv(dir, `http://127.0.0.1:${upstreamPort}`, env));
  const bare = start(0, ['test/bench/bare-server.mjs', ok, String(barePort), 'x', 'sink']);
  const parsing = start(0, ['test/bench/bare-server.mjs', ok, String(parsePort), 'x', 'sink-parse']);
  try {
    await Promise.all([waitUp('http://127.0.0.1:18011/readyz'), ...[upstreamPort, barePort, parsePort].map((p) => waitUp(`http://127.0.0.1:${p}/__count`))]);
    const lua = script(dir, label, bodyFile, headers);
    const targets = [
      { url: `http://127.0.0.1:${sidecarPort}/batch/`, server: sidecar },
      { url: `http://127.0.0.1:${barePort}/batch/`, server: bare },
      { url: `http://127.0.0.1:${parsePort}/batch/`, server: parsing },
    ];
    for (const t of targets) wrk(t.url, lua, 3, t.server);
    const s: Result[] = [];
    const b: Result[] = [];
    const p: Result[] = [];
    for (let round = 0; round < rounds; round++) {
      s.push(wrk(targets[0]!.url, lua, seconds, sidecar));
      b.push(wrk(targets[1]!.url, lua, seconds, bare));
      p.push(wrk(targets[2]!.url, lua, seconds, parsing));
    }
    // Every accepted event reaches the stand-in upstream: wait for the queue to drain, then compare the counters.
    let text = '';
    for (let i = 0; i < 1200; i++) {
      text = await (await fetch('http://127.0.0.1:18011/metrics')).text();
      if (metric(text, 'flag_sidecar_events_queue_events') === 0) break;
      await sleep(100);
    }
    const received = metric(text, 'flag_sidecar_events_received_total');
    const forwarded = metric(text, 'flag_sidecar_events_forwarded_total');
    const upstreamBatches = Number(await (await fetch(`http://127.0.0.1:${upstreamPort}/__count`)).text());
    const ratio = (ref: Result[], k: 'rps' | 'cpuUs', inverse = false): string =>
      median(s.map((x, i) => (inverse ? (ref[i] as Result)[k] / x[k] : x[k] / (ref[i] as Result)[k]))).toFixed(3);
    const ev = (xs: Result[]): string => (median(xs.map((x) => x.rps)) * batchEvents).toFixed(0);
    const us = (xs: Result[]): string => (median(xs.map((x) => x.cpuUs)) / batchEvents).toFixed(2);
    const p99 = (xs: Result[]): string => median(xs.map((x) => x.p99)).toFixed(2);
    const refused = `${(median(s.map((x) => x.refused)) * 100).toFixed(0)}%`;
    console.log(
      `events ${label}: per-round sidecar events/s ${s.map((x) => (x.rps * batchEvents).toFixed(0)).join(', ')}; bare ${b.map((x) => (x.rps * batchEvents).toFixed(0)).join(', ')}; ` +
        `bare+parse ${p.map((x) => (x.rps * batchEvents).toFixed(0)).join(', ')}; sidecar received ${received}, forwarded ${forwarded} in ${upstreamBatches} upstream batches`,
    );
    if (received !== forwarded) throw new Error(`the sidecar forwarded ${forwarded} of ${received} accepted events`);
    return (
      `| ${label} | ${ev(b)} | ${ev(p)} | ${ev(s)} | ${refused} | **${ratio(b, 'rps')}** / ${ratio(p, 'rps')} | ${us(b)} / ${us(p)} / ${us(s)} | ` +
      `**${ratio(b, 'cpuUs', true)}** / ${ratio(p, 'cpuUs', true)} | ${p99(b)} / ${p99(p)} / ${p99(s)} |`
    );
  } finally {
    await stop(sidecar, bare, parsing, upstream);
  }
}

/** POST `body` to `url` from 8 connections until one answer is not 200 (or `max` requests); the 200s taken. */
async function fill(url: string, body: Buffer, max: number): Promise<number> {
  let accepted = 0;
  let full = false;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (!full && accepted < max) {
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        await res.arrayBuffer();
        if (res.status === 200) accepted += 1;
        else if (res.status === 503) full = true;
        else throw new Error(`${url} answered ${res.status}`);
      }
    }),
  );
  return accepted;
}

async function fullQueue(dir: string, body: Buffer): Promise<string> {
  // Events URL on a port nothing listens on: every forward fails and is retried, the queue only grows.
  const sidecar = start(0, ['dist/main.js'], sidecarEnv(dir, 'http://127.0.0.1:18039', { FLAG_SIDECAR_EVENTS_QUEUE_MAX_EVENTS: '10000000' }));
  const bare = start(0, ['test/bench/bare-server.mjs', join(dir, 'ok.json'), String(barePort), 'x', 'sink']);
  try {
    await Promise.all([waitUp('http://127.0.0.1:18011/readyz'), waitUp(`http://127.0.0.1:${barePort}/__count`)]);
    const idle = rssMiB(sidecar.pid);
    const accepted = await fill(`http://127.0.0.1:${sidecarPort}/batch/`, body, 1_000_000);
    await fill(`http://127.0.0.1:${barePort}/batch/`, body, accepted);
    await sleep(2000);
    const text = await (await fetch('http://127.0.0.1:18011/metrics')).text();
    const queued = metric(text, 'flag_sidecar_events_queue_bytes') / 2 ** 20;
    return (
      `full queue (upstream down, ${accepted} batches of ${batchEvents} accepted, ${metric(text, 'flag_sidecar_events_queue_events')} events, ${queued.toFixed(1)} MiB queued, then 503): ` +
      `RSS sidecar ${rssMiB(sidecar.pid).toFixed(1)} MiB (idle before: ${idle.toFixed(1)} MiB), bare server after the same ${accepted} requests ${rssMiB(bare.pid).toFixed(1)} MiB`
    );
  } finally {
    await stop(sidecar, bare);
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'flag-sidecar-bench-events-'));
  writeFileSync(join(dir, 'snapshot.json'), JSON.stringify(makeDefinitions(60)));
  const sha256 = createHash('sha256').update('phx_bench_key').digest('hex');
  writeFileSync(join(dir, 'keys.json'), JSON.stringify({ keys: [{ sha256, label: 'bench', scopes: ['feature_flag:read'] }] }));
  writeFileSync(join(dir, 'ok.json'), '{"status":1}');
  const plain = Buffer.from(await sdkBatch());
  const gzip = gzipSync(plain);
  writeFileSync(join(dir, 'batch.json'), plain);
  writeFileSync(join(dir, 'batch.json.gz'), gzip);
  console.log(`events: posthog-node ${batchEvents}-event batch, ${plain.length} B plain, ${gzip.length} B gzip; ${connections} connections; ${rounds} rounds × ${seconds}s per server and case`);
  const rows = [
    await throughput(dir, 'plain JSON', join(dir, 'batch.json'), { 'Content-Type': 'application/json' }),
    await throughput(dir, 'gzip', join(dir, 'batch.json.gz'), { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }),
    // Per-batch round trips bound the forwarder (a few batches in flight): the same with larger batches.
    await throughput(dir, 'plain JSON, FLAG_SIDECAR_EVENTS_BATCH_SIZE=5000', join(dir, 'batch.json'), { 'Content-Type': 'application/json' }, { FLAG_SIDECAR_EVENTS_BATCH_SIZE: '5000' }),
  ];
  console.log(
    '\n| POST /batch/ (100 events) | bare events/s | bare+parse events/s | sidecar events/s accepted | sidecar answers 503 | throughput ratio vs bare / bare+parse | CPU µs/event bare / bare+parse / sidecar | CPU efficiency vs bare / bare+parse | p99 ms bare / bare+parse / sidecar |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
  console.log(`\n${await fullQueue(dir, plain)}`);
}

await main();
