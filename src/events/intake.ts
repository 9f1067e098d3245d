/**
 * Decoding of capture requests (`/batch/`, `/e/`, `/i/v0/e/`, `/capture/`, `/track/`, `/engage/`) the way
 * upstream's capture service does: the payload as capture-payload.ts finds it, then the request's shape as
 * rust/capture/src/v0_request.rs reads it (`RawRequest`, an untagged enum tried in order: an array of events, a
 * batch `{api_key|token, batch, historical_migration?, sent_at?}`, one event, an `/engage` update without an event
 * name, which becomes `$identify`), the token as utils.rs `extract_and_verify_token` finds it, and each event
 * checked as events/analytics.rs `process_single_event` checks it (a name, a distinct_id, a boolean
 * `$cookieless_mode`). Pure: no IO; every refusal carries upstream's status and text. Each event is kept as the
 * JSON text the SDK sent, byte for byte: a view of the decoded payload (never re-serialized, never copied), so its
 * uuid, timestamp and properties are untouched and its bytes are held once; only an `/engage` event without a name
 * gets `"event":"$identify"` written in.
 */
import { capturePayload, refuse, type CaptureFull, type CaptureRefusal, type PayloadInput } from './capture-payload.js';
import { eventBounds } from './event-bounds.js';
import { eventSlices, ownCopy, skeletonOf } from './event-split.js';

export { captureBodyLimit, decodedPayloadLimit, decodedRequestLimit, type CaptureFull, type CaptureRefusal } from './capture-payload.js';

/** What a capture request carries, as the route read it (see capture-payload.ts). */
export type CaptureInput = PayloadInput;

/** Accepted events of one request: one token, each event's JSON text, the bytes they hold, and the batch's flag. */
export interface DecodedEvents {
  readonly kind: 'events';
  readonly token: string;
  readonly events: readonly Buffer[];
  /** Bytes the events keep in memory: the whole decoded payload they are views of. */
  readonly held: number;
  /** The batch's `historical_migration: true`: upstream routes its events to the historical topic. */
  readonly historical: boolean;
}

type Json = Record<string, unknown>;
const isRecord = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
/** A value serde reads as `RawEvent`: an object with a string `event` (the only required field). */
const isRawEvent = (value: unknown): value is Json => isRecord(value) && typeof value.event === 'string';
const absentOr = (value: unknown, type: 'boolean' | 'string'): boolean => value === undefined || value === null || typeof value === type;

const noVariant = refuse(400, 'parse', 'failed to parse request: data did not match any variant of untagged enum RawRequest');
const notEngage = refuse(400, 'hydration', 'failed to hydrate events from request: non-engage request missing event name attribute');

/** The request's shape: its events, the batch's token (a batch's own wins), its flag, and whether it is an engage. */
interface Shape {
  readonly events: readonly Json[];
  readonly batchToken: string | undefined;
  readonly historical: boolean;
  readonly engage: boolean;
  /** The one event is the body's root object (its text is the whole payload, without surrounding whitespace). */
  readonly root: boolean;
}

/** `token` or its alias `api_key` (both present is a duplicate field to serde: no token). */
function batchTokenOf(body: Json): string | undefined {
  if (body.token !== undefined && body.api_key !== undefined) return undefined;
  const token = body.token ?? body.api_key;
  return typeof token === 'string' ? token : undefined;
}

/** RawRequest's variants, tried in upstream's order. */
function shapeOf(parsed: unknown, path: string): Shape | CaptureRefusal {
  if (Array.isArray(parsed)) {
    return parsed.every(isRawEvent) ? { events: parsed, batchToken: undefined, historical: false, engage: false, root: false } : noVariant;
  }
  if (!isRecord(parsed)) return noVariant;
  const batchToken = batchTokenOf(parsed);
  const batch = parsed.batch;
  if (batchToken !== undefined && Array.isArray(batch) && batch.every(isRawEvent) && absentOr(parsed.historical_migration, 'boolean') && absentOr(parsed.sent_at, 'string')) {
    return { events: batch, batchToken, historical: parsed.historical_migration === true, engage: false, root: false };
  }
  if (typeof parsed.event === 'string') return { events: [parsed], batchToken: undefined, historical: false, engage: false, root: true };
  return path === '/engage' ? { events: [parsed], batchToken: undefined, historical: false, engage: true, root: true } : notEngage;
}

/** RawEvent::extract_token: `token` (or `$token`, `api_key`), else a string `properties.token`. */
function tokenOf(event: Json): string | undefined {
  for (const name of ['token', '$token', 'api_key']) {
    const value = event[name];
    if (typeof value === 'string') return value;
  }
  const properties = event.properties;
  return isRecord(properties) && typeof properties.token === 'string' ? properties.token : undefined;
}

/** The one token the events carry (utils.rs `extract_and_verify_token`), or upstream's 401. */
function tokenAmong(found: readonly (string | undefined)[]): string | CaptureRefusal {
  const tokens = new Set<string>();
  for (const token of found) if (token !== undefined) tokens.add(token);
  if (tokens.size > 1) return refuse(401, 'tokens', 'batch submitted with inconsistent api_key values');
  const [token] = tokens;
  return token ?? refuse(401, 'no_token', 'event submitted without an api_key');
}

/** The request's token (a batch's own wins), or upstream's 401. */
const tokenFor = (shape: Shape): string | CaptureRefusal => shape.batchToken ?? tokenAmong(shape.events.map(tokenOf));

/**
 * RawEvent::extract_distinct_id: `distinct_id` (or `$distinct_id`), else `properties.distinct_id`; null counts as
 * absent, any other value is stringified (a string as is, anything else as its JSON); an empty result is none.
 */
export function hasDistinctId(event: Json): boolean {
  let value = event.distinct_id ?? event.$distinct_id;
  if (value === undefined || value === null) {
    const properties = event.properties;
    value = isRecord(properties) ? properties.distinct_id : undefined;
    if (value === undefined || value === null) return false;
  }
  return value !== '';
}

/** process_single_event's checks of one event, in its order. */
function eventRefusal(event: Json, engage: boolean): CaptureRefusal | null {
  if (!engage && event.event === '') return refuse(400, 'event_name', 'event submitted with an empty event name');
  if (!hasDistinctId(event)) return refuse(400, 'distinct_id', 'event submitted without a distinct_id');
  const properties = event.properties;
  const cookieless = isRecord(properties) ? properties.$cookieless_mode : undefined;
  if (cookieless !== undefined && typeof cookieless !== 'boolean') return refuse(400, 'cookieless', 'event submitted with invalid cookieless mode');
  return null;
}

const isSpace = (c: number | undefined): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** The byte range of the payload without the whitespace around it. */
function rootRange(payload: Buffer): number[] {
  let start = 0;
  let end = payload.length;
  while (start < end && isSpace(payload[start])) start += 1;
  while (end > start && isSpace(payload[end - 1])) end -= 1;
  return [start, end];
}

/** An engage event's text with upstream's `$identify` name (written in; re-serialized only over a non-string name). */
function identifyText(sent: string, event: Json): string {
  if (event.event !== undefined) return JSON.stringify({ ...event, event: '$identify' });
  const inner = sent.trim().slice(1);
  return /^\s*}$/.test(inner) ? '{"event":"$identify"}' : `{"event":"$identify",${inner}`;
}

/**
 * Deepest nesting upstream's capture parses: serde_json's recursion limit (its Deserializer starts with
 * `remaining_depth: 128` and refuses the `{` or `[` that brings it to 0, so 127 levels pass). v0_request.rs
 * `RawRequest::from_bytes` parses the payload with `serde_json::from_str`, which keeps that limit, and api.rs
 * answers the error 400 `failed to parse request: recursion limit exceeded at line L column C`.
 */
export const maxCaptureJsonDepth = 127;

/** serde_json's position of the byte at `offset`: its line, and its column counted in bytes from 1. */
function positionOf(payload: Buffer, offset: number): string {
  const lineStart = payload.lastIndexOf(0x0a, offset) + 1;
  let line = 1;
  for (let at = payload.indexOf(0x0a); at >= 0 && at < lineStart; at = payload.indexOf(0x0a, at + 1)) line += 1;
  return `line ${line} column ${offset + 1 - lineStart}`;
}

/** JSON.parse, or upstream's 400 with the parser's message. */
function parseJson(text: string): { readonly value: unknown } | CaptureRefusal {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (error) {
    return refuse(400, 'parse', `failed to parse request: ${error instanceof Error ? error.message : 'invalid JSON'}`);
  }
}

/**
 * The accepted events, as views of the payload: it is kept whole while any of them is queued, so it is what they
 * hold. A payload that is a view of a larger buffer (a small one from Node's shared pool) is copied out first, or
 * its events would keep all of that alive.
 */
function accepted(token: string, payload: Buffer, ranges: readonly number[], historical: boolean): DecodedEvents {
  const own = payload.byteOffset === 0 && payload.buffer.byteLength === payload.length ? payload : ownCopy(payload);
  return { kind: 'events', token, events: eventSlices(own, ranges), held: own.length, historical };
}

/** The whole payload parsed at once: a single event (or `/engage` update), and what is not an events array. */
function parseWhole(payload: Buffer, path: string, ranges: readonly number[]): DecodedEvents | CaptureRefusal {
  const parsed = parseJson(payload.toString('utf8'));
  if ('kind' in parsed) return parsed;
  const shape = shapeOf(parsed.value, path);
  if ('kind' in shape) return shape;
  if (shape.events.length === 0) return refuse(400, 'empty', 'request holds no event');
  const token = tokenFor(shape);
  if (typeof token !== 'string') return token;
  for (const event of shape.events) {
    const refusal = eventRefusal(event, shape.engage);
    if (refusal !== null) return refusal;
  }
  const bounds = shape.root ? rootRange(payload) : ranges;
  if (bounds.length !== shape.events.length * 2) {
    throw new Error(`capture intake: found ${bounds.length / 2} event bounds for ${shape.events.length} parsed events`);
  }
  if (shape.engage) {
    const identify = Buffer.from(identifyText(payload.toString('utf8', bounds[0], bounds[1]), shape.events[0] as Json));
    return accepted(token, identify, [0, identify.length], false);
  }
  return accepted(token, payload, bounds, shape.historical);
}

/**
 * An events array (the root array or the root object's `batch`) parsed an event at a time, so that memory holds
 * one event's tree at most, not the whole body's (a 19 MB batch parsed whole held ~150 MB at once); of each event
 * only what the checks need is kept. The text around the events (skeletonOf) is parsed too: the body is valid
 * JSON exactly when it and every event are. Upstream's order holds: every syntax error first, then the request's
 * shape, its token, each event's checks (the first refusal). A root object that turns out not to be a batch (a
 * single event holding a `batch` array) is parsed whole.
 */
function parseSplit(payload: Buffer, path: string, ranges: readonly number[]): DecodedEvents | CaptureRefusal {
  let allRawEvents = true;
  const tokens: Array<string | undefined> = [];
  let refusal: CaptureRefusal | null = null;
  for (let i = 0; i < ranges.length; i += 2) {
    const parsed = parseJson(payload.toString('utf8', ranges[i], ranges[i + 1]));
    if ('kind' in parsed) return parsed;
    const event = parsed.value;
    if (!isRawEvent(event)) {
      allRawEvents = false;
      continue;
    }
    // Two distinct tokens are all tokenAmong needs to see.
    const token = tokenOf(event);
    if (token !== undefined && !tokens.includes(token) && tokens.length < 2) tokens.push(token);
    refusal ??= eventRefusal(event, false);
  }
  const outer = parseJson(skeletonOf(payload, ranges));
  if ('kind' in outer) return outer;
  const root = outer.value;
  const list = Array.isArray(root) ? root : (root as Json).batch;
  // Every element an event: the array holds objects only (each one a range), and each is a RawEvent.
  const allEvents = Array.isArray(list) && list.length === ranges.length / 2 && allRawEvents;
  let batchToken: string | undefined;
  let historical = false;
  if (Array.isArray(root)) {
    if (!allEvents) return noVariant;
  } else {
    const body = root as Json;
    batchToken = batchTokenOf(body);
    if (batchToken === undefined || !allEvents || !absentOr(body.historical_migration, 'boolean') || !absentOr(body.sent_at, 'string')) {
      return parseWhole(payload, path, ranges);
    }
    historical = body.historical_migration === true;
  }
  const token = batchToken ?? tokenAmong(tokens);
  if (typeof token !== 'string') return token;
  if (refusal !== null) return refusal;
  return accepted(token, payload, ranges, historical);
}

/** Parse a decoded payload (valid UTF-8) sent to `path`: its events and token, or upstream's refusal. */
export function parseCapture(payload: Buffer, path: string): DecodedEvents | CaptureRefusal {
  const bounds = eventBounds(payload, maxCaptureJsonDepth);
  if ('tooDeepAt' in bounds) return refuse(400, 'parse', `failed to parse request: recursion limit exceeded at ${positionOf(payload, bounds.tooDeepAt)}`);
  return bounds.root || bounds.ranges.length === 0 ? parseWhole(payload, path, bounds.ranges) : parseSplit(payload, path, bounds.ranges);
}

/** Decode a capture request: its events and token, upstream's refusal, or `full` when it cannot fit the queue. */
export function decodeCapture(input: CaptureInput): DecodedEvents | CaptureRefusal | CaptureFull {
  const payload = capturePayload(input);
  return payload.kind === 'payload' ? parseCapture(payload.bytes, input.path) : payload;
}
