/**
 * The fake upstream's capture endpoints (`POST /batch/`, `/e/`, `/i/v0/e/`, `/capture/`, `/track/`; trailing slash
 * optional): JSON bodies, gzip (`Content-Encoding: gzip` or `?compression=gzip-js`) and base64 form data, as the
 * SDKs send them. Every event received is recorded with the project token it came with and answered
 * `200 {"status": 1}`, as upstream does; a body it cannot read gets a 400, and nothing is recorded from it. A
 * status can be forced for the next requests (`force`), and requests are counted (`batches`).
 */
import type { ServerResponse } from 'node:http';
import { gunzipSync } from 'node:zlib';

/** One event as an SDK sent it, with the token of the request it came in. */
export interface CapturedEvent {
  readonly token: string | null;
  readonly event: string;
  readonly distinctId: unknown;
  readonly uuid: unknown;
  readonly timestamp: unknown;
  readonly properties: Readonly<Record<string, unknown>>;
  /** The whole event object as received. */
  readonly raw: Readonly<Record<string, unknown>>;
}

const capturePaths = new Set(['/batch', '/e', '/i/v0/e', '/capture', '/track']);

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The body's JSON value, or undefined when it is not readable. */
function decode(url: URL, body: Buffer, contentEncoding: string | undefined): unknown {
  try {
    const compression = url.searchParams.get('compression');
    const data = contentEncoding?.toLowerCase() === 'gzip' || compression === 'gzip-js' || compression === 'gzip' ? gunzipSync(body) : body;
    let text = data.toString('utf8');
    if (compression === 'base64' || text.startsWith('data=')) text = Buffer.from(new URLSearchParams(text).get('data') ?? '', 'base64').toString('utf8');
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The capture endpoints: `handle` answers a request when it is one of them; `events` is what was received. */
export function createFakeCapture() {
  const received: CapturedEvent[] = [];
  const forced: Array<{ status: number; headers?: Record<string, string> }> = [];
  let batches = 0;

  /** Answers and returns true when `url` is a capture path, else returns false without touching `res`. */
  function handle(method: string | undefined, url: URL, headers: { 'content-encoding'?: string | undefined }, body: Buffer, res: ServerResponse): boolean {
    if (method !== 'POST' || !capturePaths.has(url.pathname.replace(/\/$/, ''))) return false;
    batches += 1;
    const next = forced.shift();
    if (next) {
      res.writeHead(next.status, { 'content-type': 'text/plain', ...next.headers });
      res.end('forced');
      return true;
    }
    const value = decode(url, body, headers['content-encoding']);
    const envelope = isRecord(value) ? value : null;
    const list = Array.isArray(value) ? value : Array.isArray(envelope?.batch) ? envelope.batch : envelope ? [envelope] : [];
    const events = list.filter(isRecord).filter((e) => typeof e.event === 'string');
    if (events.length === 0) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'validation_error', code: 'invalid_payload', detail: 'Malformed request data', attr: null }));
      return true;
    }
    const outer = envelope?.api_key ?? envelope?.token;
    for (const e of events) {
      const properties = isRecord(e.properties) ? e.properties : {};
      const token = typeof outer === 'string' ? outer : typeof e.api_key === 'string' ? e.api_key : typeof properties.token === 'string' ? properties.token : null;
      received.push({ token, event: e.event as string, distinctId: e.distinct_id ?? properties.distinct_id, uuid: e.uuid, timestamp: e.timestamp, properties, raw: e });
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"status":1}');
    return true;
  }

  return {
    handle,
    /** Every event received so far, in arrival order. */
    events: (): readonly CapturedEvent[] => received,
    /** Capture requests received so far (answered or forced). */
    batches: (): number => batches,
    /** Answer the next capture requests with these statuses, in order. */
    force(...answers: Array<{ status: number; headers?: Record<string, string> }>): void {
      forced.push(...answers);
    },
  };
}
