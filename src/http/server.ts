/**
 * node:http listeners: parse the request line once, dispatch through the router, turn thrown errors into
 * upstream-style bodies, count every answer per route name. Timeouts and header limits guard the sockets;
 * `close()` stops accepting, lets in-flight requests finish within a bound, then drops what is left.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
// The module's binding: the global `performance` is an accessor, called on every use.
import { performance } from 'node:perf_hooks';
import { newAuthMemo, type AuthMemo } from '../auth/authenticate.js';
import type { AccessLog } from './access-log.js';
import { ApiError, methodNotAllowed, notFound, serverError } from '../errors.js';
import { clientErrorResponse } from './client-error.js';
import { http } from './node-http.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { emptyQuery, parseQuery, type Query } from './query.js';
import type { Drain } from './drain.js';
import { errorReply, send, shuttingDownReply } from './respond.js';
import { later, type Handler, type Match, type Reply, type RequestContext, type RouteHandler } from './router.js';

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
  /**
   * While it is draining, every answer is the connection's last (`Connection: close`) and a request that
   * arrives is refused unread (503 shutting down). Omitted for the ops listener, which answers probes to the end.
   */
  readonly drain?: Drain;
  /** One line per answered request (src/http/access-log.ts); omitted: none. */
  readonly accessLog?: AccessLog;
}

/** A started listener. */
export interface RunningServer {
  readonly server: Server;
  readonly url: string;
  /** Requests taken since start (each counted as it arrives, answered or not). */
  requests(): number;
  /** Stop accepting; wait up to `graceMs` for in-flight requests, then close every connection. */
  close(graceMs: number): Promise<void>;
}

/** What the listener keeps per keep-alive connection (it dies with the socket). */
interface ConnectionState {
  readonly auth: AuthMemo;
  /**
   * The last request line (method and URL) with its route match and parsed query: apps and SDKs repeat the same
   * request on a connection, and an equal string compares faster than a fresh one hashes. A URL carrying a
   * personal key is never kept past its request.
   */
  method: string;
  url: string;
  path: string;
  rawQuery: string;
  query: Query;
  found: Match | null;
}

/** A request listener, and how many requests it has taken. */
export type RequestListener = ((req: IncomingMessage, res: ServerResponse) => void) & { readonly requests: () => number };

/** Create the request listener (exported for tests that want a handler without a socket). */
export function createRequestListener(deps: HttpServerDeps): RequestListener {
  const { match, logger, metrics, drain, accessLog } = deps;
  // Fixed at start: with both false, a request costs one branch here and nothing else.
  const logRefusals = accessLog?.refusals === true;
  const logSuccesses = accessLog?.successes === true;
  const timed = metrics !== undefined || logRefusals || logSuccesses;
  let requestCount = 0;
  const connections = new WeakMap<object, ConnectionState>();

  function connectionOf(socket: object): ConnectionState {
    let state = connections.get(socket);
    if (state === undefined) {
      state = { auth: newAuthMemo(), method: '', url: '', path: '', rawQuery: '', query: emptyQuery, found: null };
      connections.set(socket, state);
    }
    return state;
  }

  function finish(res: ServerResponse, head: boolean, route: string, started: number, reply: Reply, req: IncomingMessage, query: Query | null, requestId: number, reason: string | null = null): void {
    if (res.destroyed) return;
    try {
      send(res, reply, head, drain?.draining === true);
    } catch (error) {
      // A reply node:http refuses (say, an invalid header value): log it and drop the connection.
      logger.error({ route, err: error instanceof Error ? error.message : String(error) }, 'could not write response');
      res.destroy();
      return;
    }
    if (metrics) metrics.http.record(route, reply.status, (performance.now() - started) / 1000);
    if (reply.status >= 400 ? logRefusals : logSuccesses) {
      const durationMs = performance.now() - started;
      (accessLog as AccessLog).write({ requestId, route, method: req.method ?? 'GET', status: reply.status, durationMs, headers: req.headers, query, reason, body: reply.body });
    }
  }

  function fail(res: ServerResponse, head: boolean, route: string, started: number, requestId: number, error: unknown, req: IncomingMessage, query: Query): void {
    if (!(error instanceof ApiError)) {
      logger.error({ requestId, route, err: error instanceof Error ? error.stack : String(error) }, 'request failed');
    }
    const refusal = error instanceof ApiError ? error : serverError();
    finish(res, head, route, started, errorReply(refusal), req, query, requestId, refusal.denial ?? refusal.code);
  }

  /** One request as handlers see it, and how its answer reaches the socket (once: later answers are ignored). */
  class Exchange implements RequestContext {
    readonly headers: IncomingMessage['headers'];
    private answered = false;
    constructor(
      readonly method: string,
      readonly path: string,
      readonly query: Query,
      readonly rawQuery: string,
      readonly request: IncomingMessage,
      readonly params: readonly string[],
      readonly requestId: number,
      readonly authMemo: AuthMemo,
      private readonly res: ServerResponse,
      private readonly head: boolean,
      private readonly route: string,
      private readonly started: number,
    ) {
      this.headers = request.headers;
    }

    answer(reply: Reply | Promise<Reply>): void {
      if (this.answered) return;
      this.answered = true;
      if (reply instanceof Promise) {
        reply.then(
          (r) => this.write(r),
          (error: unknown) => this.writeError(error),
        );
      } else this.write(reply);
    }

    answerError(error: unknown): void {
      if (this.answered) return;
      this.answered = true;
      this.writeError(error);
    }

    // Writing may run from a socket event, where nothing may escape: a failure drops the connection.
    private write(reply: Reply): void {
      try {
        finish(this.res, this.head, this.route, this.started, reply, this.request, this.query, this.requestId);
      } catch (error) {
        this.drop(error);
      }
    }

    private writeError(error: unknown): void {
      try {
        fail(this.res, this.head, this.route, this.started, this.requestId, error, this.request, this.query);
      } catch (thrown) {
        this.drop(thrown);
      }
    }

    private drop(error: unknown): void {
      logger.error({ route: this.route, err: error instanceof Error ? error.message : String(error) }, 'could not answer');
      this.res.destroy();
    }
  }

  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    const started = timed ? performance.now() : 0;
    const url = req.url ?? '/';
    const method = req.method ?? 'GET';
    const head = method === 'HEAD';
    const requestId = ++requestCount;
    if (drain?.draining) return finish(res, head, 'shutting_down', started, shuttingDownReply(), req, null, requestId, 'shutting_down');
    const connection = connectionOf(req.socket);

    let found: Match;
    let path: string;
    let raw: string;
    let query: Query;
    if (connection.found !== null && url === connection.url && method === connection.method) {
      found = connection.found;
      path = connection.path;
      raw = connection.rawQuery;
      query = connection.query;
    } else {
      const q = url.indexOf('?');
      path = q < 0 ? url : url.slice(0, q);
      raw = q < 0 ? '' : url.slice(q + 1);
      try {
        found = match(method, path);
      } catch {
        return finish(res, head, 'unmatched', started, errorReply(notFound()), req, null, requestId, 'not_found'); // undecodable %-escape in the path
      }
      query = q < 0 ? emptyQuery : parseQuery(raw);
      // A query carrying a key is never kept past its request.
      if (!query.has('personal_api_key')) {
        connection.method = method;
        connection.url = url;
        connection.path = path;
        connection.rawQuery = raw;
        connection.query = query;
        connection.found = found;
      } else connection.found = null;
    }
    if (found.kind === 'not_found') return finish(res, head, 'unmatched', started, errorReply(notFound()), req, query, requestId, 'not_found');
    const route = found.route.name;
    if (found.kind === 'method_not_allowed' && deps.refuseMethod === undefined) {
      return finish(res, head, route, started, errorReply(methodNotAllowed(method)), req, query, requestId, 'method_not_allowed');
    }
    const handler: RouteHandler = found.kind === 'found' ? found.route.handler : (deps.refuseMethod as Handler);
    const ctx = new Exchange(method, path, query, raw, req, found.kind === 'found' ? found.params : noParams, requestId, connection.auth, res, head, route, started);
    try {
      const reply = handler(ctx);
      if (reply !== later) ctx.answer(reply);
    } catch (error) {
      ctx.answerError(error);
    }
  };
  return Object.assign(listener, { requests: (): number => requestCount });
}

const noParams: readonly string[] = Object.freeze([]);

/** Listen on host:port (port 0: any free port) and resolve once listening. */
export async function startHttpServer(deps: HttpServerDeps, host: string, port: number): Promise<RunningServer> {
  const listener = createRequestListener(deps);
  const server = http.createServer({ keepAliveTimeout: 65_000, headersTimeout: 30_000, requestTimeout: 60_000, maxHeaderSize: 16 * 1024 }, listener);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // After listening, errors (e.g. EMFILE on accept) are logged, never fatal.
  server.on('error', (error) => deps.logger.error({ err: error.message, host, port }, 'listener error'));
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    // As node answers by default: only on a connection that has written nothing yet (never mid-response).
    if (socket.writable && (socket as Socket).bytesWritten === 0) socket.end(clientErrorResponse(error.code));
    else socket.destroy();
    deps.logger.debug({ err: error.message, code: error.code }, 'bad request from client');
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    server,
    url: `http://${shownHost}:${address.port}`,
    requests: listener.requests,
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
