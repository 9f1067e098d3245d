/**
 * A `/flags` (`/decide`) request body read as upstream's flags service reads it (PostHog/posthog
 * `rust/feature-flags/src/handler/decoding.rs` `decode_request`, `flags/flag_request.rs` `FlagRequest::from_bytes`):
 * - by Content-Type (none: JSON): `application/json` and `text/plain` are JSON, maybe gzip (by `?compression=`, a
 *   `Content-Encoding` naming gzip, or the gzip magic bytes) and maybe base64 (tried when the text is no request);
 *   `application/x-www-form-urlencoded` is base64 in a `data=` field; anything else is refused;
 * - JSON nested deeper than 128 levels is no request (the JSON path's own guard, whose reason the fallback then
 *   replaces with "invalid JSON"); form data is parsed by serde_json, whose recursion limit takes 127 levels;
 * - a body whose fields have the wrong types (a `distinct_id` that is an object, `person_properties` that is not an
 *   object, two aliases of one field, …) is no request either.
 * Every refusal is the service's 400 text (`decodingError`). Only gzip waits; everything else answers at once.
 */
import { isUtf8 } from 'node:buffer';
import { promisify } from 'node:util';
import { gunzip as gunzipCallback } from 'node:zlib';
import { decodingError, inflatedTooLarge } from './flags-service-errors.js';
import { exceedsJsonDepth } from './json-depth.js';

const gunzip = promisify(gunzipCallback);

/** Nesting the JSON path accepts: FlagRequest::MAX_JSON_DEPTH, checked before its (json5) parser runs. */
export const maxFlagsJsonDepth = 128;

/** Nesting form data accepts: serde_json's recursion limit (remaining_depth 128, fails on reaching 0). */
export const maxFormJsonDepth = 127;

/** What the request's headers and query say about its body. */
export interface BodyHints {
  readonly contentType: string | undefined;
  readonly contentEncoding: string | undefined;
  /** `?compression=` as given (empty counts as absent, as upstream's `empty_string_as_none`). */
  readonly compression: string | undefined;
}

type Compression = 'gzip' | 'base64' | 'unsupported' | null;

/** upstream's `Compression::from_str`: any case; an unknown value is `Unsupported`, not absent. */
function compressionOf(given: string | undefined): Compression {
  if (given === undefined || given === '') return null;
  const lower = given.toLowerCase();
  return lower === 'gzip' || lower === 'gzip-js' ? 'gzip' : lower === 'base64' ? 'base64' : 'unsupported';
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The request body as the flags service decodes it; a promise only for gzip. Throws its 400 (or 413) text. */
export function decodeFlagsRequest(raw: Buffer, hints: BodyHints, limit: number): Record<string, unknown> | Promise<Record<string, unknown>> {
  const contentType = hints.contentType ?? 'application/json';
  const base = (contentType.split(';')[0] as string).trim();
  const compression = compressionOf(hints.compression);
  if (base === 'application/x-www-form-urlencoded') return formRequest(raw, compression);
  if (base !== 'application/json' && base !== 'text/plain') throw decodingError(`unsupported content type: ${contentType}`);
  if (compression === 'unsupported') throw decodingError('Unsupported compression type');
  const gzip = compression === 'gzip' || hints.contentEncoding?.includes('gzip') === true || (raw.length >= 2 && raw[0] === 0x1f && raw[1] === 0x8b);
  return gzip ? inflate(raw, limit).then(jsonRequest) : jsonRequest(raw);
}

/** The gzip body inflated (at most `limit` bytes), or flate2's error as the service words it. */
async function inflate(raw: Buffer, limit: number): Promise<Buffer> {
  try {
    return await gunzip(raw, { maxOutputLength: limit });
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw inflatedTooLarge(limit);
    throw decodingError(`IO error: ${gzipFailure(raw, (error as Error).message)}`);
  }
}

/**
 * flate2's io::Error text for a gzip stream zlib refused with `zlibMessage`: flate2 reads the whole 10-byte header
 * before judging it (shorter is an unexpected end of file), then refuses bad magic, method or reserved flags as one
 * "invalid gzip header"; a deflate error is a "corrupt deflate stream"; a CRC or length mismatch its checksum error.
 */
export function gzipFailure(raw: Buffer, zlibMessage: string): string {
  if (raw.length < 10 || zlibMessage === 'unexpected end of file') return 'unexpected end of file';
  if (zlibMessage === 'incorrect header check' || zlibMessage === 'unknown compression method' || zlibMessage === 'unknown header flags set') return 'invalid gzip header';
  if (zlibMessage === 'incorrect data check' || zlibMessage === 'incorrect length check') return 'corrupt gzip stream does not have a matching checksum';
  return 'corrupt deflate stream';
}

/**
 * try_parse_with_fallbacks: the text as a request, else the text read as (percent-encoded) base64 and that as a
 * request; whatever failed, the answer is "invalid JSON".
 */
function jsonRequest(data: Buffer): Record<string, unknown> {
  const text = data.toString('utf8'); // invalid UTF-8 replaced, as the service's lossy fallback
  const direct = parsedRequest(text, maxFlagsJsonDepth);
  if (direct !== null) return direct;
  const percent = percentDecoded(text);
  const decoded = percent === null ? null : base64Bytes(percent);
  const fallback = decoded instanceof Buffer ? parsedRequest(decoded.toString('utf8'), maxFlagsJsonDepth) : null;
  if (fallback !== null) return fallback;
  throw decodingError('invalid JSON');
}

/** decode_form_data: `data=` (the text up to the next `=`) or the whole form, as base64 JSON. */
function formRequest(raw: Buffer, compression: Compression): Record<string, unknown> {
  if (!isUtf8(raw)) throw decodingError('Invalid UTF-8 in form data');
  const decoded = percentDecoded(raw.toString('utf8'));
  if (decoded === null) throw decodingError('Failed to URL decode form data');
  const field = decoded.startsWith('data=') ? (decoded.split('=')[1] as string) : decoded;
  if (compression === 'gzip') throw decodingError('Gzip compression not supported for form-urlencoded data');
  if (compression === 'unsupported') throw decodingError('Unsupported compression type');
  const bytes = base64Bytes(field);
  if (typeof bytes === 'string') throw decodingError(`Base64 decoding error: ${bytes}`);
  const request = parsedRequest(bytes.toString('utf8'), maxFormJsonDepth);
  if (request === null) throw decodingError('invalid JSON structure');
  return request;
}

/** `text` with `%XX` escapes decoded (`+` stays `+`), as the percent-encoding crate; null when not UTF-8 then. */
export function percentDecoded(text: string): string | null {
  if (!text.includes('%')) return text;
  const bytes: number[] = [];
  const raw = Buffer.from(text);
  for (let i = 0; i < raw.length; i++) {
    const byte = raw[i] as number;
    const hex = byte === 0x25 && i + 2 < raw.length ? raw.toString('latin1', i + 1, i + 3) : '';
    if (/^[0-9a-fA-F]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else bytes.push(byte);
  }
  const out = Buffer.from(bytes);
  const decoded = out.toString('utf8');
  return Buffer.from(decoded).equals(out) ? decoded : null;
}

const base64Alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const invalidSymbol = (text: string, at: number): string => `Invalid symbol ${text.charCodeAt(at)}, offset ${at}.`;

/**
 * Standard base64 as the service decodes it: spaces removed, `=` added up to a multiple of four, then the base64
 * crate's strict decoder (`STANDARD`: canonical padding, no trailing bits). The bytes, or the crate's error text
 * (its 0.22 wording; each check in the crate's order: symbols before the last quad, then the last quad).
 */
export function base64Bytes(text: string): Buffer | string {
  let cleaned = text.replace(/ /g, '');
  if (cleaned.length % 4 !== 0) cleaned += '='.repeat(4 - (cleaned.length % 4));
  const lastQuad = Math.max(0, cleaned.length - 4);
  for (let i = 0; i < lastQuad; i++) if (!base64Alphabet.includes(cleaned.charAt(i))) return invalidSymbol(cleaned, i);
  let padding = 0;
  for (let i = lastQuad; i < cleaned.length; i++) {
    if (cleaned.charAt(i) === '=') {
      // Padding only after two symbols of the quad, and nothing but padding after it.
      if (i - lastQuad < 2) return invalidSymbol(cleaned, i);
      padding++;
    } else if (padding > 0) return invalidSymbol(cleaned, i - padding);
    else if (!base64Alphabet.includes(cleaned.charAt(i))) return invalidSymbol(cleaned, i);
  }
  const bytes = Buffer.from(cleaned, 'base64');
  // A last symbol with bits the bytes do not use is refused: the bytes' canonical encoding shows it.
  const last = cleaned.length - padding - 1;
  if (last >= 0 && bytes.toString('base64') !== cleaned) return `Invalid last symbol ${cleaned.charCodeAt(last)}, offset ${last}.`;
  return bytes;
}

/** `text` as a FlagRequest, or null: not JSON, nested deeper than `maxDepth`, not an object, or wrongly typed. */
function parsedRequest(text: string, maxDepth: number): Record<string, unknown> | null {
  if (exceedsJsonDepth(text, maxDepth)) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  return isObject(value) && fitsFlagRequest(value) ? value : null;
}

type FieldType = 'string' | 'bool' | 'object' | 'objectOfObjects' | 'strings' | 'distinctId';

/** FlagRequest's fields with their aliases (serde: two names of one field are a duplicate) and types. */
const fields: ReadonlyArray<readonly [readonly string[], FieldType]> = [
  [['token', '$token', 'api_key'], 'string'],
  [['distinct_id', '$distinct_id'], 'distinctId'],
  [['geoip_disable'], 'bool'],
  [['disable_flags'], 'bool'],
  [['person_properties', '$properties'], 'object'],
  [['groups', '$groups'], 'object'],
  [['group_properties', '$group_properties'], 'objectOfObjects'],
  [['anon_distinct_id', '$anon_distinct_id'], 'string'],
  [['device_id', '$device_id'], 'string'],
  [['ip_address'], 'string'],
  [['flag_keys', 'flag_keys_to_evaluate'], 'strings'],
  [['timezone'], 'string'],
  [['cookieless_hash_extra'], 'string'],
  [['evaluation_contexts', 'evaluation_environments'], 'strings'],
  [['evaluation_runtime'], 'string'],
  [['override_flags_definitions'], 'object'],
];

function fits(value: unknown, type: FieldType): boolean {
  if (value === null) return true; // every field is an Option
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'bool':
      return typeof value === 'boolean';
    case 'object':
      return isObject(value);
    case 'objectOfObjects':
      return isObject(value) && Object.values(value).every(isObject);
    case 'strings':
      return Array.isArray(value) && value.every((v) => typeof v === 'string');
    case 'distinctId':
      return typeof value === 'string' || typeof value === 'number';
  }
}

/** Whether serde would read `body` into a FlagRequest (unknown fields ignored, each field once, of its type). */
export function fitsFlagRequest(body: Record<string, unknown>): boolean {
  for (const [names, type] of fields) {
    let seen = false;
    for (const name of names) {
      if (!Object.hasOwn(body, name)) continue;
      if (seen || !fits(body[name], type)) return false;
      seen = true;
    }
  }
  return true;
}
