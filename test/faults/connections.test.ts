import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleKey, exampleToken } from '../support/fixtures.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

// Connections are capped per listener (issue 15 item 5), and the cap keeps serving (issue 37 item 2): local clients
// holding connections open cannot use up the process's file handles, nor lock anyone else out. At the cap, a new
// connection makes room by closing the longest-idle kept-alive connection, else the oldest one still waiting for
// its request head, else a request whose body is still arriving (answered 408); the ops listener the same.
let sidecar: TestSidecar | null = null;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await sidecar?.stop();
  sidecar = null;
});

interface Client {
  readonly socket: Socket;
  /** Everything received so far. */
  received(): string;
  readonly closed: Promise<void>;
}

/** Open a raw connection to `url` and wait until it is connected. */
async function open(url: string): Promise<Client> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  sockets.push(socket);
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.on('error', () => undefined); // a dropped connection may reset a write
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { socket, received: () => text, closed };
}

/** Wait until the server closed `client` (a clear failure, not a hang, when it keeps it open). */
async function dropped(client: Client): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error('a connection past the cap was kept open')), 10_000);
  });
  await Promise.race([client.closed, late]).finally(() => clearTimeout(timer));
}

const request = (path: string) =>
  `GET ${path} HTTP/1.1\r\nHost: sidecar\r\nAuthorization: Bearer ${exampleKey}\r\nConnection: keep-alive\r\n\r\n`;
const definitions = '/api/projects/1/feature_flags/local_evaluation/?send_cohorts';
const answers = (client: Client) => client.received().split('HTTP/1.1 200 OK').length - 1;

/** Send a request on each client and wait until each has `n` answers in all. */
async function ask(clients: readonly Client[], n: number): Promise<void> {
  for (const client of clients) client.socket.write(request(definitions));
  await waitFor(() => clients.every((c) => answers(c) >= n), `${n} answers on ${clients.length} connections`, 15_000);
}

const metric = async (s: TestSidecar, pattern: RegExp): Promise<number | null> => {
  const match = pattern.exec(await (await fetch(`${s.opsUrl}/metrics`)).text());
  return match ? Number(match[1]) : null;
};

const metricsText = async (s: TestSidecar): Promise<string> => (await fetch(`${s.opsUrl}/metrics`)).text();
const droppedFrom = (text: string, listener: string): number =>
  Number(new RegExp(`^flag_sidecar_http_connections_dropped_total\\{listener="${listener}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
const evictedBy = (text: string, listener: string, standing: string): number =>
  Number(new RegExp(`^flag_sidecar_http_connections_evicted_total\\{listener="${listener}",standing="${standing}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);

/** Open `n` connections one after another, each served once and so left idle, the first opened the longest idle. */
async function idleConnections(url: string, n: number): Promise<Client[]> {
  const held: Client[] = [];
  for (let i = 0; i < n; i++) {
    const client = await open(url);
    await ask([client], 1);
    held.push(client);
  }
  return held;
}

/** Open `n` connections that each send part of a request head and nothing more. */
async function tricklingHeads(url: string, n: number): Promise<Client[]> {
  const held: Client[] = [];
  for (let i = 0; i < n; i++) {
    const client = await open(url);
    client.socket.write(`GET ${definitions} HTTP/1.1\r\nHost: sidecar\r\nX-Slow: a`);
    held.push(client);
  }
  return held;
}

describe('the connection cap', () => {
  it('closes the longest-idle keep-alive connections to serve new clients; the rest are still served', async () => {
    const cap = 20;
    const s = (sidecar = await startTestSidecar({ FLAG_SIDECAR_MAX_CONNECTIONS: String(cap) }));
    const held = await idleConnections(s.apiUrl, cap);
    // Ten new clients, one after another: each is served, and each takes the place of the longest idle.
    for (let i = 0; i < 10; i++) await ask([await open(s.apiUrl)], 1);
    await Promise.all(held.slice(0, 10).map(dropped));
    expect(held.slice(0, 10).map(answers)).toEqual(held.slice(0, 10).map(() => 1)); // closed between requests
    await ask(held.slice(10), 2);
    expect((await fetch(`${s.opsUrl}/healthz`)).status).toBe(200);
    const text = await metricsText(s);
    expect(evictedBy(text, 'api', 'idle')).toBe(10);
    expect(droppedFrom(text, 'api')).toBe(0);
    expect(text).toMatch(new RegExp(`^flag_sidecar_http_max_connections\\{listener="api"\\} ${cap}$`, 'm'));
    expect(text).toMatch(new RegExp(`^flag_sidecar_http_open_connections\\{listener="api"\\} ${cap}$`, 'm'));
    const lines = s.logs.filter((l) => l.msg === 'connections closed to make room: the listener is at its connection cap');
    expect(lines).toEqual([expect.objectContaining({ listener: 'api', maxConnections: cap, evicted: 1 })]); // rate limited
  });

  it('cuts the oldest trickling request head for a new client, and closes an idle connection before any', async () => {
    const cap = 8;
    const s = (sidecar = await startTestSidecar({ FLAG_SIDECAR_MAX_CONNECTIONS: String(cap) }));
    const tricklers = await tricklingHeads(s.apiUrl, cap);
    // The cap full of tricklers: a new client cuts the oldest, which never gets an answer.
    const first = await open(s.apiUrl);
    await ask([first], 1);
    await dropped(tricklers[0] as Client);
    expect((tricklers[0] as Client).received()).toBe('');
    // The next one closes the first client, now idle, rather than a trickler that has waited longer.
    await ask([await open(s.apiUrl)], 1);
    await dropped(first);
    expect(answers(first)).toBe(1);
    const text = await metricsText(s);
    expect([evictedBy(text, 'api', 'head'), evictedBy(text, 'api', 'idle')]).toEqual([1, 1]);
    expect(droppedFrom(text, 'api')).toBe(0);
  });

  it('answers 408 to a request whose body is still arriving when there is nothing cheaper to close', async () => {
    const cap = 4;
    const s = (sidecar = await startTestSidecar({ FLAG_SIDECAR_MAX_CONNECTIONS: String(cap) }));
    const body = JSON.stringify({ token: exampleToken, distinct_id: 'user-1' });
    const slow: Client[] = [];
    for (let i = 0; i < cap; i++) {
      const client = await open(s.apiUrl);
      client.socket.write(`POST /flags?v=2 HTTP/1.1\r\nHost: sidecar\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
      slow.push(client);
    }
    await waitFor(() => s.apiRequests() === cap, 'the four requests taken');
    const client = await open(s.apiUrl);
    await ask([client], 1);
    const cut = slow[0] as Client;
    await dropped(cut);
    expect(cut.received()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(cut.received()).toMatch(/\r\nconnection: close\r\n/i);
    expect(JSON.parse(cut.received().split('\r\n\r\n')[1] as string)).toMatchObject({ code: 'request_timeout', type: 'invalid_request' });
    expect(evictedBy(await metricsText(s), 'api', 'body')).toBe(1);
    // The others finish their bodies and are answered.
    for (const other of slow.slice(1)) other.socket.write(body.slice(5));
    await waitFor(() => slow.slice(1).every((c) => c.received().startsWith('HTTP/1.1 200 OK')), 'the other bodies answered');
  });

  it('keeps /healthz answering with the ops listener full of idle and trickling connections, and the API the same', async () => {
    const s = (sidecar = await startTestSidecar({ FLAG_SIDECAR_MAX_CONNECTIONS: '3', FLAG_SIDECAR_OPS_MAX_CONNECTIONS: '4' }));
    const ops: Client[] = [await open(s.opsUrl), await open(s.opsUrl)];
    for (const client of ops) client.socket.write('GET /healthz HTTP/1.1\r\nHost: ops\r\n\r\n');
    await waitFor(() => ops.every((c) => answers(c) === 1), 'two held ops connections');
    for (let i = 0; i < 2; i++) {
      const trickler = await open(s.opsUrl);
      trickler.socket.write('GET /healthz HTTP/1.1\r\nHo');
      ops.push(trickler);
    }
    // kubelet and Prometheus open a connection per probe and scrape: each is served.
    for (let i = 0; i < 5; i++) {
      expect((await fetch(`${s.opsUrl}/healthz`, { headers: { connection: 'close' } })).status).toBe(200);
      expect((await fetch(`${s.opsUrl}/metrics`, { headers: { connection: 'close' } })).status).toBe(200);
    }
    await dropped(ops[0] as Client); // the longest idle made room
    // The API full of idle connections: a new client is served all the same.
    await idleConnections(s.apiUrl, 3);
    await ask([await open(s.apiUrl)], 1);
    const text = await metricsText(s);
    expect(evictedBy(text, 'ops', 'idle')).toBeGreaterThanOrEqual(1);
    expect(droppedFrom(text, 'ops')).toBe(0);
    expect(evictedBy(text, 'api', 'idle')).toBe(1);
  });
});
