/**
 * Raw HTTP/1.1 over a plain `net` socket, for requests no HTTP client would send (smuggling shapes, bad
 * chunking, trickled bytes). Everything the server sends is collected until it closes the connection or a
 * time limit passes; the answers are read from that text.
 */
import { connect } from 'node:net';

/** What came back on one connection. */
export interface RawExchange {
  /** Status of every response seen, in order. */
  readonly statuses: number[];
  /** Everything received, as latin1 text. */
  readonly text: string;
  /** True when the server closed (or reset) the connection before the time limit. */
  readonly closed: boolean;
  /** ms from the first byte sent to the close (or to the time limit). */
  readonly ms: number;
}

/** Options of rawExchange. */
export interface RawOptions {
  /** Pause between the pieces of `request` (trickling), default 0. */
  readonly gapMs?: number;
  /** Give up waiting for the close after this long (default 5 s); `closed` is then false. */
  readonly timeoutMs?: number;
  /** Half-close our side after the last piece (default false: a client still waiting). */
  readonly end?: boolean;
}

/** Send `request` (a string or pieces) to `baseUrl`'s host and port; resolves when the server closes or at the limit. */
export function rawExchange(baseUrl: string, request: string | Buffer | Array<string | Buffer>, options: RawOptions = {}): Promise<RawExchange> {
  const { port, hostname } = new URL(baseUrl);
  const pieces = Array.isArray(request) ? request : [request];
  const timeoutMs = options.timeoutMs ?? 5000;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const started = performance.now();
    const socket = connect(Number(port), hostname);
    let done = false;
    let trickle: NodeJS.Timeout | undefined;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(limit);
      clearTimeout(trickle);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const statuses = [...text.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));
      resolve({ statuses, text, closed, ms: performance.now() - started });
    };
    const limit = setTimeout(() => finish(false), timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    let index = 0;
    const sendNext = (): void => {
      if (done || socket.destroyed) return;
      const piece = pieces[index++];
      if (piece === undefined) {
        if (options.end) socket.end();
        return;
      }
      socket.write(piece);
      if (options.gapMs) trickle = setTimeout(sendNext, options.gapMs);
      else sendNext();
    };
    socket.once('connect', sendNext);
  });
}

/** A request head with CRLFs: `lines` joined, then the blank line, then `body`. */
export const rawRequest = (lines: string[], body = ''): string => `${lines.join('\r\n')}\r\n\r\n${body}`;
