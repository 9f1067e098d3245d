/**
 * Keep-alive load across a signal: N connections each send GET after GET (pipelined, no think time), and every
 * request ends up in exactly one bucket — answered whole (before or after the signal), or cut (the socket
 * ended after part of its answer), or never answered (the socket was closed before any byte of an answer, or
 * was gone before the request was written). Used by the shutdown fault tests and test/bench/shutdown.ts.
 */
import { openRaw, rawRequest, type RawConnection } from './raw-connection.js';

/** What the load saw. */
export interface LoadOutcome {
  /** Whole answers that arrived before the signal was sent. */
  servedBefore: number;
  /** Whole answers that arrived after it. */
  servedAfter: number;
  /** Of servedAfter: answers that were not 2xx (a 503 saying the sidecar is shutting down, say). */
  refusedAfter: number;
  /** Whole answers after the signal without `Connection: close` (the connection stayed open for more). */
  keptAliveAfter: number;
  /** Requests whose answer was cut after some bytes, or failed with an error after some bytes. */
  cut: number;
  /** Requests written whose socket closed (or reset) before any byte of an answer. */
  notAnswered: number;
  /** Error codes seen on sockets that closed. */
  errors: Record<string, number>;
}

/** A running load. */
export interface Load {
  /** Resolves once `total` whole answers arrived (counting from the start). */
  reached(total: number): Promise<void>;
  /** Mark the moment the signal is sent. */
  signalled(): void;
  /** Resolves when every connection has closed, with the counts. */
  readonly done: Promise<LoadOutcome>;
}

/**
 * Start `connections` keep-alive loops of `GET url` with `headers`, each keeping `depth` requests pipelined
 * (so that at any moment each connection has a request the server has read or is about to read).
 */
export async function startKeepAliveLoad(url: string, headers: Record<string, string>, connections: number, depth = 2): Promise<Load> {
  const target = new URL(url);
  const request = rawRequest('GET', `${target.pathname}${target.search}`, headers);
  const outcome: LoadOutcome = { servedBefore: 0, servedAfter: 0, refusedAfter: 0, keptAliveAfter: 0, cut: 0, notAnswered: 0, errors: {} };
  let after = false;
  const waiters: Array<{ total: number; resolve: () => void }> = [];

  async function loop(connection: RawConnection): Promise<void> {
    let outstanding = 0;
    let closing = false;
    const write = (): void => {
      if (connection.send(request)) outstanding += 1; // a request not written (socket gone) was never taken
    };
    for (let i = 0; i < depth; i += 1) write();
    while (outstanding > 0) {
      const answer = await connection.next();
      outstanding -= 1;
      if (answer.kind === 'closed') {
        if (answer.bytes > 0) outcome.cut += 1;
        else outcome.notAnswered += 1;
        outcome.notAnswered += outstanding; // pipelined behind it: not a byte of their answers came
        if (answer.error !== null) outcome.errors[answer.error] = (outcome.errors[answer.error] ?? 0) + 1;
        return;
      }
      closing ||= answer.headers.connection === 'close';
      if (after) {
        outcome.servedAfter += 1;
        if (answer.status >= 300) outcome.refusedAfter += 1;
        if (!closing) outcome.keptAliveAfter += 1;
      } else outcome.servedBefore += 1;
      const total = outcome.servedBefore + outcome.servedAfter;
      for (const waiter of waiters.filter((w) => total >= w.total)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      if (!closing) write();
    }
    await connection.closed;
  }

  const opened = await Promise.all(Array.from({ length: connections }, () => openRaw(url)));
  const done = Promise.all(opened.map(loop)).then(() => outcome);
  return {
    reached: (total) =>
      new Promise<void>((resolve) => {
        if (outcome.servedBefore + outcome.servedAfter >= total) resolve();
        else waiters.push({ total, resolve });
      }),
    signalled: () => {
      after = true;
    },
    done,
  };
}
