/**
 * The fake upstream's `/flags` body reading, modelled on PostHog's flags service (PostHog/posthog
 * `rust/feature-flags/src/handler/decoding.rs` decode_request, decode_body, try_parse_with_fallbacks,
 * decode_form_data; `flags/flag_request.rs` FlagRequest::from_bytes, check_json_depth; flate2's and the base64
 * crate's error texts). Written apart from the sidecar's src/http/flags-decoding.ts, so a test comparing the two
 * catches either drifting.
 */
import { gunzipSync } from 'node:zlib';

/** A refusal: the service's 400 text for `reason`. */
export class FlagsDecodeError extends Error {
  constructor(reason: string) {
    super(`Failed to decode request: ${reason}. Please check your request format and try again.`);
  }
}

/** The deepest `{`/`[` nesting of a JSON text outside its strings (each string blanked out first). */
function nesting(text: string): number {
  const structure = text.replace(/"(?:[^"\\]|\\.)*"?/g, '');
  let depth = 0;
  let deepest = 0;
  for (const c of structure) {
    if (c === '{' || c === '[') deepest = Math.max(deepest, ++depth);
    else if (c === '}' || c === ']') depth = Math.max(0, depth - 1);
  }
  return deepest;
}

const plainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** serde's FlagRequest: each field (under any one of its names) null or of its type. */
const shape: Record<string, (v: unknown) => boolean> = {
  'token|$token|api_key': (v) => typeof v === 'string',
  'distinct_id|$distinct_id': (v) => typeof v === 'string' || typeof v === 'number',
  'geoip_disable': (v) => typeof v === 'boolean',
  'disable_flags': (v) => typeof v === 'boolean',
  'person_properties|$properties': plainObject,
  'groups|$groups': plainObject,
  'group_properties|$group_properties': (v) => plainObject(v) && Object.values(v).every(plainObject),
  'anon_distinct_id|$anon_distinct_id': (v) => typeof v === 'string',
  'device_id|$device_id': (v) => typeof v === 'string',
  'ip_address': (v) => typeof v === 'string',
  'flag_keys|flag_keys_to_evaluate': (v) => Array.isArray(v) && v.every((k) => typeof k === 'string'),
  'timezone': (v) => typeof v === 'string',
  'cookieless_hash_extra': (v) => typeof v === 'string',
  'evaluation_contexts|evaluation_environments': (v) => Array.isArray(v) && v.every((k) => typeof k === 'string'),
  'evaluation_runtime': (v) => typeof v === 'string',
  'override_flags_definitions': plainObject,
};

function asRequest(text: string, maxDepth: number): Record<string, unknown> | null {
  if (nesting(text) > maxDepth) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (!plainObject(value)) return null;
  for (const [names, ok] of Object.entries(shape)) {
    const present = names.split('|').filter((n) => n in value);
    if (present.length > 1 || present.some((n) => value[n] !== null && !ok(value[n]))) return null;
  }
  return value;
}

/** `%XX` decoded byte-wise (a `+` stays), or null when the result is not UTF-8. */
function unpercent(text: string): string | null {
  // latin1 maps each byte to one character and back, so the escapes can be replaced in the bytes' own text.
  const bytes = Buffer.from(Buffer.from(text).toString('latin1').replace(/%([0-9a-fA-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1');
  const decoded = bytes.toString('utf8');
  return Buffer.from(decoded).equals(bytes) ? decoded : null;
}

/** The base64 crate's STANDARD decode after the service's padding; the crate's 0.22 error text when it fails. */
function unbase64(text: string): Buffer | string {
  const compact = text.split(' ').join('');
  const s = compact.padEnd(Math.ceil(compact.length / 4) * 4, '=');
  const symbolAt = (i: number): string => `Invalid symbol ${s.charCodeAt(i)}, offset ${i}.`;
  const alphabet = /[A-Za-z0-9+/]/;
  const tailStart = Math.max(0, s.length - 4);
  const early = s.slice(0, tailStart).search(/[^A-Za-z0-9+/]/);
  if (early >= 0) return symbolAt(early);
  let firstPad: number | null = null;
  for (let i = tailStart; i < s.length; i++) {
    if (s[i] === '=') {
      if (i < tailStart + 2) return symbolAt(i);
      firstPad ??= i;
    } else if (firstPad !== null) return symbolAt(firstPad);
    else if (!alphabet.test(s[i] as string)) return symbolAt(i);
  }
  const bytes = Buffer.from(s, 'base64');
  if (bytes.toString('base64') !== s) {
    const last = (firstPad ?? s.length) - 1;
    return `Invalid last symbol ${s.charCodeAt(last)}, offset ${last}.`;
  }
  return bytes;
}

/** flate2's io::Error text for a body zlib could not gunzip. */
function gzipError(raw: Buffer, error: Error): string {
  if (raw.length < 10 || /unexpected end/.test(error.message)) return 'unexpected end of file';
  if (/header|compression method/.test(error.message)) return 'invalid gzip header';
  if (/data check|length check/.test(error.message)) return 'corrupt gzip stream does not have a matching checksum';
  return 'corrupt deflate stream';
}

/** The body of a POST /flags as the flags service reads it; throws FlagsDecodeError. */
export function readFlagsRequest(raw: Buffer, headers: Record<string, string | string[] | undefined>, query: URLSearchParams): Record<string, unknown> {
  const contentType = (headers['content-type'] as string | undefined) ?? 'application/json';
  const given = query.get('compression') ?? '';
  const compression = given === '' ? null : /^gzip(-js)?$/i.test(given) ? 'gzip' : /^base64$/i.test(given) ? 'base64' : 'other';
  switch (contentType.split(';')[0]?.trim()) {
    case 'application/json':
    case 'text/plain': {
      if (compression === 'other') throw new FlagsDecodeError('Unsupported compression type');
      let data = raw;
      if (compression === 'gzip' || String(headers['content-encoding'] ?? '').includes('gzip') || (raw[0] === 0x1f && raw[1] === 0x8b)) {
        try {
          data = gunzipSync(raw);
        } catch (error) {
          throw new FlagsDecodeError(`IO error: ${gzipError(raw, error as Error)}`);
        }
      }
      const text = data.toString('utf8');
      const unpercented = unpercent(text);
      const decoded = unpercented === null ? '' : unbase64(unpercented);
      const request = asRequest(text, 128) ?? (typeof decoded === 'string' ? null : asRequest(decoded.toString('utf8'), 128));
      if (request === null) throw new FlagsDecodeError('invalid JSON');
      return request;
    }
    case 'application/x-www-form-urlencoded': {
      const form = raw.toString('utf8');
      if (!Buffer.from(form).equals(raw)) throw new FlagsDecodeError('Invalid UTF-8 in form data');
      const decoded = unpercent(form);
      if (decoded === null) throw new FlagsDecodeError('Failed to URL decode form data');
      const data = decoded.startsWith('data=') ? (decoded.split('=')[1] ?? '') : decoded;
      if (compression === 'gzip') throw new FlagsDecodeError('Gzip compression not supported for form-urlencoded data');
      if (compression === 'other') throw new FlagsDecodeError('Unsupported compression type');
      const bytes = unbase64(data);
      if (typeof bytes === 'string') throw new FlagsDecodeError(`Base64 decoding error: ${bytes}`);
      // serde_json's own recursion limit: 127 levels parse.
      const request = asRequest(bytes.toString('utf8'), 127);
      if (request === null) throw new FlagsDecodeError('invalid JSON structure');
      return request;
    }
    default:
      throw new FlagsDecodeError(`unsupported content type: ${contentType}`);
  }
}
