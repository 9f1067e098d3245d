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
import { emptyQuery, parseQuery, type Query } from './query.js';
import { errorReply, send } from './respond.js';
import type { Handler, Match, Reply, RequestContext } from './router.js';

/** Dependencies of createHttpServer. */
export interface HttpServerDeps {
  readonly match: (method: string, path: string) => Match;
  readonly logger: Logger;
  /** Per-route request metrics; omitted for the ops listener. */
  readonly metrics?: Metrics;
  /**
   * Answers a method a route does not map (it throws the refusal). Upstream authenticates and checks
   * permissions before it looks at the method; without this the listener answers 405 at once.
   */
  readonly refuseMethod?: Handler;
}

/** A started listener. */
export interface RunningServer {
  readonly server: Server;
  readonly url: string;
  /** Stop accepting; wait up to `graceMs` for in-flight requests, then close every connection. */
  close(graceMs: number): Promise<void>;
}

/** What the listener keeps per keep-alive connection (it dies with the socket). */
interface ConnectionState {
  readonly auth: AuthMemo;
  /** The last raw query string and its parse: SDKs repeat the same request on a connection. */
  rawQuery: string;
  query: Query;
}

/** Create the request listener (exported for tests that want a handler without a socket). */
export function createRequestListener(deps: HttpServerDeps) {
  const { match, logger, metrics } = deps;
  let requestCount = 0;
  const connections = new WeakMap<object, ConnectionState>();

  function connectionOf(socket: object): ConnectionState {
    let state = connections.get(socket);
    if (state === undefined) {
      state = { auth: newAuthMemo(), rawQuery: '', query: emptyQuery };
      connections.set(socket, state);
    }
    return state;
  }

  function finish(res: ServerResponse, head: boolean, route: string, started: number, reply: Reply): void {
    if (res.destroyed) return;
    try {
      send(res, reply, head);
    } catch (error) {
      // A reply node:http refuses (say, an invalid header value): log it and drop the connection.
      logger.error({ route, err: error instanceof Error ? error.message : String(error) }, 'could not write response');
      res.destroy();
      return;
    }
    if (metrics) metrics.http.record(route, reply.status, (performance.now() - started) / 1000);
  }

  function fail(res: ServerResponse, head: boolean, route: string, started: number, requestId: number, error: unknown): void {
    if (!(error instanceof ApiError)) {
      logger.error({ requestId, route, err: error instanceof Error ? error.stack : String(error) }, 'request failed');
    }
    finish(res, head, route, started, errorReply(error instanceof ApiError ? error : serverError()));
  }

  return (req: IncomingMessage, res: ServerResponse): void => {
    const started = metrics ? performance.now() : 0;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const method = req.method ?? 'GET';
    const head = method === 'HEAD';
    const requestId = ++requestCount;

    let found: Match;
    try {
      found = match(method, path);
    } catch {
      return finish(res, head, 'unmatched', started, errorReply(notFound())); // undecodable %-escape in the path
    }
    if (found.kind === 'not_found') return finish(res, head, 'unmatched', started, errorReply(notFound()));
    const route = found.route.name;
    if (found.kind === 'method_not_allowed' && deps.refuseMethod === undefined) {
      return finish(res, head, route, started, errorReply(methodNotAllowed(method)));
    }
    const handler = found.kind === 'found' ? found.route.handler : (deps.refuseMethod as Handler);
    const connection = connectionOf(req.socket);
    let query = emptyQuery;
    const raw = q >= 0 ? url.slice(q + 1) : '';
    if (q >= 0) {
      if (raw === connection.rawQuery) query = connection.query;
      else {
        query = parseQuery(raw);
        // A query carrying a key is never kept past its request.
        if (!query.has('personal_api_key')) {
          connection.rawQuery = raw;
          connection.query = query;
        }
      }
    }
    const ctx: RequestContext = {
      method,
      path,
      query,
      rawQuery: raw,
      headers: req.headers,
      params: found.kind === 'found' ? found.params : [],
      requestId,
      authMemo: connection.auth,
      request: req,
    };
    try {
      const reply = handler(ctx);
      if (reply instanceof Promise) {
        reply.then(
          (r) => finish(res, head, route, started, r),
          (error: unknown) => fail(res, head, route, started, requestId, error),
        );
      } else finish(res, head, route, started, reply);
    } catch (error) {
      fail(res, head, route, started, requestId, error);
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
  // After listening, errors (e.g. EMFILE on accept) are logged, never fatal.
  server.on('error', (error) => deps.logger.error({ err: error.message, host, port }, 'listener error'));
  server.on('clientError', (error, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
    deps.logger.debug({ err: error.message }, 'bad request from client');
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
