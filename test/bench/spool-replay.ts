/**
 * Events spool replay after a restart, run by `npm run bench` (BENCH_ONLY=spool-replay) after dist/ is built, or
 * alone: `npm run build && npx tsx test/bench/spool-replay.ts`. A spool of BENCH_SPOOL_MIB
 * (default 200) MiB is written as a previous run leaves it (segments of 1/16 of the 256 MiB bound, records of 10
 * posthog-node-like events), then the sidecar (dist/main.js, offline, core 0) is started on it:
 * 1. events URL on a closed port (an outage that outlived the restart): the time until the API listener answers
 *    a capture (200, or 503 when the queue is full of replayed events), and the RSS 3 s later and at its peak;
 * 2. a stand-in upstream on core 1 that counts the events of each batch: the time until every spooled event was
 *    forwarded, and the sidecar's peak RSS meanwhile.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeRecord } from '../../src/events/spool-record.js';
import { freePort } from '../support/free-port.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const spoolMiB = Number(process.env.BENCH_SPOOL_MIB ?? 200);
const token = 'phc_flag_sidecar_example_project';
// Ports picked free at start: other benchmarks may run on this machine.
const [apiPort, opsPort, upstreamPort] = [await freePort(), await freePort(), await freePort()];
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const status = (pid: number | undefined, field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

/** Write `spoolMiB` of records into `dir` as segment files; resolves with the number of events. */
function writeSpool(dir: string): number {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const segmentBytes = 16 * 1024 * 1024;
  let events = 0;
  let total = 0;
  let segment = 1;
  let parts: Buffer[] = [];
  let size = 0;
  const flush = (): void => {
    writeFileSync(join(dir, `${String(segment).padStart(10, '0')}.seg`), Buffer.concat(parts), { mode: 0o600 });
    segment += 1;
    parts = [];
    size = 0;
  };
  while (total < spoolMiB * 1024 * 1024) {
    const batch = Array.from({ length: 10 }, () => {
      events += 1;
      return JSON.stringify({
        event: events % 5 === 0 ? '$feature_flag_called' : 'order placed',
        distinct_id: `user-${events % 97}`,
        uuid: `0190f0a0-0000-7000-8000-${String(events).padStart(12, '0')}`,
        timestamp: '2026-11-26T08:00:00.000Z',
        properties: { $lib: 'posthog-node', $lib_version: '5.70.0', plan: 'pro', amount: events % 1000, $feature_flag: 'new-checkout', $feature_flag_response: true, $geoip_disable: true },
      });
    });
    const record = Buffer.concat(encodeRecord({ token, events: batch.map((e) => Buffer.from(e)) }).parts);
    if (size + record.length > segmentBytes) flush();
    parts.push(record);
    size += record.length;
    total += record.length;
  }
  if (parts.length > 0) flush();
  return events;
}

function startSidecar(snapshotDir: string, eventsUrl: string): ChildProcess {
  return spawn('taskset', ['-c', '0', process.execPath, 'dist/main.js'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      FLAG_SIDECAR_SNAPSHOT_DIR: snapshotDir,
      FLAG_SIDECAR_EVENTS_URL: eventsUrl,
      FLAG_SIDECAR_LISTEN: `127.0.0.1:${apiPort}`,
      FLAG_SIDECAR_OPS_LISTEN: `127.0.0.1:${opsPort}`,
      FLAG_SIDECAR_LOG_LEVEL: 'error',
    },
    stdio: ['ignore', 'ignore', 'ignore'],
  });
}

/** Milliseconds from `started` until a capture POST gets an answer (any status). */
async function firstCapture(child: ChildProcess, started: number): Promise<{ ms: number; status: number }> {
  const body = JSON.stringify({ api_key: token, batch: [{ event: 'after restart', distinct_id: 'd', uuid: '0190f0a0-0000-7000-8000-ffffffffffff' }] });
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${apiPort}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await res.arrayBuffer();
      return { ms: performance.now() - started, status: res.status };
    } catch {
      if (child.exitCode !== null) throw new Error(`the sidecar exited with ${child.exitCode} before answering`);
      await sleep(5);
    }
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGKILL');
  await once(child, 'exit');
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'flag-sidecar-spool-bench-'));
  try {
    const spoolDir = join(dir, 'events-spool');
    const written = writeSpool(spoolDir);
    console.log(`spool: ${spoolMiB} MiB, ${written} events in records of 10`);

    // 1. Upstream still down: start-up and RSS with the whole spool waiting.
    let started = performance.now();
    const down = startSidecar(dir, 'http://127.0.0.1:9');
    const first = await firstCapture(down, started);
    await sleep(3000);
    console.log(`upstream down: first capture answered after ${first.ms.toFixed(0)} ms (${first.status}); RSS 3 s later ${status(down.pid, 'VmRSS').toFixed(0)} MiB, peak ${status(down.pid, 'VmHWM').toFixed(0)} MiB`);
    await stop(down);

    // 2. Upstream up: every spooled event forwarded.
    let forwarded = 0;
    const upstream = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        forwarded += (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { batch: unknown[] }).batch.length;
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":1}');
      });
    });
    await new Promise<void>((resolve) => upstream.listen(upstreamPort, '127.0.0.1', resolve));
    started = performance.now();
    const up = startSidecar(dir, `http://127.0.0.1:${upstreamPort}`);
    const answered = await firstCapture(up, started);
    let peak = 0;
    while (forwarded < written) {
      peak = Math.max(peak, status(up.pid, 'VmRSS'));
      await sleep(100);
    }
    const drained = performance.now() - started;
    peak = Math.max(peak, status(up.pid, 'VmHWM'));
    console.log(`upstream up: first capture answered after ${answered.ms.toFixed(0)} ms (${answered.status}); all ${written} spooled events forwarded after ${(drained / 1000).toFixed(1)} s (${((written / drained) * 1000).toFixed(0)} events/s); peak RSS ${peak.toFixed(0)} MiB`);
    await stop(up);
    upstream.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
