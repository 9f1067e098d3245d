/**
 * node:http listeners: parse the request line once, dispatch through the router, turn thrown errors into
 * upstream-style bodies, count every answer per route name. Timeouts and header limits guard the sockets;
 * `close()` stops accepting, lets in-flight requests finish within a bound, then drops what is left.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { newAuthMemo, type AuthMemo } from '../auth/authenticate.js';
import { ApiError, methodNotAllowed, notFound, serverError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { emptyQuery, parseQuery } from './query.js';
import { errorReply, send } from './respond.js';
import type { Match, Reply, RequestContext } from './router.js';

/** Dependencies of createHttpServer. */
export interface HttpServerDeps {
  readonly match: (method: string, path: string) => Match;
  readonly logger: Logger;
  /** Per-route request metrics; omitted for the ops listener. */
  readonly metrics?: Metrics;
}

/** A started listener. */
export interface RunningServer {
  readonly server: Server;
  readonly url: string;
  /** Stop accepting; wait up to `graceMs` for in-flight requests, then close every connection. */
  close(graceMs: number): Promise<void>;
}

/** Create the request listener (exported for tests that want a handler without a socket). */
export function createRequestListener(deps: HttpServerDeps) {
  const { match, logger, metrics } = deps;
  let requestCount = 0;
  const memos = new WeakMap<object, AuthMemo>();
  const memoFor = (socket: object): AuthMemo => {
    let memo = memos.get(socket);
    if (memo === undefined) {
      memo = newAuthMemo();
      memos.set(socket, memo);
    }
    return memo;
  };

  return (req: IncomingMessage, res: ServerResponse): void => {
    const started = metrics ? performance.now() : 0;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const method = req.method ?? 'GET';
    const head = method === 'HEAD';
    const requestId = ++requestCount;
    let routeName = 'unmatched';

    const finish = (reply: Reply): void => {
      if (res.destroyed) return;
      send(res, reply, head);
      if (metrics) metrics.http.record(routeName, reply.status, (performance.now() - started) / 1000);
    };
    const fail = (error: unknown): void => {
      if (error instanceof ApiError) return finish(errorReply(error));
      logger.error({ requestId, route: routeName, err: error instanceof Error ? error.stack : String(error) }, 'request failed');
      finish(errorReply(serverError()));
    };

    let found: Match;
    try {
      found = match(method, path);
    } catch {
      return finish(errorReply(notFound())); // undecodable %-escape in the path
    }
    if (found.kind === 'not_found') return finish(errorReply(notFound()));
    routeName = found.route.name;
    if (found.kind === 'method_not_allowed') return finish(errorReply(methodNotAllowed(method)));
    const ctx: RequestContext = {
      method,
      path,
      query: q < 0 ? emptyQuery : parseQuery(url.slice(q + 1)),
      headers: req.headers,
      params: found.params,
      requestId,
      authMemo: memoFor(req.socket),
    };
    try {
      const reply = found.route.handler(ctx);
      if (reply instanceof Promise) reply.then(finish, fail);
      else finish(reply);
    } catch (error) {
      fail(error);
    }
  };
}

/** Listen on host:port (port 0: any free port) and resolve once listening. */
export async function startHttpServer(deps: HttpServerDeps, host: string, port: number): Promise<RunningServer> {
  const server = createServer(
    { keepAliveTimeout: 65_000, headersTimeout: 30_000, requestTimeout: 60_000, maxHeaderSize: 16 * 1024 },
    createRequestListener(deps),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    server,
    url: `http://${shownHost}:${address.port}`,
    async close(graceMs: number): Promise<void> {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs);
      });
      await Promise.race([closed, deadline]);
      clearTimeout(timer);
      server.closeAllConnections();
      await closed;
    },
  };
}
