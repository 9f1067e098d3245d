/**
 * A cap on the connections one listener holds open, so that clients cannot use up the process's file handles,
 * which the snapshot writes, upstream requests and the other listener need too — and that keeps serving when it
 * is reached. A held connection never locks a new client out: when a new connection would pass the cap, the one
 * that costs least to close goes instead (pickVictim). Only when every other connection has a request being
 * worked on is the new one closed at once, unanswered. Evictions and drops are counted per listener and logged at
 * most once per `logEveryMs` each (with how many since the last line).
 */
import type { Socket } from 'node:net';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Reply } from './router.js';

/**
 * What a connection is doing, from cheapest to close to dearest:
 * - `idle`: a kept-alive connection between requests (it answered one, and none is open). Closing it loses
 *   nothing; its client opens another. (Bytes of a next request may be arriving: telling them apart would cost
 *   every request a read of the socket's byte count, and a client trickling its second head is no better off.)
 * - `head`: a connection that has not yet sent a whole first request head. Nothing was taken yet.
 * - `body`: a request taken whose body is still arriving: it is answered 408 (nothing was done), then closed.
 * - `busy`: a request whose body has arrived, being worked on. Never evicted.
 */
export type Standing = 'idle' | 'head' | 'body' | 'busy';

/** One open connection as the listener's table holds it (src/http/server.ts). */
export interface HeldConnection {
  readonly socket: Socket;
  /** When it was last active, as the listener's request counter then: lower is longer ago. */
  seen: number;
  standing(): Standing;
  /** Close it to make room (a request whose body is arriving is answered first). */
  evict(): void;
  /** Answer each request open on it with `reply`, as the connection's last (the drain's deadline); how many. */
  cutOpen(reply: Reply): number;
}

const rank: Readonly<Record<Standing, number>> = { idle: 0, head: 1, body: 2, busy: 3 };

/**
 * The connection to close to make room for `arriving`: the one of the cheapest standing, the longest inactive
 * among those; null when all others are busy. A trickling head is cut as soon as the room is needed and no idle
 * connection is left, however long node's own headers timeout.
 */
export function pickVictim<T extends { readonly seen: number; standing(): Standing }>(held: Iterable<T>, arriving: T | undefined): T | null {
  let best: T | null = null;
  let bestRank = rank.busy;
  for (const connection of held) {
    if (connection === arriving) continue;
    const r = rank[connection.standing()];
    if (r < bestRank || (r === bestRank && best !== null && connection.seen < best.seen)) {
      best = connection;
      bestRank = r;
    }
  }
  return best;
}

/** A listener with its connection table (src/http/server.ts RunningServer). */
export interface CappedListener {
  readonly server: { on(event: 'connection', listener: (socket: Socket) => void): unknown };
  readonly held: ReadonlyMap<Socket, HeldConnection>;
}

/** Dependencies of capConnections. */
export interface ConnectionCapDeps {
  /** Metric label and log field naming the listener (`api`, `ops`). */
  readonly listener: string;
  readonly max: number;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly now: () => number;
  /** Least time between two log lines about evicted, or dropped, connections (default 10 s). */
  readonly logEveryMs?: number;
}

/** A log line at most once per `everyMs`, saying how many happened since the last one. */
function rateLimitedLine(everyMs: number, now: () => number, write: (count: number) => void): () => void {
  let lastAt = Number.NEGATIVE_INFINITY;
  let unlogged = 0;
  return () => {
    unlogged += 1;
    const at = now();
    if (at - lastAt < everyMs) return;
    write(unlogged);
    lastAt = at;
    unlogged = 0;
  };
}

/** Apply the cap to a listening server and report what it evicts and drops; never throws. */
export function capConnections(running: CappedListener, deps: ConnectionCapDeps): void {
  const { listener, max, logger, now } = deps;
  const logEveryMs = deps.logEveryMs ?? 10_000;
  const dropped = deps.metrics.connectionsDropped.labels({ listener });
  const evicted = deps.metrics.connectionsEvicted;
  const logDrop = rateLimitedLine(logEveryMs, now, (count) =>
    logger.warn({ listener, maxConnections: max, dropped: count }, 'connections dropped: the listener is at its connection cap with a request being worked on in every connection'),
  );
  const logEviction = rateLimitedLine(logEveryMs, now, (count) =>
    logger.warn({ listener, maxConnections: max, evicted: count }, 'connections closed to make room: the listener is at its connection cap'),
  );
  // Registered after the listener's own table entry (server.ts prepends it): the new socket is in `held`.
  running.server.on('connection', (socket) => {
    if (running.held.size <= max) return;
    const arriving = running.held.get(socket);
    const victim = pickVictim(running.held.values(), arriving);
    // Every other connection has a request being worked on: the new one is closed before a byte is read.
    if (victim === null) {
      if (arriving) arriving.evict();
      else socket.destroy();
      dropped.inc();
      logDrop();
      return;
    }
    evicted.inc({ listener, standing: victim.standing() });
    victim.evict();
    logEviction();
  });
  deps.metrics.observeListener(listener, { max, open: () => Promise.resolve(running.held.size) });
}
