/**
 * Upstream HTTP client on undici: one keep-alive Pool for the upstream origin, connect/headers/body timeouts,
 * an overall deadline, a bound on body size, and `User-Agent: flag-sidecar/<version>`. It never throws for
 * network trouble: every call resolves to a typed outcome, failures classified by undici's error codes.
 */
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import type { UpstreamFailureCause } from '../errors.js';
import type { Metrics } from '../metrics/metrics.js';

/** A request relative to the upstream base URL. `path` includes the query string. */
export interface UpstreamRequest {
  readonly operation: string;
  readonly method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE' | 'HEAD';
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: Buffer | string;
  readonly signal?: AbortSignal;
}

/** Why a request produced no response. */
export type FailureCause = UpstreamFailureCause;

/** What came back: a response (any status) or a classified failure. */
export type UpstreamResult =
  | {
      readonly kind: 'response';
      readonly status: number;
      readonly headers: Readonly<Record<string, string | string[] | undefined>>;
      readonly body: Buffer;
    }
  | { readonly kind: 'failure'; readonly cause: FailureCause; readonly code: string; readonly message: string };

/** Options of createUpstreamClient. */
export interface UpstreamClientOptions {
  readonly url: URL;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly maxBodyBytes: number;
  readonly userAgent: string;
  readonly connections?: number;
  readonly metrics: Metrics;
}

const causeByCode: Record<string, FailureCause> = {
  UND_ERR_CONNECT_TIMEOUT: 'timeout',
  UND_ERR_HEADERS_TIMEOUT: 'timeout',
  UND_ERR_BODY_TIMEOUT: 'timeout',
  ECONNREFUSED: 'connect',
  ENOTFOUND: 'connect',
  EAI_AGAIN: 'connect',
  EHOSTUNREACH: 'connect',
  ENETUNREACH: 'connect',
  ECONNRESET: 'reset',
  EPIPE: 'reset',
  UND_ERR_SOCKET: 'reset',
  UND_ERR_CLOSED: 'reset',
  UND_ERR_RES_EXCEEDED_MAX_SIZE: 'too_large',
  UND_ERR_ABORTED: 'aborted',
  ABORT_ERR: 'aborted',
};

/** Classify an error thrown by undici (or by an abort) into a failure outcome. */
export function classifyFailure(error: unknown, deadlineHit: boolean): UpstreamResult & { kind: 'failure' } {
  const err = error as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown };
  const nested = err.cause as { code?: unknown } | undefined;
  const code = typeof err.code === 'string' ? err.code : typeof nested?.code === 'string' ? nested.code : String(err.name ?? 'Error');
  let cause = causeByCode[code] ?? (err.name === 'AbortError' ? 'aborted' : 'other');
  if (deadlineHit) cause = 'timeout';
  return { kind: 'failure', cause, code, message: typeof err.message === 'string' ? err.message : String(error) };
}

const dropped = new Set(['origin', 'host', 'connection', 'keep-alive', 'transfer-encoding', 'user-agent']);

/**
 * The headers sent upstream: the request's plus our User-Agent, never an `Origin` (upstream's first
 * authenticator, `TemporaryTokenAuthentication` in PostHog's `posthog/auth.py`, rejects a foreign Origin) nor
 * hop-by-hop headers.
 */
export function upstreamHeaders(userAgent: string, given: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(given ?? {})) {
    const lower = name.toLowerCase();
    if (dropped.has(lower)) continue;
    headers[lower] = value;
  }
  headers['user-agent'] = userAgent;
  return headers;
}

/** Create the client. `close()` waits for in-flight requests to finish, then closes the sockets. */
export function createUpstreamClient(options: UpstreamClientOptions) {
  const { url, metrics } = options;
  const basePath = url.pathname === '/' ? '' : url.pathname;
  const pool = new Pool(url.origin, {
    connections: options.connections ?? 16,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    connectTimeout: options.connectTimeoutMs,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    maxResponseSize: options.maxBodyBytes,
  });
  const deadlineMs = options.connectTimeoutMs + 2 * options.timeoutMs;

  async function request(req: UpstreamRequest): Promise<UpstreamResult> {
    const started = performance.now();
    // One controller per request, linked to the caller's signal by a listener removed afterwards (no
    // AbortSignal.any on a long-lived signal, whose dependants Node 20 can keep alive).
    const controller = new AbortController();
    let deadlineHit = false;
    const timer = setTimeout(() => {
      deadlineHit = true;
      controller.abort();
    }, deadlineMs);
    const onAbort = (): void => controller.abort();
    req.signal?.addEventListener('abort', onAbort, { once: true });
    if (req.signal?.aborted) controller.abort();
    const signal = controller.signal;
    let result: UpstreamResult;
    try {
      const response = await pool.request({
        method: req.method,
        path: basePath + req.path,
        headers: upstreamHeaders(options.userAgent, req.headers),
        body: req.body,
        signal,
      });
      const body = Buffer.from(await response.body.arrayBuffer());
      result = { kind: 'response', status: response.statusCode, headers: response.headers, body };
    } catch (error) {
      result = classifyFailure(error, deadlineHit && !req.signal?.aborted);
    } finally {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
    }
    const status = result.kind === 'response' ? String(result.status) : result.cause;
    metrics.upstreamRequests.inc({ operation: req.operation, status });
    metrics.upstreamDuration.observe({ operation: req.operation }, (performance.now() - started) / 1000);
    return result;
  }

  return {
    request,
    /** Base URL requests go to, for logs (never carries credentials). */
    origin: url.origin + basePath,
    close: (): Promise<void> => pool.close(),
    /** Drop in-flight requests and sockets at once. */
    destroy: (): Promise<void> => pool.destroy(),
  };
}

/** The upstream client handle passed around. */
export type UpstreamClient = ReturnType<typeof createUpstreamClient>;
