/**
 * A cap on the connections one listener holds open (node's `server.maxConnections`), so that clients cannot use
 * up the process's file handles, which the snapshot writes, upstream requests and the other listener need too.
 * Past the cap node accepts a new connection and closes it at once, before reading anything: the client sees
 * its connection closed without an answer. Each one is counted per listener, and logged at most once per
 * `logEveryMs` (with how many were dropped since the last line).
 */
import type { Server } from 'node:net';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';

/** Dependencies of capConnections. */
export interface ConnectionCapDeps {
  /** Metric label and log field naming the listener (`api`, `ops`). */
  readonly listener: string;
  readonly max: number;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly now: () => number;
  /** Least time between two log lines about dropped connections (default 10 s). */
  readonly logEveryMs?: number;
}

/** Apply the cap to a listening server and report what it drops; never throws. */
export function capConnections(server: Server, deps: ConnectionCapDeps): void {
  const { listener, max, logger, now } = deps;
  const logEveryMs = deps.logEveryMs ?? 10_000;
  const dropped = deps.metrics.connectionsDropped.labels({ listener });
  let lastLogAt = Number.NEGATIVE_INFINITY;
  let unlogged = 0;
  server.maxConnections = max;
  server.on('drop', () => {
    dropped.inc();
    unlogged += 1;
    const at = now();
    if (at - lastLogAt < logEveryMs) return;
    logger.warn({ listener, maxConnections: max, dropped: unlogged }, 'connections dropped: the listener is at its connection cap');
    lastLogAt = at;
    unlogged = 0;
  });
  deps.metrics.observeListener(listener, {
    max,
    open: () => new Promise((resolve) => server.getConnections((error, count) => resolve(error ? 0 : count))),
  });
}
