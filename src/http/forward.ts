/**
 * Requests passed upstream on the caller's behalf, and upstream's answers passed back: the path and query
 * exactly as the caller sent them, the caller's own credential (`Authorization` verbatim; a key in the query or
 * body travels there), a few content headers and nothing else (no Origin, no cookies, no hop-by-hop headers).
 * Upstream's status and body come back intact, with its content type and the headers a client acts on; a
 * request that got no answer becomes a 502/504 `server_error` naming the cause class.
 */
import { upstreamFailure } from '../errors.js';
import type { CachedResponse } from '../store/read-through.js';
import type { UpstreamResult } from '../upstream/client.js';
import type { Query } from './query.js';
import type { RequestContext } from './router.js';

/** Request headers passed upstream when present. */
const passedRequestHeaders = ['authorization', 'content-type', 'accept', 'accept-language'] as const;
/** Response headers passed back when present (content-length is always set from the body). */
const passedResponseHeaders = ['content-type', 'retry-after', 'www-authenticate', 'x-posthog-request-id'] as const;

/** Path and query for upstream, as sent by the caller. */
export const upstreamTarget = (ctx: RequestContext): string => (ctx.rawQuery === '' ? ctx.path : `${ctx.path}?${ctx.rawQuery}`);

/** The headers sent upstream for `ctx`. */
export function forwardedHeaders(ctx: RequestContext): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of passedRequestHeaders) {
    const value = ctx.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  headers.accept ??= 'application/json';
  return headers;
}

/** Upstream's answer as kept and served, or throws the 502/504 for a request that got none. */
export function responseFrom(result: UpstreamResult): CachedResponse {
  if (result.kind === 'failure') throw upstreamFailure(result.cause);
  const headers: Record<string, string> = {};
  for (const name of passedResponseHeaders) {
    const value = result.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  headers['content-length'] = String(result.body.length);
  return { status: result.status, headers, body: result.body };
}

/**
 * Canonical query for cache keys: the parsed parameters (the value upstream reads for each name) in name
 * order, the credential parameter left out (never kept, however it was encoded).
 */
export function canonicalQuery(query: Query): string {
  if (query.size === 0) return '';
  const parts: string[] = [];
  for (const [name, value] of query) if (name !== 'personal_api_key') parts.push(`${encodeURIComponent(name)}=${encodeURIComponent(value)}`);
  return parts.sort().join('&');
}
