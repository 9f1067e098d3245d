/**
 * Which cache entry a named-endpoint run request is (src/http/routes/endpoint-run.ts), or none when upstream must
 * judge it: pure, no IO.
 */
import { isRecord } from '../body.js';

/** Run body keys upstream accepts (seed era, plus `debug` which its code reads); others get its 400. */
const runKeys = new Set(['client_query_id', 'refresh', 'variables', 'query_override', 'filters_override', 'version', 'debug']);
const cachedRefresh = new Set([undefined, 'blocking', 'async_except_on_cache_miss']);

/** JSON with object keys sorted at every level: equal values, equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Whether `text` is all ASCII digits (and not empty): a project id rather than `@current`, a version number. */
export function isDigits(text: string): boolean {
  if (text.length === 0) return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** How a run request is answered. */
export type RunPlan =
  | { readonly kind: 'cached'; readonly key: string; readonly latest: boolean }
  | { readonly kind: 'force'; readonly key: string; readonly latest: boolean }
  | { readonly kind: 'uncached' };

/**
 * The plan for a run of `name` with `body` (POST; null for GET) and `?version`: which cache entry it is, or
 * none when upstream must judge the request. The key still lacks the project and generation prefix.
 */
export function planRun(name: string, body: unknown, queryVersion: string | undefined): RunPlan {
  const request = body === null ? {} : body;
  if (!isRecord(request)) return { kind: 'uncached' };
  for (const key of Object.keys(request)) if (!runKeys.has(key)) return { kind: 'uncached' };
  let version: string;
  if (request.version !== undefined && request.version !== null) {
    if (typeof request.version !== 'number' || !Number.isInteger(request.version)) return { kind: 'uncached' };
    version = String(request.version);
  } else if (queryVersion !== undefined) {
    if (!isDigits(queryVersion)) return { kind: 'uncached' };
    version = String(Number(queryVersion));
  } else version = 'latest';
  const refresh = request.refresh;
  if (refresh !== 'force_blocking' && !cachedRefresh.has(refresh as string | undefined)) return { kind: 'uncached' };
  if (request.debug !== undefined && typeof request.debug !== 'boolean') return { kind: 'uncached' };
  // An explicit `refresh` gets entries of its own: upstreams disagree on its values (the seed era's RefreshType
  // defaults to `blocking`; newer ones take only EndpointRefreshMode's `cache`/`force`/`direct` and answer 400 to
  // `blocking`), so an answer to a request without it must never stand in for one with it. force_blocking replaces
  // the entry of a request without `refresh`, the run it forces.
  const refreshPart = refresh === undefined || refresh === 'force_blocking' ? '' : (refresh as string);
  const key = [
    name,
    version,
    refreshPart,
    request.debug === true ? 'debug' : '',
    canonicalJson(request.variables ?? null),
    canonicalJson(request.filters_override ?? null),
    canonicalJson(request.query_override ?? null),
  ].join('\u0000');
  const latest = version === 'latest';
  return refresh === 'force_blocking' ? { kind: 'force', key, latest } : { kind: 'cached', key, latest };
}
