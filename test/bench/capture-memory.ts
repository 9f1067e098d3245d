/**
 * Capture memory (issue 37): the built sidecar's peak RSS while SDKs send large `/batch/` bodies at once, to check
 * that the capture memory budget holds the process inside the chart's default memory limit (256Mi). After
 * `npm run build`:
 *
 *   npx tsx test/bench/capture-memory.ts
 *
 * One sidecar (dist/main.js, the image's NODE_OPTIONS and MALLOC_MMAP_THRESHOLD_ from the Dockerfile, a snapshot dir so
 * events are spooled) relays to a sink that answers every batch 200; CAPTURE_CONCURRENT
 * (default 16) clients each POST one /batch/ of CAPTURE_EVENTS (default 2,092) events of about 9 KB each (a 19 MB
 * body: 92 properties of 80-byte strings, the shape that makes parsing costly), all at once, then again on every
 * 503 after its Retry-After, until each batch is accepted. Reported: VmHWM (the process's peak RSS) and VmRSS
 * after, the statuses seen, the time until all were accepted, and the events the sink received. Env:
 * CAPTURE_ENV_* (settings given to the sidecar, e.g. CAPTURE_ENV_FLAG_SIDECAR_EVENTS_INTAKE_MAX_BYTES=64MiB; an empty
 * CAPTURE_ENV_MALLOC_MMAP_THRESHOLD_ leaves glibc's threshold dynamic), CAPTURE_NODE_ARGS (more node options).
 */
import { listeningApi } from './listening.js';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { imageNodeOptions } from './footprint.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const concurrent = Number(process.env.CAPTURE_CONCURRENT ?? 16);
const eventsPerBatch = Number(process.env.CAPTURE_EVENTS ?? 2_092);
const token = 'phc_capture_memory';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const status = (pid: number, field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

/** One /batch/ body of `count` events of about 9 KB (distinct uuids per client). */
function batchBody(client: number, count: number): Buffer {
  const value = 'v'.repeat(80);
  const events: string[] = [];
  for (let i = 0; i < count; i++) {
    const properties: Record<string, string> = {};
    for (let p = 0; p < 92; p++) properties[`property_${p}`] = value;
    events.push(JSON.stringify({ event: 'big', distinct_id: `user-${client}-${i}`, uuid: `00000000-0000-4000-8000-${String(client * 1_000_000 + i).padStart(12, '0')}`, properties }));
  }
  return Buffer.from(`{"api_key":"${token}","batch":[${events.join(',')}]}`);
}

const dropEmpty = (env: Record<string, string | undefined>): Record<string, string> =>
  Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''));

const readAll = async (req: IncomingMessage): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

async function main(): Promise<void> {
  let received = 0;
  const sink = createServer((req, res) => {
    void readAll(req).then((body) => {
      const text = req.headers['content-encoding'] === 'gzip' ? '' : body.toString();
      received += (text.match(/"event":"big"/g) ?? []).length;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":1}');
    });
  });
  sink.listen(0, '127.0.0.1');
  await once(sink, 'listening');
  const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  const extra = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('CAPTURE_ENV_')).map(([k, v]) => [k.slice('CAPTURE_ENV_'.length), v as string]));
  const snapshots = mkdtempSync(join(tmpdir(), 'capture-memory-'));
  const dockerfile = readFileSync(`${root}/Dockerfile`, 'utf8');
  const mmapThreshold = /MALLOC_MMAP_THRESHOLD_=(\d+)/.exec(dockerfile)?.[1];
  const child = spawn(process.execPath, [...imageNodeOptions(dockerfile).split(' '), ...(process.env.CAPTURE_NODE_ARGS ?? '').split(' ').filter(Boolean), `${root}/dist/main.js`], {
    cwd: root,
    // An empty CAPTURE_ENV_ value unsets the variable (glibc would read an empty threshold as 0).
    env: dropEmpty({
      PATH: process.env.PATH,
      FLAG_SIDECAR_BOOTSTRAP_FILE: `${root}/config/snapshot.example.json`,
      FLAG_SIDECAR_EVENTS_URL: sinkUrl,
      FLAG_SIDECAR_EVENTS_ANY_TOKEN: 'true',
      // The chart's snapshot volume: accepted events are spooled there, as in production.
      FLAG_SIDECAR_SNAPSHOT_DIR: snapshots,
      FLAG_SIDECAR_LISTEN: '127.0.0.1:0',
      FLAG_SIDECAR_OPS_LISTEN: '127.0.0.1:0',
      FLAG_SIDECAR_LOG_LEVEL: 'info',
      ...(mmapThreshold ? { MALLOC_MMAP_THRESHOLD_: mmapThreshold } : {}),
      ...extra,
    }),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const api = await listeningApi(child);
  const pid = child.pid as number;
  const bodies = Array.from({ length: concurrent }, (_, i) => batchBody(i, eventsPerBatch));
  const idle = status(pid, 'VmRSS');
  const statuses: Record<number, number> = {};
  const started = Date.now();
  await Promise.all(
    bodies.map(async (body) => {
      for (;;) {
        const res = await fetch(`${api}/batch/`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
        await res.arrayBuffer();
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        if (res.status === 200) return;
        if (res.status !== 503) throw new Error(`answered ${res.status}`);
        await sleep(Number(res.headers.get('retry-after') ?? 1) * 1000);
      }
    }),
  );
  const acceptedMs = Date.now() - started;
  while (received < concurrent * eventsPerBatch && Date.now() - started < 300_000) await sleep(100);
  console.log(
    JSON.stringify({
      concurrent,
      body_mb: +(bodies[0]!.length / 1e6).toFixed(1),
      idle_rss_mib: +idle.toFixed(0),
      peak_rss_mib: +status(pid, 'VmHWM').toFixed(0),
      rss_after_mib: +status(pid, 'VmRSS').toFixed(0),
      statuses,
      accepted_s: +(acceptedMs / 1000).toFixed(1),
      relayed_events: received,
      settings: extra,
    }),
  );
  child.kill('SIGTERM');
  await once(child, 'exit');
  sink.close();
  rmSync(snapshots, { recursive: true, force: true });
}

await main();
