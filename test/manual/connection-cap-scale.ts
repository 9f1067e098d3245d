/**
 * Manual measurement (not run by `npm test`: it holds ~1,200 sockets for ~20 s): issue 37's reproduction of the
 * connection caps at full scale, against a real sidecar process with the default caps (1,024 API, 64 ops). One
 * process (this one) holds 1,100 API connections and 70 ops connections — all idle keep-alive ones, all trickling
 * a request head a byte a second, or half of each — then a new client asks for the flag definitions on a fresh
 * connection and `/healthz` is probed on a fresh connection. Run (needs `ulimit -n` above ~2,500):
 *
 *   npx tsx test/manual/connection-cap-scale.ts
 *
 * It prints, per case, the new client's status and time to its answer, /healthz's, and the eviction counters.
 */
import { connect, type Socket } from 'node:net';
import { bearer, exampleKey } from '../support/fixtures.js';
import { spawnSidecar } from '../support/spawn-sidecar.js';

const definitions = '/api/projects/1/feature_flags/local_evaluation/?send_cohorts';
const request = `GET ${definitions} HTTP/1.1\r\nHost: sidecar\r\nAuthorization: Bearer ${exampleKey}\r\n\r\n`;

/** A connection served `ask` once and then left open (idle keep-alive). */
async function idle(url: string, ask: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => {
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      // Each answer ends with its body; a complete status line and body are enough to call it served.
      if (text.startsWith('HTTP/1.1 ') && text.includes('\r\n\r\n') && text.endsWith('}')) resolve();
    });
    socket.once('close', () => resolve());
    socket.write(ask);
  });
  return socket;
}

/** A connection trickling a request head, a byte a second, never finishing it. */
function trickling(url: string, timers: NodeJS.Timeout[]): Socket {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  socket.write(`GET ${definitions} HTTP/1.1\r\nHost: sidecar\r\nX-Slow: `);
  timers.push(setInterval(() => socket.writable && socket.write('a'), 1000));
  return socket;
}

async function timed(url: string): Promise<{ status: number | string; ms: number }> {
  const started = performance.now();
  try {
    const res = await fetch(url, { headers: { ...bearer(exampleKey), connection: 'close' }, signal: AbortSignal.timeout(10_000) });
    await res.arrayBuffer();
    return { status: res.status, ms: Math.round(performance.now() - started) };
  } catch (error) {
    return { status: (error as Error).message, ms: Math.round(performance.now() - started) };
  }
}

/** The connection counters from /metrics (itself on a fresh connection to the ops listener). */
async function counters(opsUrl: string): Promise<string> {
  try {
    const text = await (await fetch(`${opsUrl}/metrics`, { headers: { connection: 'close' } })).text();
    return text
      .split('\n')
      .filter((l) => /^flag_sidecar_http_(connections_evicted_total|connections_dropped_total|open_connections)\{/.test(l))
      .join('; ');
  } catch (error) {
    return `/metrics: ${(error as Error).message}`;
  }
}

for (const kind of ['idle', 'trickling', 'half of each'] as const) {
  const proc = spawnSidecar({});
  const { api, ops } = await proc.listening;
  await timed(`${api}${definitions}`); // fetch itself loaded and warm: the figure is the sidecar's
  const held: Socket[] = [];
  const timers: NodeJS.Timeout[] = [];
  for (let i = 0; i < 1100; i++) {
    const slow = kind === 'trickling' || (kind === 'half of each' && i % 2 === 1);
    held.push(slow ? trickling(api, timers) : await idle(api, request));
  }
  for (let i = 0; i < 70; i++) {
    const slow = kind === 'trickling' || (kind === 'half of each' && i % 2 === 1);
    held.push(slow ? trickling(ops, timers) : await idle(ops, 'GET /healthz HTTP/1.1\r\nHost: ops\r\n\r\n'));
  }
  await new Promise((resolve) => setTimeout(resolve, 2000)); // the tricklers a few bytes in
  const client = await timed(`${api}${definitions}`);
  const health = await timed(`${ops}/healthz`);
  console.log(`${kind}: 1,100 API + 70 ops connections held; new client ${client.status} in ${client.ms} ms; /healthz ${health.status} in ${health.ms} ms; ${await counters(ops)}`);
  for (const timer of timers) clearInterval(timer);
  for (const socket of held) socket.destroy();
  proc.child.kill('SIGTERM');
  await proc.exited;
}
