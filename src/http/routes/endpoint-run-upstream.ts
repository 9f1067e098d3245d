/**
 * One named-endpoint run upstream with the caller's credential, and how long its answer is fresh (upstream's own
 * `cache_target_age`, bounded).
 */
import { offline, upstreamFailure } from '../../errors.js';
import type { Fetched } from '../../store/read-through.js';
import type { UpstreamClient, UpstreamRequest } from '../../upstream/client.js';
import { forwardedHeaders, responseFrom, upstreamTarget } from '../forward.js';
import type { RequestContext } from '../router.js';

/** Longest a run result is served as fresh: upstream's longest `cache_age_seconds` (a day). */
const maxRunFreshnessMs = 24 * 3_600_000;

/** How long a run answer stays fresh: until upstream's `cache_target_age` when it gives one, else `fallbackMs`. */
export function runFreshness(body: Buffer, fetchedAt: number, fallbackMs: number, maxMs: number): number {
  // Upstream puts `results` first and its cache fields after them: only the body's tail is searched.
  const text = (body.length > 65_536 ? body.subarray(body.length - 65_536) : body).toString('utf8');
  const match = /"cache_target_age"\s*:\s*"([^"]+)"/.exec(text);
  if (match === null) return fallbackMs;
  const target = Date.parse(match[1] as string);
  if (!Number.isFinite(target)) return fallbackMs;
  return Math.max(0, Math.min(target - fetchedAt, maxMs));
}

/** Dependencies of createRunUpstream. */
export interface RunUpstreamDeps {
  /** null offline: every run is then a failure (503). */
  readonly client: UpstreamClient | null;
  /** FLAG_SIDECAR_ENDPOINT_RUN_TTL: the freshness without `cache_target_age`, and the cap for the latest version. */
  readonly runTtlMs: number;
  readonly now: () => number;
}

/**
 * `runUpstream(ctx, body, latest)`: one run upstream with the caller's credential (HEAD asked as GET, as the
 * read-through does, so no empty body is ever cached). Fresh for upstream's `cache_target_age` when the run names
 * a version (immutable); a run of the latest version for at most FLAG_SIDECAR_ENDPOINT_RUN_TTL besides, since the
 * endpoint can be edited outside the sidecar. Never rejects: a transport failure is a `failure` result.
 */
export function createRunUpstream(deps: RunUpstreamDeps): (ctx: RequestContext, body: Buffer | undefined, latest: boolean) => Promise<Fetched> {
  const { client, runTtlMs, now } = deps;
  return async (ctx, body, latest) => {
    if (client === null) return { kind: 'failure', error: offline() };
    const result = await client.request({
      operation: 'endpoint_run',
      method: (ctx.method === 'HEAD' ? 'GET' : ctx.method) as UpstreamRequest['method'],
      path: upstreamTarget(ctx),
      headers: forwardedHeaders(ctx),
      body,
    });
    if (result.kind === 'failure') return { kind: 'failure', error: upstreamFailure(result.cause) };
    const response = responseFrom(result);
    const ok = response.status >= 200 && response.status < 300;
    const freshness = ok ? runFreshness(response.body, now(), runTtlMs, maxRunFreshnessMs) : 0;
    const ttlMs = latest ? Math.min(freshness, runTtlMs) : freshness;
    return { kind: 'answer', response, ttlMs, failed: response.status >= 500 || response.status === 429 };
  };
}
