/**
 * Decoding of capture bodies (`/batch/`, `/e/`, `/i/v0/e/`, `/capture/`, `/track/`, `/engage/`) the way
 * upstream's capture service does: plain JSON, gzip (`Content-Encoding: gzip`, `?compression=gzip-js`, or the
 * gzip magic bytes), and form bodies carrying `data=<base64 JSON>`. The body is a batch
 * (`{api_key, batch: [...]}`), an array of events or one event. Pure: no IO; every refusal carries upstream's
 * status and text. Each event is kept as its own JSON text, otherwise untouched (uuid, timestamp, properties).
 */
import { gunzipSync } from 'node:zlib';
import { exceedsJsonDepth, maxApiJsonDepth } from '../http/json-depth.js';

/** Largest `/batch/` body upstream takes (its BATCH_BODY_SIZE); larger: 413. */
export const batchBodyLimit = 20 * 1024 * 1024;
/** Largest body on the single-event paths (its EVENT_BODY_SIZE); larger: 413. */
export const eventBodyLimit = 2 * 1024 * 1024;

/** What a capture request carries, as the route read it. */
export interface CaptureInput {
  readonly body: Buffer;
  readonly contentType: string | undefined;
  readonly contentEncoding: string | undefined;
  /** `?compression=` of the query string, if any. */
  readonly compression: string | undefined;
  /** Most bytes the decoded body may have (upstream refuses more with a 400). */
  readonly limit: number;
}

/** Accepted events of one request: one token, each event's JSON text. */
export interface DecodedEvents {
  readonly kind: 'events';
  readonly token: string;
  readonly events: readonly string[];
}

/** A refusal as upstream words it (its answers are plain text). */
export interface CaptureRefusal {
  readonly kind: 'refused';
  readonly status: 400 | 401;
  readonly reason: 'decode' | 'parse' | 'empty' | 'event_name' | 'no_token' | 'tokens';
  readonly message: string;
}

const refuse = (status: 400 | 401, reason: CaptureRefusal['reason'], message: string): CaptureRefusal => ({ kind: 'refused', status, reason, message });
const decodeError = (why: string): CaptureRefusal => refuse(400, 'decode', `failed to decode request: ${why}`);

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const nonEmptyString = (value: unknown): value is string => typeof value === 'string' && value !== '';

function gunzip(body: Buffer, limit: number): Buffer | CaptureRefusal {
  try {
    return gunzipSync(body, { maxOutputLength: limit });
  } catch (error) {
    if (error instanceof RangeError || (error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
      return refuse(400, 'decode', 'maximum event size exceeded');
    }
    return decodeError('invalid GZIP data');
  }
}

/** The bytes of the JSON text a request carries, after form, base64 and gzip decoding. */
function payloadOf(input: CaptureInput): Buffer | CaptureRefusal {
  let bytes = input.body;
  let compression = (input.compression ?? '').toLowerCase();
  if ((input.contentType ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded')) {
    const form = new URLSearchParams(bytes.toString('latin1'));
    const data = form.get('data');
    if (data === null) return decodeError('missing data field');
    compression = (form.get('compression') ?? compression).toLowerCase();
    bytes = /^[A-Za-z0-9+/=_-]*$/.test(data.trim()) && compression !== 'gzip-js' ? Buffer.from(data.trim(), 'base64') : Buffer.from(data, 'latin1');
    if (compression === 'base64') compression = '';
  }
  if (compression === 'lz64' || compression === 'lz-string') return decodeError('lz64 compression is not relayed; use gzip-js or base64');
  const gzip = compression === 'gzip-js' || compression === 'gzip' || /\bgzip\b/i.test(input.contentEncoding ?? '') || (bytes[0] === 0x1f && bytes[1] === 0x8b);
  if (gzip) return gunzip(bytes, input.limit);
  if (bytes.length > input.limit) return refuse(400, 'decode', 'maximum event size exceeded');
  return bytes;
}

const tokenIn = (record: Record<string, unknown>): string | undefined => {
  for (const name of ['api_key', 'token', '$token']) {
    const value = record[name];
    if (nonEmptyString(value)) return value;
  }
  return undefined;
};

/** Decode a capture request: its events and token, or upstream's refusal. */
export function decodeCapture(input: CaptureInput): DecodedEvents | CaptureRefusal {
  const payload = payloadOf(input);
  if (!Buffer.isBuffer(payload)) return payload;
  const text = payload.toString('utf8');
  if (exceedsJsonDepth(text, maxApiJsonDepth)) return refuse(400, 'parse', `failed to parse request: nesting deeper than ${maxApiJsonDepth} levels`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return refuse(400, 'parse', `failed to parse request: ${error instanceof Error ? error.message : 'invalid JSON'}`);
  }
  let events: unknown[];
  let batchToken: string | undefined;
  if (Array.isArray(parsed)) events = parsed;
  else if (isRecord(parsed) && Array.isArray(parsed.batch)) {
    events = parsed.batch;
    batchToken = tokenIn(parsed);
  } else if (isRecord(parsed)) events = [parsed];
  else return refuse(400, 'parse', 'failed to parse request: expected an event, an array of events or a batch');
  if (events.length === 0) return refuse(400, 'empty', 'request holds no event');
  let token = batchToken;
  const texts: string[] = [];
  for (const event of events) {
    if (!isRecord(event)) return refuse(400, 'parse', 'failed to parse request: an event is not an object');
    if (!nonEmptyString(event.event)) return refuse(400, 'event_name', 'event submitted with an empty event name');
    const own = tokenIn(event) ?? (isRecord(event.properties) ? tokenIn(event.properties) : undefined);
    if (batchToken === undefined && own !== undefined) {
      if (token !== undefined && token !== own) return refuse(401, 'tokens', 'batch submitted with inconsistent api_key values');
      token = own;
    }
    texts.push(JSON.stringify(event));
  }
  if (token === undefined) return refuse(401, 'no_token', 'event submitted without an api_key');
  return { kind: 'events', token, events: texts };
}
