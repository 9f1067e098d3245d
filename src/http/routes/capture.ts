/**
 * The capture paths SDKs send events to (`POST /batch/`, `/e/`, `/i/v0/e/`, `/capture/`, `/track/`,
 * `/engage/`, trailing slash optional), answered as upstream's capture service answers: `200 {"status": 1}` once
 * the events are accepted into the relay's queue; its plain-text 400/401 for a body it would refuse (see
 * events/intake.ts); 413 past its body limits (20 MB on /batch/, 2 MB on the others). The sidecar's own refusals:
 * 401 for a token of no configured project (unless FLAG_SIDECAR_EVENTS_ANY_TOKEN), 503 with Retry-After when the
 * queue is full (nothing of the request is kept; the SDK retries), 503 when offline with no events URL.
 * Like upstream, these paths take no API key: the project token in the body is the credential.
 */
import { ApiError } from '../../errors.js';
import { batchBodyLimit, decodeCapture, eventBodyLimit } from '../../events/intake.js';
import type { EventQueue } from '../../events/queue.js';
import type { EventMetrics } from '../../metrics/event-metrics.js';
import type { Logger } from '../../logger.js';
import { readBody } from '../body.js';
import type { Reply, RequestContext, Route } from '../router.js';

/** What the capture routes are built from. */
export interface CaptureRouteDeps {
  /** The relay's queue and metrics; null when there is nowhere to forward (offline without FLAG_SIDECAR_EVENTS_URL). */
  readonly relay: { readonly queue: EventQueue; readonly metrics: EventMetrics } | null;
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
const ok: Reply = Object.freeze({ status: 200, headers: Object.freeze({ 'content-type': 'application/json', 'content-length': String(okBody.length) }), body: okBody });

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

  async function capture(ctx: RequestContext, limit: number): Promise<Reply> {
    if (relay === null) {
      if (!warnedOffline) logger.warn('events relay: a capture arrived but the sidecar is offline and FLAG_SIDECAR_EVENTS_URL is not set; refused');
      warnedOffline = true;
      return text(503, 'events relay is off: offline sidecar without FLAG_SIDECAR_EVENTS_URL');
    }
    let body: Buffer;
    try {
      body = await readBody(ctx.request, limit);
    } catch (error) {
      if (error instanceof ApiError && error.status === 413) {
        relay.metrics.refused.inc({ reason: 'too_large' });
        return text(413, 'Failed to buffer the request body: length limit exceeded', { connection: 'close' });
      }
      throw error;
    }
    // A full queue answers before the body is parsed: at saturation most requests are refused, and cheaply.
    const free = relay.queue.free();
    const compression = ctx.query.get('compression') ?? undefined;
    const decoded = free.events <= 0 ? full : decodeCapture({
      body,
      contentType: header(ctx.headers['content-type']),
      contentEncoding: header(ctx.headers['content-encoding']),
      compression,
      limit,
      room: free.bytes,
    });
    if (decoded.kind === 'full') return queueFull();
    if (decoded.kind === 'refused') {
      relay.metrics.refused.inc({ reason: decoded.reason });
      return text(decoded.status, decoded.message);
    }
    if (!plausibleToken(decoded.token)) {
      relay.metrics.refused.inc({ reason: 'unknown_token' });
      return text(401, 'API key is not valid: not a project token');
    }
    if (!deps.anyToken && !deps.knownToken(decoded.token)) {
      relay.metrics.refused.inc({ reason: 'unknown_token' });
      return text(401, 'API key is not valid: not the token of a project this sidecar relays (FLAG_SIDECAR_EVENTS_ANY_TOKEN)');
    }
    if (!(await relay.queue.append(decoded.token, decoded.events, decoded.sizes))) return queueFull();
    relay.metrics.received.inc(decoded.events.length);
    return ok;
  }

  const paths = ['/e', '/i/v0/e', '/capture', '/track', '/engage'];
  return [
    { name: 'capture_batch', methods: ['POST'], template: '/batch', handler: (ctx) => capture(ctx, batchBodyLimit) },
    ...paths.map((template): Route => ({ name: 'capture_event', methods: ['POST'], template, handler: (ctx) => capture(ctx, eventBodyLimit) })),
  ];
}

const header = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);
