/**
 * The only place that writes responses. Replies carry precomputed headers and buffers; HEAD gets the headers
 * without the body. Errors become upstream-style bodies via ApiError.
 */
import type { ServerResponse } from 'node:http';
import { ApiError, shuttingDown } from '../errors.js';
import { giveBack, minLent } from '../eval/body-pool.js';
import type { Reply } from './router.js';

const jsonHeaders = (body: Buffer): Record<string, string> => ({
  'content-type': 'application/json',
  'content-length': String(body.length),
});

/**
 * A reply written many times carries its headers also as the flat `[name, value, …]` list node writes without
 * enumerating an object (measured: 1.4–1.8% less CPU per cached endpoint run, paired runs), on a non-enumerable
 * property of the reply itself: a property load where a WeakMap probe cost more (docs/benchmarks.md as of c3f48ec, issue 19
 * "read paths' own work"). Non-enumerable, so a reply spread from it (`{ ...reply, headers: {...} }`, a header
 * added) never copies the list: only the very reply object it was made for writes it.
 */
interface ListedReply extends Reply {
  readonly headerList?: string[];
}

/** A reply written many times (a cache hit, a snapshot variant): its headers are listed once (see ListedReply). */
export function reusableReply(status: number, headers: Readonly<Record<string, string>>, body: Buffer | null): Reply {
  const frozen = Object.freeze({ ...headers });
  const reply: Reply = { status, headers: frozen, body };
  Object.defineProperty(reply, 'headerList', { value: Object.entries(frozen).flat(), enumerable: false });
  return reply;
}

/**
 * A reply whose body is written in two parts, `body` then `tail` (a kept /flags answer's head, shared by every
 * request that reuses it, and its fresh stamp): one write of both, no copy of the head. Content-Length covers both.
 */
export interface SplitReply extends Reply {
  readonly body: Buffer;
  readonly tail: Buffer;
}

/** A JSON reply from a ready buffer. */
export function jsonReply(status: number, body: Buffer, extra?: Readonly<Record<string, string>>): Reply {
  return { status, headers: extra ? { ...jsonHeaders(body), ...extra } : jsonHeaders(body), body };
}

/** A JSON reply from a value (serialized here; not for the hot path). */
export function valueReply(status: number, value: unknown): Reply {
  return jsonReply(status, Buffer.from(JSON.stringify(value)));
}

/** Upstream's error reply for an ApiError. */
export function errorReply(error: ApiError): Reply {
  return jsonReply(error.status, error.body(), error.headers ?? undefined);
}

/** The 503 for work refused while shutting down: nothing was done, and the caller may send it again at once. */
export function shuttingDownReply(): Reply {
  return jsonReply(503, shuttingDown().body(), { 'retry-after': '1', connection: 'close' });
}

/** Write a reply; `close` (the sidecar is draining) makes it the connection's last. */
export function send(res: ServerResponse, reply: Reply, head: boolean, close = false): void {
  if (close) res.setHeader('connection', 'close');
  const listed = (reply as ListedReply).headerList;
  res.writeHead(reply.status, listed ?? reply.headers);
  const body = reply.body;
  // A large body made for this one reply may be lent memory (eval/body-pool.ts); a reply written many times (listed)
  // never is, so the read paths skip the check.
  const lent = listed === undefined && body !== null && body.length > minLent;
  if (body === null || head) {
    res.end();
    if (lent) giveBack(body as Buffer);
  } else {
    const tail = (reply as Partial<SplitReply>).tail;
    if (tail === undefined) {
      res.end(body);
      // The socket took it whole: nothing reads a lent body's memory any more, so it serves the next body.
      if (lent && res.writableLength === 0) giveBack(body);
    } else {
      // Corked, the head, body and tail leave in one writev (end uncorks).
      res.cork();
      res.write(body);
      res.end(tail);
    }
  }
}
