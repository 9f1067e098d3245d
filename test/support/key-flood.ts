/**
 * Tools for the key-flood fault test and its measurement script: made-up keys of upstream's shape, a proxy that
 * delays or holds key verifications on their way to the fake upstream, and a flood of distinct keys over many
 * keep-alive connections.
 */
import { randomBytes } from 'node:crypto';
import { Agent, createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const base62Digits = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** A key of the shape upstream issues today: prefix + 48 base-62 characters. */
export const madeUp = (prefix: string): string => prefix + Array.from(randomBytes(48), (b) => base62Digits[b % 62]).join('');

/**
 * A proxy in front of the fake upstream that delays every key verification (introspection, and a
 * local_evaluation asked with a key other than the sidecar's own) by `delayMs`, or holds them all until
 * `release()`; it records the Authorization of every request it sees, and counts the verifications under way.
 */
export async function startDelayingProxy(target: string, ownKey: string) {
  const seen: string[] = [];
  let delayMs = 0;
  let holding = false;
  // Verifications under way here (held, delayed or forwarded, until answered), and the most at once.
  let verifying = 0;
  let mostVerifying = 0;
  // Milliseconds spent here (held, delayed, answered upstream) by the verifications of the keys asked to be timed.
  const timed = new Map<string, number>();
  const held: Array<() => void> = [];
  const isVerification = (req: IncomingMessage): boolean =>
    (req.url ?? '').startsWith('/api/personal_api_keys/') || !(req.headers.authorization ?? '').endsWith(ownKey);
  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer): void => {
    const out = request(`${target}${req.url ?? '/'}`, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    out.end(body);
  };
  const server: Server = createServer((req, res) => {
    seen.push(req.headers.authorization ?? '');
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const go = () => forward(req, res, Buffer.concat(chunks));
      if (!isVerification(req)) return go();
      verifying += 1;
      mostVerifying = Math.max(mostVerifying, verifying);
      const authorization = req.headers.authorization ?? '';
      const received = performance.now();
      res.on('close', () => {
        verifying -= 1;
        if (timed.has(authorization)) timed.set(authorization, (timed.get(authorization) ?? 0) + performance.now() - received);
      });
      if (holding) return void held.push(go);
      if (delayMs > 0) return void setTimeout(go, delayMs);
      go();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    held: () => held.length,
    /** The most key verifications that were under way at once. */
    mostVerifying: () => mostVerifying,
    /** Count the time the verifications of `key` spend here from now on. */
    time: (key: string) => void timed.set(`Bearer ${key}`, 0),
    /** Milliseconds the verifications of a timed `key` spent here. */
    timeOf: (key: string): number => timed.get(`Bearer ${key}`) ?? 0,
    setDelay: (ms: number) => void (delayMs = ms),
    hold: () => void (holding = true),
    release(): void {
      holding = false;
      for (const go of held.splice(0)) go();
    },
    close: async (): Promise<void> => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  text: string;
  ms: number;
}

/**
 * One GET; `agent` false: a connection of its own, from `localAddress` when given (any of 127/8 reaches a
 * listener on 127.0.0.1 from that address on Linux: another caller, as the sidecar sees it).
 */
export function get(url: string, key: string | null, agent: Agent | false = false, localAddress?: string): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const headers = key === null ? {} : { authorization: `Bearer ${key}` };
    const req = request(url, { agent, headers, ...(localAddress === undefined ? {} : { localAddress }) }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text, ms: performance.now() - started }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * `total` distinct made-up keys sent over `connections` concurrent clients until done or stopped: on keep-alive
 * connections, or (`keepAlive` false) each on a connection of its own.
 */
export function flood(url: string, total: number, connections: number, keepAlive = true) {
  const agent = new Agent({ keepAlive, maxSockets: connections });
  const statuses = new Map<number, number>();
  let sent = 0;
  let answered = 0;
  let stopped = false;
  const worker = async (): Promise<void> => {
    while (!stopped && sent < total) {
      sent += 1;
      const { status } = await get(url, madeUp('phx_'), agent);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      answered += 1;
    }
  };
  const done = Promise.all(Array.from({ length: connections }, worker)).finally(() => agent.destroy());
  return {
    answered: () => answered,
    statuses,
    /** Settles once every key was answered (or the flood was stopped). */
    done,
    async stop(): Promise<void> {
      stopped = true;
      await done;
    },
  };
}


/** The proxy's handle. */
export type DelayingProxy = Awaited<ReturnType<typeof startDelayingProxy>>;
