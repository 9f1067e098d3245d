/**
 * node:http listeners: parse the request line once, dispatch through the router, turn thrown errors into
 * upstream-style bodies, count every answer per route name. Timeouts and header limits guard the sockets; every
 * open connection is held in a table saying what it is doing (for the cap, src/http/connection-cap.ts);
 * `close()` stops accepting, lets in-flight requests finish within a bound, answers what is still unanswered,
 * then drops what is left.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
// The module's binding: the global `performance` is an accessor, called on every use.
import { performance } from 'node:perf_hooks';
import { newAuthMemo, type AuthMemo } from '../auth/authenticate.js';
import type { AccessLog } from './access-log.js';
import { ApiError, methodNotAllowed, notFound, requestCut, serverError, shutDownFirst } from '../errors.js';
import { clientErrorResponse } from './client-error.js';
import { http } from './node-http.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { emptyQuery, parseQuery, type Query } from './query.js';
import type { Drain } from './drain.js';
import type { HeldConnection, Standing } from './connection-cap.js';
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
  /** The connections open now, each with what it is doing (connection-cap.ts evicts from these). */
  readonly held: ReadonlyMap<Socket, HeldConnection>;
  /**
   * Stop accepting; wait up to `graceMs` for in-flight requests; answer those still open 503 (in the grace's last
   * tenth, at most 200 ms), then close every connection. True when no request had to be cut short.
   */
  close(graceMs: number): Promise<boolean>;
}

/** What the listener keeps per connection, from its accept until it closes. */
interface ConnectionState extends HeldConnection {
  readonly auth: AuthMemo;
  /** Requests taken and not yet answered, oldest first (more than one only when pipelined). */
  readonly open: OpenRequest[];
  /** Whether it has answered a request: a kept-alive connection, not one still waiting for its first request. */
  answered: boolean;
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

/** One request the listener took, as the connection table sees it. */
interface OpenRequest {
  readonly request: IncomingMessage;
  /** Answer now with `reply`, whatever the handler answers later (which is then dropped). */
  cut(reply: Reply): void;
}

/**
 * A request listener, how many requests it has taken, and the connection table: `accept` enters a socket (node:http's
 * 'connection' event), `held` is every open one.
 */
export type RequestListener = ((req: IncomingMessage, res: ServerResponse) => void) & {
  readonly requests: () => number;
  readonly accept: (socket: Socket) => void;
  readonly held: ReadonlyMap<Socket, HeldConnection>;
};

/** Create the request listener (exported for tests that want a handler without a socket). */
export function createRequestListener(deps: HttpServerDeps): RequestListener {
  const { match, logger, metrics, drain, accessLog } = deps;
  // Fixed at start: with both false, a request costs one branch here and nothing else.
  const logRefusals = accessLog?.refusals === true;
  const logSuccesses = accessLog?.successes === true;
  const timed = metrics !== undefined || logRefusals || logSuccesses;
  let requestCount = 0;
  const connections = new Map<Socket, ConnectionState>();

  function standing(this: ConnectionState): Standing {
    const open = this.open;
    if (open.length === 0) return this.answered ? 'idle' : 'head';
    for (const exchange of open) if (!exchange.request.complete) return 'body';
    return 'busy';
  }

  function cutOpen(this: ConnectionState, reply: Reply): number {
    const open = this.open.slice();
    for (const exchange of open) exchange.cut(reply);
    return open.length;
  }

  function evict(this: ConnectionState): void {
    // Out of the table at once: it no longer counts against the cap, nor is picked again, while it closes.
    connections.delete(this.socket);
    if (this.open.length === 0) {
      this.socket.destroy();
      return;
    }
    // A body still arriving: nothing was done with the request; it is told so, then the connection closes.
    this.cutOpen(errorReply(requestCut()));
    this.socket.destroySoon();
  }

  function accept(socket: Socket): void {
    const state: ConnectionState = {
      socket,
      seen: requestCount,
      standing,
      evict,
      cutOpen,
      open: [],
      answered: false,
      auth: newAuthMemo(),
      method: '',
      url: '',
      path: '',
      rawQuery: '',
      query: emptyQuery,
      found: null,
    };
    connections.set(socket, state);
    socket.once('close', () => connections.delete(socket));
  }

  /** A request on `connection` was answered (or its answer given up). */
  function settle(connection: ConnectionState, exchange: OpenRequest | null): void {
    connection.answered = true;
    if (exchange === null) return;
    const open = connection.open;
    // Nearly always the only one (more only when pipelined).
    if (open.length === 1 && open[0] === exchange) open.pop();
    else {
      const at = open.indexOf(exchange);
      if (at >= 0) open.splice(at, 1);
    }
  }

  /** The state of `socket`: entered at accept; a socket handed to the listener without an accept gets one now. */
  function connectionOf(socket: Socket): ConnectionState {
    const state = connections.get(socket);
    if (state !== undefined) return state;
    accept(socket);
    return connections.get(socket) as ConnectionState;
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
  class Exchange implements RequestContext, OpenRequest {
    readonly headers: IncomingMessage['headers'];
    private answered = false;
    /** Written (or cut): whatever the handler answers after that is dropped. */
    private done = false;
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
      private readonly connection: ConnectionState,
    ) {
      this.headers = request.headers;
      connection.open.push(this);
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

    cut(reply: Reply): void {
      this.answered = true;
      // As the connection's last: what the handler was doing is not waited for.
      this.write({ ...reply, headers: { ...reply.headers, connection: 'close' } });
    }

    // Writing may run from a socket event, where nothing may escape: a failure drops the connection.
    private write(reply: Reply): void {
      if (this.done) return;
      this.done = true;
      settle(this.connection, this);
      try {
        finish(this.res, this.head, this.route, this.started, reply, this.request, this.query, this.requestId);
      } catch (error) {
        this.drop(error);
      }
    }

    private writeError(error: unknown): void {
      if (this.done) return;
      this.done = true;
      settle(this.connection, this);
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
    const connection = connectionOf(req.socket as Socket);
    connection.seen = requestId;

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
        finish(res, head, 'unmatched', started, errorReply(notFound()), req, null, requestId, 'not_found'); // undecodable %-escape in the path
        return settle(connection, null);
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
    if (found.kind === 'not_found') {
      finish(res, head, 'unmatched', started, errorReply(notFound()), req, query, requestId, 'not_found');
      return settle(connection, null);
    }
    const route = found.route.name;
    if (found.kind === 'method_not_allowed' && deps.refuseMethod === undefined) {
      finish(res, head, route, started, errorReply(methodNotAllowed(method)), req, query, requestId, 'method_not_allowed');
      return settle(connection, null);
    }
    const handler: RouteHandler = found.kind === 'found' ? found.route.handler : (deps.refuseMethod as Handler);
    const ctx = new Exchange(method, path, query, raw, req, found.kind === 'found' ? found.params : noParams, requestId, connection.auth, res, head, route, started, connection);
    try {
      const reply = handler(ctx);
      if (reply !== later) ctx.answer(reply);
    } catch (error) {
      ctx.answerError(error);
    }
  };
  return Object.assign(listener, { requests: (): number => requestCount, accept, held: connections });
}

const noParams: readonly string[] = Object.freeze([]);

/** Listen on host:port (port 0: any free port) and resolve once listening. */
export async function startHttpServer(deps: HttpServerDeps, host: string, port: number): Promise<RunningServer> {
  const listener = createRequestListener(deps);
  const server = http.createServer({ keepAliveTimeout: 65_000, headersTimeout: 30_000, requestTimeout: 60_000, maxHeaderSize: 16 * 1024 }, listener);
  // Entered in the connection table before any other 'connection' listener (the cap) looks at it.
  server.prependListener('connection', listener.accept);
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
    held: listener.held,
    async close(graceMs: number): Promise<boolean> {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // The last part of the grace is for writing the answers of the requests still open then.
      const flushMs = Math.min(maxFlushMs, Math.floor(graceMs / 10));
      const drained = await settleWithin(closed, graceMs - flushMs);
      let cut = false;
      if (!drained) {
        for (const connection of listener.held.values()) {
          if (connection.cutOpen(errorReply(shutDownFirst())) > 0) cut = true;
        }
        await settleWithin(closed, flushMs);
      }
      server.closeAllConnections();
      await closed;
      return !cut;
    },
  };
}

/** At most this much of the drain's grace is kept for writing the answers that it cut short. */
const maxFlushMs = 200;

/** Whether `work` settled within `ms`. */
async function settleWithin(work: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const settled = await Promise.race([work.then(() => true), deadline]);
  clearTimeout(timer);
  return settled;
}
