/**
 * The capture paths SDKs send events to (`/batch/`, `/e/`, `/i/v0/e/`, `/capture/`, `/track/`, `/engage/`,
 * trailing slash optional), answered as upstream's capture service answers (rust/capture/src/router.rs,
 * v0_endpoint.rs `event`): POST with the payload in the body, GET with it in `?data=`; `200 {"status": 1}` once
 * the events are accepted into the relay's queue, 204 without a body with `?beacon=1`; its plain-text 400/401/413
 * for a request it would refuse (see events/intake.ts); 413 past its body limit (20 MB on every path). OPTIONS is
 * answered 200 with an empty body and upstream's CORS headers (capture-cors.ts), which every answer here carries.
 * The sidecar's own refusals: 401 for a token of no configured project (unless FLAG_SIDECAR_EVENTS_ANY_TOKEN), 503
 * with Retry-After when the queue has no room for the decoded request (nothing of it is kept; the SDK retries),
 * 503 when offline with no events URL, and 503 with Retry-After when the capture memory budget stays taken
 * (events/intake-budget.ts: the body is then not read). Like upstream, these paths take no API key: the token in the body is the
 * credential.
 */
import { ApiError } from '../../errors.js';
import { captureBodyLimit, decodeCapture, decodedRequestLimit } from '../../events/intake.js';
import type { IntakeBudget, IntakeLease } from '../../events/intake-budget.js';
import type { EventQueue } from '../../events/queue.js';
import type { EventMetrics } from '../../metrics/event-metrics.js';
import type { Logger } from '../../logger.js';
import { readBody } from '../body.js';
import type { Reply, RequestContext, Route } from '../router.js';
import { captureCorsHeaders } from './capture-cors.js';

/** What the capture routes are built from. */
export interface CaptureRouteDeps {
  /** The relay's queue and metrics; null when there is nowhere to forward (offline without FLAG_SIDECAR_EVENTS_URL). */
  readonly relay: { readonly queue: EventQueue; readonly intake: IntakeBudget; readonly metrics: EventMetrics } | null;
  /** Whether a `phc_` token belongs to a project this sidecar serves. */
  readonly knownToken: (token: string) => boolean;
  readonly anyToken: boolean;
  readonly logger: Logger;
}

const text = (status: number, message: string, extra?: Record<string, string>): Reply => {
  const body = Buffer.from(message);
  return { status, headers: { 'content-type': 'text/plain; charset=utf-8', 'content-length': String(body.length), ...extra }, body };
};
const okBody = Buffer.from('{"status":1}');
const full = Object.freeze({ kind: 'full' as const });
const okHeaders = Object.freeze({ 'content-type': 'application/json', 'content-length': String(okBody.length) });

/** Upstream's `beacon` query field: an integer, true when it is 1. */
const isBeacon = (value: string | undefined): boolean => value !== undefined && /^[+-]?\d+$/.test(value.trim()) && Number(value) === 1;

/** A token upstream would take: no personal key, bounded, printable. */
const plausibleToken = (token: string): boolean => token.length <= 200 && /^[\x21-\x7e]+$/.test(token) && !token.startsWith('phx_');

/** The capture routes. */
export function captureRoutes(deps: CaptureRouteDeps): Route[] {
  const { relay, logger } = deps;
  let warnedOffline = false;
  const queueFull = (): Reply => {
    relay?.metrics.refused.inc({ reason: 'queue_full' });
    return text(503, 'transient error, please retry', { 'retry-after': '5' });
  };
  // One warning per burst of requests refused for memory, not one per request.
  let busySince = 0;
  const busy = (extra?: Record<string, string>): Reply => {
    relay?.metrics.refused.inc({ reason: 'busy' });
    const status = relay?.intake.status();
    if (Date.now() - busySince > 60_000) {
      busySince = Date.now();
      logger.warn({ ...status }, 'events relay: captures refused with 503 while the capture memory budget (FLAG_SIDECAR_EVENTS_INTAKE_MAX_BYTES) is taken; the SDKs retry');
    }
    return text(503, 'transient error, please retry', { 'retry-after': '5', ...extra });
  };

  /** The answer, with upstream's CORS headers. */
  async function answer(ctx: RequestContext, path: string): Promise<Reply> {
    if (ctx.method === 'OPTIONS') return { status: 200, headers: { ...captureCorsHeaders(ctx.headers, true), 'content-length': '0' }, body: null };
    const reply = await capture(ctx, path);
    return { ...reply, headers: { ...reply.headers, ...captureCorsHeaders(ctx.headers, false) } };
  }

  async function capture(ctx: RequestContext, path: string): Promise<Reply> {
    if (relay === null) {
      if (!warnedOffline) logger.warn('events relay: a capture arrived but the sidecar is offline and FLAG_SIDECAR_EVENTS_URL is not set; refused');
      warnedOffline = true;
      return text(503, 'events relay is off: offline sidecar without FLAG_SIDECAR_EVENTS_URL');
    }
    // The body's share before a byte of it is read: as declared, or the most a body may be (chunked).
    const declared = Number(ctx.request.headers['content-length'] ?? Number.NaN);
    const expected = Number.isInteger(declared) && declared >= 0 && declared <= captureBodyLimit ? declared : captureBodyLimit;
    const lease = await relay.intake.acquire(expected);
    // Its body unread, the connection cannot carry another request.
    if (lease === null) return busy({ connection: 'close' });
    try {
      return await intake(ctx, path, lease);
    } finally {
      relay.intake.release(lease);
    }
  }

  async function intake(ctx: RequestContext, path: string, lease: IntakeLease): Promise<Reply> {
    const { queue, intake: budget, metrics } = relay as NonNullable<typeof relay>;
    let body: Buffer;
    try {
      body = await readBody(ctx.request, captureBodyLimit);
    } catch (error) {
      if (error instanceof ApiError && error.status === 413) {
        metrics.refused.inc({ reason: 'too_large' });
        return text(413, `maximum event size exceeded: Request body exceeds limit of ${captureBodyLimit} bytes`, { connection: 'close' });
      }
      throw error;
    }
    // A full queue answers before the body is parsed: at saturation most requests are refused, and cheaply.
    const free = queue.free();
    const decoded = free.events <= 0 ? full : decodeCapture({
      path,
      body,
      queryData: ctx.query.get('data'),
      compression: ctx.query.get('compression'),
      contentType: header(ctx.headers['content-type']),
      contentEncoding: header(ctx.headers['content-encoding']),
      limit: decodedRequestLimit,
      room: free.bytes,
    });
    if (decoded.kind === 'full') return queueFull();
    if (decoded.kind === 'refused') {
      metrics.refused.inc({ reason: decoded.reason });
      return text(decoded.status, decoded.message);
    }
    // Decoded into a buffer of its own (compressed, base64, a form): the request holds both until answered.
    const apart = decoded.events[0]?.buffer !== body.buffer;
    if (apart && !budget.grow(lease, body.length + decoded.held)) return busy();
    if (!plausibleToken(decoded.token)) {
      metrics.refused.inc({ reason: 'unknown_token' });
      return text(401, 'API key is not valid: not a project token');
    }
    if (!deps.anyToken && !deps.knownToken(decoded.token)) {
      metrics.refused.inc({ reason: 'unknown_token' });
      return text(401, 'API key is not valid: not the token of a project this sidecar relays (FLAG_SIDECAR_EVENTS_ANY_TOKEN)');
    }
    if (!(await queue.append(decoded))) return queueFull();
    metrics.received.inc(decoded.events.length);
    return isBeacon(ctx.query.get('beacon')) ? { status: 204, headers: {}, body: null } : { status: 200, headers: okHeaders, body: okBody };
  }

  const methods = ['GET', 'POST', 'OPTIONS'];
  const paths = ['/e', '/i/v0/e', '/capture', '/track', '/engage'];
  return [
    { name: 'capture_batch', methods, template: '/batch', handler: (ctx) => answer(ctx, '/batch') },
    ...paths.map((template): Route => ({ name: 'capture_event', methods, template, handler: (ctx) => answer(ctx, template) })),
  ];
}

const header = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);
