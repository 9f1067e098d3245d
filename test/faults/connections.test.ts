import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleKey } from '../support/fixtures.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

// Connections are capped per listener (issue 15 item 5): local clients holding connections open cannot use up
// the process's file handles; past the cap a new connection is closed at once, counted and logged (rate
// limited); connections already open are still served, and the ops listener, with its own cap, still answers.
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

describe('the connection cap', () => {
  it('drops connections past FLAG_SIDECAR_MAX_CONNECTIONS, keeps serving the open ones, and /healthz answers', async () => {
    const cap = 20;
    const s = (sidecar = await startTestSidecar({ FLAG_SIDECAR_MAX_CONNECTIONS: String(cap) }));
    const held: Client[] = [];
    for (let i = 0; i < cap; i++) held.push(await open(s.apiUrl));
    await ask(held, 1); // every one of them is accepted and served

    const extra: Client[] = [];
    for (let i = 0; i < 10; i++) extra.push(await open(s.apiUrl));
    for (const client of extra) client.socket.write(request(definitions));
    await Promise.all(extra.map(dropped));
    expect(extra.map((c) => c.received())).toEqual(extra.map(() => '')); // closed without an answer

    const health = await fetch(`${s.opsUrl}/healthz`);
    expect(health.status).toBe(200);
    await ask(held, 2); // the connections already open are still served
    expect(await metric(s, /^flag_sidecar_http_connections_dropped_total\{listener="api"\} (\S+)$/m)).toBe(10);
    expect(await metric(s, /^flag_sidecar_http_open_connections\{listener="api"\} (\S+)$/m)).toBe(cap);
    expect(await metric(s, /^flag_sidecar_http_max_connections\{listener="api"\} (\S+)$/m)).toBe(cap);
    const lines = s.logs.filter((l) => l.msg === 'connections dropped: the listener is at its connection cap');
    expect(lines.length).toBe(1); // rate limited: one line for the burst
    expect(lines[0]).toMatchObject({ listener: 'api', maxConnections: cap });

    // A freed slot takes a new connection again.
    const leaving = held.pop() as Client;
    leaving.socket.destroy();
    await waitFor(async () => (await metric(s, /^flag_sidecar_http_open_connections\{listener="api"\} (\S+)$/m)) === cap - 1, 'a freed slot');
    const next = await open(s.apiUrl);
    await ask([next], 1);
  });

  it('gives the ops listener its own cap: the API answers while the ops listener is full, and the reverse', async () => {
    const s = (sidecar = await startTestSidecar({ FLAG_SIDECAR_MAX_CONNECTIONS: '3', FLAG_SIDECAR_OPS_MAX_CONNECTIONS: '2' }));
    // The ops listener full (two held connections): a third is dropped, the API still answers.
    const ops: Client[] = [await open(s.opsUrl), await open(s.opsUrl)];
    for (const client of ops) client.socket.write('GET /healthz HTTP/1.1\r\nHost: ops\r\n\r\n');
    await waitFor(() => ops.every((c) => answers(c) === 1), 'two held ops connections');
    const refused = await open(s.opsUrl);
    await dropped(refused);
    expect(refused.received()).toBe('');
    const api = [await open(s.apiUrl)];
    await ask(api, 1);

    // The API listener full (three held connections): a fourth is dropped, a held ops connection still answers.
    api.push(await open(s.apiUrl), await open(s.apiUrl));
    await ask(api, 1);
    const fourth = await open(s.apiUrl);
    await dropped(fourth);
    expect(fourth.received()).toBe('');
    const probe = ops[0] as Client;
    probe.socket.write('GET /metrics HTTP/1.1\r\nHost: ops\r\nConnection: close\r\n\r\n');
    await probe.closed;
    expect(probe.received()).toMatch(/^flag_sidecar_http_connections_dropped_total\{listener="ops"\} 1$/m);
    expect(probe.received()).toMatch(/^flag_sidecar_http_connections_dropped_total\{listener="api"\} 1$/m);
  });
});
