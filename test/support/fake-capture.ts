/**
 * The fake upstream's capture endpoints (`/batch/`, `/e/`, `/i/v0/e/`, `/capture/`, `/track/`, `/engage/`; trailing
 * slash optional), modelled on upstream's rust/capture (PostHog/posthog): POST bodies and GET `?data=`; JSON, gzip
 * (`Content-Encoding`, `?compression=gzip-js` or the magic bytes), base64 bodies and form data, lz64
 * (lz-string's base64, decoded with the lz-string package, not the sidecar's decoder); refusals in its plain text:
 * 400 for text that is not UTF-8 (payload/decompression.rs), JSON nesting past serde_json's 127 levels, an event without a name or a `distinct_id`
 * (events/analytics.rs `process_single_event`), a nameless event off `/engage` (v0_request.rs `events`); 413 past
 * 100 MB decoded (setup.rs: BATCH_BODY_SIZE * 5) or for an event larger than the Kafka producer's 1,000,000-byte
 * message limit (config.rs `kafka_producer_message_max_bytes`). A nameless `/engage` event becomes `$identify`;
 * a batch's `historical_migration: true` is recorded on each of its events. OPTIONS: 200, empty; `?beacon=1`: 204.
 * A status can be forced for the next requests (`force`), and requests are counted (`batches`).
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { isUtf8 } from 'node:buffer';
import { gunzipSync } from 'node:zlib';
import LZString from 'lz-string';

/** One event as an SDK sent it, with the token of the request it came in. */
export interface CapturedEvent {
  readonly token: string | null;
  readonly event: string;
  readonly distinctId: unknown;
  readonly uuid: unknown;
  readonly timestamp: unknown;
  readonly properties: Readonly<Record<string, unknown>>;
  /** Whether its batch carried `historical_migration: true` (upstream's historical topic). */
  readonly historical: boolean;
  /** The whole event object as received. */
  readonly raw: Readonly<Record<string, unknown>>;
}

const capturePaths = new Set(['/batch', '/e', '/i/v0/e', '/capture', '/track', '/engage']);
const legacyPaths = new Set(['/e', '/capture', '/engage', '/track']);
/** Upstream's decoded limit (setup.rs) and the Kafka producer's message.max.bytes default (config.rs). */
export const fakeDecodedLimit = 100 * 1024 * 1024;
export const fakeEventLimit = 1_000_000;

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const looksBase64 = (text: string): boolean => text.length > 0 && text.length % 4 === 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(text);

class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The request's JSON text, or a Refusal with upstream's status and text. */
function payloadOf(path: string, url: URL, headers: IncomingHttpHeaders, body: Buffer): string {
  let bytes: Buffer = url.searchParams.get('data') ? Buffer.from(url.searchParams.get('data') as string) : body;
  if (bytes.length === 0) throw new Refusal(400, 'request missing data payload');
  if (looksBase64(bytes.toString('latin1'))) bytes = Buffer.from(bytes.toString('latin1'), 'base64');
  let compression = url.searchParams.get('compression') ?? '';
  if (headers['content-type'] === 'application/x-www-form-urlencoded') {
    const form = new URLSearchParams(bytes.toString('utf8'));
    compression ||= form.get('compression') ?? '';
    const data = form.get('data');
    if (data !== null) bytes = Buffer.from(data.replaceAll(' ', '+'));
  }
  compression ||= headers['content-encoding'] ?? '';
  let text: string;
  if (/^gzip(-js)?$/i.test(compression) || (bytes[0] === 0x1f && bytes[1] === 0x8b)) {
    let inflated: Buffer;
    try {
      inflated = gunzipSync(bytes, { maxOutputLength: fakeDecodedLimit });
    } catch (error) {
      if (error instanceof RangeError) throw new Refusal(413, `maximum event size exceeded: Decompressed payload would exceed ${fakeDecodedLimit} bytes`);
      throw new Refusal(400, 'failed to decode request: invalid GZIP data');
    }
    if (!isUtf8(inflated)) throw new Refusal(400, 'failed to decode request: invalid gzip data');
    text = inflated.toString('utf8');
  } else if (/^(lz64|lz-string)$/i.test(compression)) {
    const decoded = LZString.decompressFromBase64(bytes.toString('utf8'));
    if (!decoded) throw new Refusal(400, 'failed to decode request: decompress_lz64: failed decompress to UTF16');
    text = decoded;
  } else {
    if (!isUtf8(bytes)) throw new Refusal(400, 'failed to decode request: invalid UTF8 in request payload');
    text = bytes.toString('utf8');
  }
  if (Buffer.byteLength(text) > fakeDecodedLimit) throw new Refusal(413, 'maximum event size exceeded: payload too large');
  if (legacyPaths.has(path) && looksBase64(text)) {
    const unwrapped = Buffer.from(text, 'base64');
    if (isUtf8(unwrapped)) text = unwrapped.toString('utf8');
  }
  return text;
}

/** serde_json's recursion limit, which v0_request.rs `RawRequest::from_bytes` parses with: 127 levels pass. */
const serdeDepthLimit = 127;
/** How deeply objects and arrays nest in a parsed value (a scalar: 0). */
const depthOf = (value: unknown): number =>
  typeof value === 'object' && value !== null ? 1 + Object.values(value).reduce((deepest: number, v) => Math.max(deepest, depthOf(v)), 0) : 0;

/** The request's events, its batch token and flag, or a Refusal. */
function eventsOf(path: string, value: unknown): { events: Record<string, unknown>[]; token: unknown; historical: boolean } {
  const named = (e: unknown): e is Record<string, unknown> => isRecord(e) && typeof e.event === 'string';
  if (Array.isArray(value)) {
    if (!value.every(named)) throw new Refusal(400, 'failed to parse request: data did not match any variant of untagged enum RawRequest');
    return { events: value, token: undefined, historical: false };
  }
  if (!isRecord(value)) throw new Refusal(400, 'failed to parse request: data did not match any variant of untagged enum RawRequest');
  const token = value.token ?? value.api_key;
  if (typeof token === 'string' && Array.isArray(value.batch) && value.batch.every(named)) {
    return { events: value.batch, token, historical: value.historical_migration === true };
  }
  if (typeof value.event === 'string') return { events: [value], token: undefined, historical: false };
  if (path !== '/engage') throw new Refusal(400, 'failed to hydrate events from request: non-engage request missing event name attribute');
  return { events: [{ ...value, event: '$identify' }], token: undefined, historical: false };
}

const distinctIdOf = (e: Record<string, unknown>): unknown => {
  const own = e.distinct_id ?? e.$distinct_id;
  return own === undefined || own === null ? (isRecord(e.properties) ? e.properties.distinct_id : undefined) : own;
};

/** The capture endpoints: `handle` answers a request when it is one of them; `events` is what was received. */
export function createFakeCapture() {
  const received: CapturedEvent[] = [];
  const forced: Array<{ status: number; headers?: Record<string, string> }> = [];
  let batches = 0;

  /** Answers and returns true when `url` is a capture path, else returns false without touching `res`. */
  function handle(method: string | undefined, url: URL, headers: IncomingHttpHeaders, body: Buffer, res: ServerResponse): boolean {
    const path = url.pathname.replace(/\/$/, '');
    if (!capturePaths.has(path) || (method !== 'POST' && method !== 'GET' && method !== 'OPTIONS')) return false;
    if (method === 'OPTIONS') {
      res.writeHead(200, { 'access-control-allow-credentials': 'true', 'access-control-allow-methods': 'GET,POST,OPTIONS', 'content-length': '0' });
      res.end();
      return true;
    }
    batches += 1;
    const next = forced.shift();
    if (next) {
      res.writeHead(next.status, { 'content-type': 'text/plain', ...next.headers });
      res.end('forced');
      return true;
    }
    try {
      let value: unknown;
      try {
        value = JSON.parse(payloadOf(path, url, headers, body));
      } catch (error) {
        if (error instanceof Refusal) throw error;
        throw new Refusal(400, `failed to parse request: ${(error as Error).message}`);
      }
      if (depthOf(value) > serdeDepthLimit) throw new Refusal(400, 'failed to parse request: recursion limit exceeded');
      const { events, token: batchToken, historical } = eventsOf(path, value);
      if (events.length === 0) throw new Refusal(400, 'request holds no event');
      for (const e of events) {
        if (e.event === '') throw new Refusal(400, 'event submitted with an empty event name');
        const id = distinctIdOf(e);
        if (id === undefined || id === null || id === '') throw new Refusal(400, 'event submitted without a distinct_id');
        if (JSON.stringify(e).length > fakeEventLimit) throw new Refusal(413, 'maximum event size exceeded: kafka message too large');
      }
      for (const e of events) {
        const properties = isRecord(e.properties) ? e.properties : {};
        const own = e.token ?? e.$token ?? e.api_key ?? properties.token;
        const token = typeof batchToken === 'string' ? batchToken : typeof own === 'string' ? own : null;
        received.push({ token, event: e.event as string, distinctId: distinctIdOf(e), uuid: e.uuid, timestamp: e.timestamp, properties, historical, raw: e });
      }
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      res.writeHead(error.status, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(error.message);
      return true;
    }
    if (url.searchParams.get('beacon') === '1') {
      res.writeHead(204);
      res.end();
      return true;
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
