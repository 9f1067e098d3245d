/**
 * Decoding of capture bodies (`/batch/`, `/e/`, `/i/v0/e/`, `/capture/`, `/track/`, `/engage/`) the way
 * upstream's capture service does: plain JSON, gzip (`Content-Encoding: gzip`, `?compression=gzip-js`, or the
 * gzip magic bytes), and form bodies carrying `data=<base64 JSON>`. The body is a batch
 * (`{api_key, batch: [...]}`), an array of events or one event. Pure: no IO; every refusal carries upstream's
 * status and text. Each event is kept as the JSON text the SDK sent, byte for byte (sliced from the body, never
 * re-serialized), so its uuid, timestamp and properties are untouched.
 */
import { isAscii } from 'node:buffer';
import { gunzipSync } from 'node:zlib';
import { maxApiJsonDepth } from '../http/json-depth.js';
import { eventBounds } from './event-bounds.js';

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
  /** Room left in the queue, bytes: a decoded body larger than this is refused as `full` before it is parsed. */
  readonly room: number;
}

/** Accepted events of one request: one token, each event's JSON text and its size in bytes. */
export interface DecodedEvents {
  readonly kind: 'events';
  readonly token: string;
  readonly events: readonly string[];
  readonly sizes: readonly number[];
}

/** The queue has no room for the request's decoded body (answered 503, the SDK retries); nothing was parsed. */
export interface CaptureFull {
  readonly kind: 'full';
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

/**
 * Held events hold their body's text when they are most of it (ASCII, where bytes are characters); otherwise each
 * is copied out, so the queue's byte count bounds what is held.
 */
const sliceShare = 7 / 8;

/** Each event's text, as the bytes `ranges` bound in `payload` (the text `text` decodes). */
function eventTexts(payload: Buffer, text: string, ranges: readonly number[]): { events: string[]; sizes: number[] } {
  const events: string[] = [];
  const sizes: number[] = [];
  let total = 0;
  for (let i = 0; i < ranges.length; i += 2) {
    const size = (ranges[i + 1] as number) - (ranges[i] as number);
    sizes.push(size);
    total += size;
  }
  const slice = total >= payload.length * sliceShare && isAscii(payload);
  for (let i = 0; i < ranges.length; i += 2) {
    const start = ranges[i] as number;
    const end = ranges[i + 1] as number;
    events.push(slice ? text.slice(start, end) : payload.toString('utf8', start, end));
  }
  return { events, sizes };
}

/** Decode a capture request: its events and token, upstream's refusal, or `full` when it cannot fit the queue. */
export function decodeCapture(input: CaptureInput): DecodedEvents | CaptureRefusal | CaptureFull {
  const payload = payloadOf(input);
  if (!Buffer.isBuffer(payload)) return payload;
  if (payload.length > input.room) return { kind: 'full' };
  const bounds = eventBounds(payload, maxApiJsonDepth);
  if (bounds === 'too_deep') return refuse(400, 'parse', `failed to parse request: nesting deeper than ${maxApiJsonDepth} levels`);
  const text = payload.toString('utf8');
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
  for (const event of events) {
    if (!isRecord(event)) return refuse(400, 'parse', 'failed to parse request: an event is not an object');
    if (!nonEmptyString(event.event)) return refuse(400, 'event_name', 'event submitted with an empty event name');
    const own = tokenIn(event) ?? (isRecord(event.properties) ? tokenIn(event.properties) : undefined);
    if (batchToken === undefined && own !== undefined) {
      if (token !== undefined && token !== own) return refuse(401, 'tokens', 'batch submitted with inconsistent api_key values');
      token = own;
    }
  }
  if (token === undefined) return refuse(401, 'no_token', 'event submitted without an api_key');
  if (bounds.ranges.length !== events.length * 2) throw new Error(`capture intake: found ${bounds.ranges.length / 2} event bounds for ${events.length} parsed events`);
  return { kind: 'events', token, ...eventTexts(payload, text, bounds.ranges) };
}
