/**
 * A bare HTTP/1.1 client on one TCP socket, for tests that must see exactly what a server does with a
 * connection: which answers came whole, which were cut, and whether the socket was closed before any byte of
 * an answer. Requests may be pipelined; answers are read in order. Only Content-Length bodies are understood
 * (the sidecar always sends one).
 */
import { connect, type Socket } from 'node:net';

/** One answer read whole. */
export interface RawResponse {
  readonly kind: 'response';
  readonly status: number;
  /** Header names lower-cased. */
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** The socket ended (or failed) while an answer was awaited; `bytes` of that answer had arrived. */
export interface RawClosed {
  readonly kind: 'closed';
  readonly bytes: number;
  readonly error: string | null;
}

/** A connection to `url`'s host and port. */
export interface RawConnection {
  readonly socket: Socket;
  /** Write raw bytes; false when the socket was already closed (nothing written). */
  send(text: string): boolean;
  /** The next answer in order, or how the socket ended before it came whole. */
  next(): Promise<RawResponse | RawClosed>;
  /** Resolves once the socket is closed. */
  readonly closed: Promise<void>;
}

/** Open a connection and resolve once connected. */
export async function openRaw(url: string): Promise<RawConnection> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let buffer = Buffer.alloc(0);
  let ended = false;
  let error: string | null = null;
  let wake: (() => void) | null = null;
  const poke = (): void => {
    const w = wake;
    wake = null;
    w?.();
  };
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    poke();
  });
  socket.on('error', (e: NodeJS.ErrnoException) => {
    error = e.code ?? e.message;
  });
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      ended = true;
      poke();
      resolve();
    }),
  );

  function take(): RawResponse | null {
    const end = buffer.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const lines = buffer.subarray(0, end).toString('latin1').split('\r\n');
    const status = Number((lines[0] ?? '').split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? '0');
    if (buffer.length < end + 4 + length) return null;
    const body = buffer.subarray(end + 4, end + 4 + length).toString('utf8');
    buffer = buffer.subarray(end + 4 + length);
    return { kind: 'response', status, headers, body };
  }

  return {
    socket,
    closed,
    send: (text) => {
      if (socket.destroyed || !socket.writable) return false;
      socket.write(text);
      return true;
    },
    async next() {
      for (;;) {
        const response = take();
        if (response) return response;
        if (ended) return { kind: 'closed', bytes: buffer.length, error };
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
}

/** The text of one request. */
export function rawRequest(method: string, path: string, headers: Record<string, string> = {}, body = ''): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'host: sidecar'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== '' || method === 'POST' || method === 'PATCH') lines.push(`content-length: ${Buffer.byteLength(body)}`);
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}
