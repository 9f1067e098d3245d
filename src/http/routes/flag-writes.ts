/**
 * Forwarded flag writes (operations 2, 4, 7–10 and 18 of docs/api-compatibility.md): the body is read whole up to the
 * limit (413 above it) and, when declared JSON, checked before anything goes upstream (upstream's 400 parse_error);
 * the request is sent once with the caller's own credential — never retried, so a write is never applied
 * twice — and upstream's answer comes back intact. After a success the project's read-through entries are
 * dropped, and for creates and updates the reply waits (bounded) until the snapshot shows the write, so the
 * caller's next local_evaluation sees it; in fleet mode the other sidecars are then told (before the reply), so a
 * read through any of them sees the write too. Every forwarded write leaves one audit log line.
 */
import { performance } from 'node:perf_hooks';
import { extractCredential } from '../../auth/credential.js';
import type { ScopedRoute } from '../../auth/scopes.js';
import { ApiError, offline } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics/metrics.js';
import type { Store } from '../../store/store.js';
import type { UpstreamClient, UpstreamRequest } from '../../upstream/client.js';
import { writeCheck, type WriteSync } from '../../upstream/write-sync.js';
import { bodyKeyOf, isJsonType, isRecord, parseJsonBody, readBody } from '../body.js';
import type { Drain } from '../drain.js';
import { forwardedHeaders, responseFrom, upstreamTarget } from '../forward.js';
import { shuttingDownReply } from '../respond.js';
import type { Handler, Reply, RequestContext } from '../router.js';
import type { Access } from './access.js';
import { writtenResource, type WrittenResource } from './write-resource.js';

/** Dependencies of createWriteRoutes. */
export interface WriteRouteDeps {
  readonly access: Access;
  /** Forget what is cached about a project (its read-through entries, warm remote configs). */
  readonly invalidate: (projectId: number) => void;
  readonly store: Store;
  readonly client: UpstreamClient | null;
  /**
   * Fleet mode: tell the other sidecars what a write that may have applied changed (awaited before the reply;
   * never rejects, bounded by the Redis timeout).
   */
  readonly announce?: (projectIds: readonly number[], resource: WrittenResource) => Promise<void>;
  /** Waits for a write to show in the snapshot; null offline. */
  readonly sync: WriteSync | null;
  readonly maxBodyBytes: number;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** While draining no write is started (503, nothing sent upstream); one started is tracked until logged. */
  readonly drain?: Drain;
}

/** What a successful write changes here: flag definitions (re-poll and wait), cached reads only, or nothing. */
export type WriteEffect = 'definitions' | 'cached' | 'none';

/** Create the write handler factory. */
export function createWriteRoutes(deps: WriteRouteDeps) {
  const { access, store, client, logger, metrics } = deps;

  async function forward(route: ScopedRoute, effect: WriteEffect, ctx: RequestContext, read?: Buffer): Promise<Reply> {
    const body = read ?? (await readBody(ctx.request, deps.maxBodyBytes));
    let parsed: unknown = null;
    let malformed: ApiError | null = null;
    if (isJsonType(ctx.headers['content-type'])) {
      try {
        parsed = parseJsonBody(body);
      } catch (error) {
        malformed = error as ApiError;
      }
    }
    // Upstream looks in the body for a key only when the header has none; a body it cannot parse then fails first.
    if (malformed && extractCredential(ctx.headers.authorization, ctx.query) === null) throw malformed;
    const bodyKey = bodyKeyOf(parsed);
    const { caller, projectId } = await access.authorize(route, 'upstream', ctx, ctx.params[0] ?? null, bodyKey);
    if (malformed) throw malformed;
    if (client === null) throw offline();
    if (deps.drain?.draining) return shuttingDownReply();
    const sent = send(client, route, effect, ctx, body, caller, projectId);
    return deps.drain ? deps.drain.track(sent) : sent;
  }

  /** Send the write once and log its audit line, whether or not its caller is still there. */
  async function send(
    client: UpstreamClient,
    route: ScopedRoute,
    effect: WriteEffect,
    ctx: RequestContext,
    body: Buffer,
    caller: Caller,
    projectId: number | null,
  ): Promise<Reply> {
    const before = projectId === null ? undefined : store.get(projectId);
    const started = performance.now();
    const result = await client.request({
      operation: route,
      method: ctx.method as UpstreamRequest['method'],
      path: upstreamTarget(ctx),
      headers: forwardedHeaders(ctx),
      body,
    });
    const status = result.kind === 'response' ? result.status : null;
    const ok = status !== null && status >= 200 && status < 300;
    let synced: boolean | null = null;
    // A write that got no answer (or a 5xx) may still have been applied upstream: cached reads go as after a success.
    const maybeApplied = status === null || status < 400 || status >= 500;
    const changed = maybeApplied && effect !== 'none' ? (projectId === null ? store.projectIds() : [projectId]) : [];
    for (const id of changed) deps.invalidate(id);
    if (ok && effect === 'definitions' && projectId !== null && deps.sync && result.kind === 'response') {
      const check = writeCheck(result.body, before);
      if (check) synced = await deps.sync(projectId, check);
    }
    // After the wait, so that other sidecars re-polling find upstream's definitions as this one did.
    if (changed.length > 0 && deps.announce) await deps.announce(changed, writtenResource(route, ctx.params[1]));
    metrics.forwardedWrites.inc({ route, status: status === null ? (result.kind === 'failure' ? result.cause : 'none') : String(status) });
    logger.info(
      {
        audit: 'write',
        keyPrefix: caller.digest.slice(0, 12),
        principal: caller.principal.label,
        route,
        method: ctx.method,
        project: projectId ?? ctx.params[0] ?? null,
        flag: ctx.params[1] ?? flagOf(result.kind === 'response' && ok ? result.body : null),
        status: status ?? `failed: ${result.kind === 'failure' ? result.cause : ''}`,
        durationMs: Math.round(performance.now() - started),
        ...(synced === null ? {} : { synced }),
      },
      'forwarded write',
    );
    const response = responseFrom(result);
    const headers: Record<string, string> = { ...response.headers, 'x-flag-sidecar-source': 'upstream' };
    if (synced !== null) headers['x-flag-sidecar-synced'] = String(synced);
    return { status: response.status, headers, body: response.body };
  }

  return {
    /** A handler forwarding `route`'s write upstream; `effect` says what a success changes here. */
    handler: (route: ScopedRoute, effect: WriteEffect): Handler => (ctx) => forward(route, effect, ctx),
    /** Forward one request whose body (if any) a handler has already read. */
    forward,
  };
}

/** Who sent a write, as access resolved it. */
type Caller = Awaited<ReturnType<Access['authorize']>>['caller'];

/** The write handler factory. */
export type WriteRoutes = ReturnType<typeof createWriteRoutes>;

/** `id:key` of the flag a create answered with, for the audit line. */
function flagOf(body: Buffer | null): string | null {
  if (body === null) return null;
  try {
    const value = JSON.parse(body.toString('utf8')) as unknown;
    if (isRecord(value) && (typeof value.id === 'number' || typeof value.key === 'string')) return `${String(value.id)}:${String(value.key)}`;
  } catch {
    // not JSON
  }
  return null;
}
