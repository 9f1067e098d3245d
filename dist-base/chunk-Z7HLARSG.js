import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);

// src/upstream/client.ts
import { performance } from "node:perf_hooks";
import { Pool } from "undici";
var causeByCode = {
  UND_ERR_CONNECT_TIMEOUT: "timeout",
  UND_ERR_HEADERS_TIMEOUT: "timeout",
  UND_ERR_BODY_TIMEOUT: "timeout",
  ECONNREFUSED: "connect",
  ENOTFOUND: "connect",
  EAI_AGAIN: "connect",
  EHOSTUNREACH: "connect",
  ENETUNREACH: "connect",
  ECONNRESET: "reset",
  EPIPE: "reset",
  UND_ERR_SOCKET: "reset",
  UND_ERR_CLOSED: "reset",
  UND_ERR_RES_EXCEEDED_MAX_SIZE: "too_large",
  UND_ERR_ABORTED: "aborted",
  ABORT_ERR: "aborted"
};
function classifyFailure(error, deadlineHit) {
  const err = error;
  const nested = err.cause;
  const code = typeof err.code === "string" ? err.code : typeof nested?.code === "string" ? nested.code : String(err.name ?? "Error");
  let cause = causeByCode[code] ?? (err.name === "AbortError" ? "aborted" : "other");
  if (deadlineHit) cause = "timeout";
  return { kind: "failure", cause, code, message: typeof err.message === "string" ? err.message : String(error) };
}
var dropped = /* @__PURE__ */ new Set(["origin", "host", "connection", "keep-alive", "transfer-encoding", "user-agent"]);
function upstreamHeaders(userAgent, given) {
  const headers = {};
  for (const [name, value] of Object.entries(given ?? {})) {
    const lower = name.toLowerCase();
    if (dropped.has(lower)) continue;
    headers[lower] = value;
  }
  headers["user-agent"] = userAgent;
  return headers;
}
function createUpstreamClient(options) {
  const { url, metrics } = options;
  const basePath = url.pathname === "/" ? "" : url.pathname;
  const pool = new Pool(url.origin, {
    connections: options.connections ?? 16,
    pipelining: 1,
    keepAliveTimeout: 3e4,
    connectTimeout: options.connectTimeoutMs,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    maxResponseSize: options.maxBodyBytes
  });
  const deadlineMs = options.connectTimeoutMs + 2 * options.timeoutMs;
  async function request(req) {
    const started = performance.now();
    const controller = new AbortController();
    let deadlineHit = false;
    const timer = setTimeout(() => {
      deadlineHit = true;
      controller.abort();
    }, deadlineMs);
    const onAbort = () => controller.abort();
    req.signal?.addEventListener("abort", onAbort, { once: true });
    if (req.signal?.aborted) controller.abort();
    const signal = controller.signal;
    let result;
    try {
      const response = await pool.request({
        method: req.method,
        path: basePath + req.path,
        headers: upstreamHeaders(options.userAgent, req.headers),
        body: req.body,
        signal
      });
      const body = Buffer.from(await response.body.arrayBuffer());
      result = { kind: "response", status: response.statusCode, headers: response.headers, body };
    } catch (error) {
      result = classifyFailure(error, deadlineHit && !req.signal?.aborted);
    } finally {
      clearTimeout(timer);
      req.signal?.removeEventListener("abort", onAbort);
    }
    const status = result.kind === "response" ? String(result.status) : result.cause;
    metrics.upstreamRequests.inc({ operation: req.operation, status });
    metrics.upstreamDuration.observe({ operation: req.operation }, (performance.now() - started) / 1e3);
    return result;
  }
  return {
    request,
    /** Base URL requests go to, for logs (never carries credentials). */
    origin: url.origin + basePath,
    close: () => pool.close(),
    /** Drop in-flight requests and sockets at once. */
    destroy: () => pool.destroy()
  };
}

export {
  classifyFailure,
  upstreamHeaders,
  createUpstreamClient
};
//# sourceMappingURL=chunk-Z7HLARSG.js.map
