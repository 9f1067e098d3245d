/**
 * The JSON text a capture request carries, found as upstream's capture finds it (rust/capture/src/payload/
 * common.rs `extract_payload_bytes`, payload/decompression.rs `decompress_payload`): `?data=` of a GET or the body;
 * a body that is base64 as a whole is unwrapped; a form (`application/x-www-form-urlencoded`) gives its `data`
 * field; the compression hint (`?compression=`, the form's, or `Content-Encoding`) picks gzip (or the gzip magic
 * bytes do) or lz64; on the legacy paths (`/e`, `/capture`, `/engage`, `/track`) a text still base64 after that is
 * unwrapped once more. The decoded text may hold 100 MB (upstream's `BATCH_BODY_SIZE * 5`, setup.rs) and must be
 * UTF-8. Memory stays bounded by the events queue: nothing is decoded past the room the queue has left, and a
 * text larger than that room is `full` (503, the SDK retries), not refused. Pure: no IO; every refusal carries
 * upstream's status and text.
 */
import { isUtf8 } from 'node:buffer';
import { gunzipSync } from 'node:zlib';
import { decodeLz64 } from './lz64.js';

/** Largest request body on every v0 capture path (upstream's BATCH_BODY_SIZE, shared since its wire cap fix). */
export const captureBodyLimit = 20 * 1024 * 1024;
/** Largest decoded text (upstream's event_payload_max_bytes: BATCH_BODY_SIZE * 5 in events mode). */
export const decodedPayloadLimit = 5 * captureBodyLimit;
/**
 * Largest decoded text the sidecar takes in one request: 32 MiB, below upstream's 100 MB (a deliberate divergence,
 * docs/api-compatibility.md), because decoding and parsing hold several times the text at once (an lz64 body: its
 * UTF-16 units, the string, then the UTF-8 bytes) and a sidecar's memory limit is a few hundred MiB. Past it the
 * answer is upstream's own 413 for its limit, naming this one. SDK batches are far smaller (posthog-node's are
 * about 1 MB at most).
 */
export const decodedRequestLimit = 32 * 1024 * 1024;

/** What a capture request carries, as the route read it. */
export interface PayloadInput {
  /** The route's path without a trailing slash (`/batch`, `/e`, …): the legacy paths unwrap base64 once more. */
  readonly path: string;
  readonly body: Buffer;
  /** `?data=` (a GET's payload), if any. */
  readonly queryData: string | undefined;
  /** `?compression=`, if any. */
  readonly compression: string | undefined;
  readonly contentType: string | undefined;
  readonly contentEncoding: string | undefined;
  /** Most bytes the decoded text may have (decodedPayloadLimit; smaller in tests). */
  readonly limit: number;
  /** Room left in the queue, bytes: a decoded text larger than this is `full`. */
  readonly room: number;
}

/** A refusal as upstream words it (its answers are plain text). */
export interface CaptureRefusal {
  readonly kind: 'refused';
  readonly status: 400 | 401 | 413;
  readonly reason: 'decode' | 'parse' | 'hydration' | 'empty' | 'event_name' | 'distinct_id' | 'cookieless' | 'no_token' | 'tokens' | 'too_large';
  readonly message: string;
}

/** The queue has no room for the request's decoded text (answered 503, the SDK retries). */
export interface CaptureFull {
  readonly kind: 'full';
}

/** The request's JSON text, as bytes (valid UTF-8). */
export interface CapturePayload {
  readonly kind: 'payload';
  readonly bytes: Buffer;
}

/** A refusal with upstream's status and text. */
export const refuse = (status: CaptureRefusal['status'], reason: CaptureRefusal['reason'], message: string): CaptureRefusal => ({ kind: 'refused', status, reason, message });
const decodeError = (why: string): CaptureRefusal => refuse(400, 'decode', `failed to decode request: ${why}`);
const tooBig = (why: string): CaptureRefusal => refuse(413, 'too_large', `maximum event size exceeded: ${why}`);
const full: CaptureFull = Object.freeze({ kind: 'full' });

type Compression = 'gzip' | 'lz64' | 'base64' | null;
const compressionOf = (hint: string | null | undefined): Compression => {
  switch ((hint ?? '').toLowerCase()) {
    case 'gzip':
    case 'gzip-js':
      return 'gzip';
    case 'lz64':
    case 'lz-string':
      return 'lz64';
    case 'base64':
    case 'b64':
      return 'base64';
    default:
      return null;
  }
};

const formMime = 'application/x-www-form-urlencoded';
const legacyPaths = new Set(['/e', '/capture', '/engage', '/track']);
const prefixLength = 128;

const isBase64Char = (c: number, loose: boolean): boolean =>
  (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2f || c === 0x3d || (loose && c === 0x20);

/** Upstream's is_likely_base64: the first 128 characters are base64's and the length is a multiple of 4. */
function likelyBase64(bytes: Buffer | string, loose = false): boolean {
  if (bytes.length === 0 || bytes.length % 4 !== 0) return false;
  const end = Math.min(bytes.length, prefixLength);
  for (let i = 0; i < end; i++) {
    if (!isBase64Char(typeof bytes === 'string' ? bytes.charCodeAt(i) : (bytes[i] as number), loose)) return false;
  }
  return true;
}

/** Upstream's is_likely_urlencoded_form: `data=`, `_=`, `ip=` or `compression=` starts the text or a `&` field. */
const likelyForm = (bytes: Buffer): boolean => /(?:^|&)(?:data|_|ip|compression)=/.test(bytes.toString('latin1', 0, prefixLength));

/** Base64 decoded when it is strictly valid (upstream's STANDARD engine: padded, no stray byte), else null. */
function strictDecode(bytes: Buffer): Buffer | null {
  if (bytes.length % 4 !== 0) return null;
  let padding = 0;
  if (bytes[bytes.length - 1] === 0x3d) padding = bytes[bytes.length - 2] === 0x3d ? 2 : 1;
  const end = bytes.length - padding;
  for (let i = 0; i < end; i++) if (!isBase64Char(bytes[i] as number, false) || bytes[i] === 0x3d) return null;
  return Buffer.from(bytes.toString('latin1'), 'base64');
}

/** Decode one capture request's payload: its JSON text, upstream's refusal, or `full`. */
export function capturePayload(input: PayloadInput): CapturePayload | CaptureRefusal | CaptureFull {
  let raw: Buffer;
  if (input.queryData !== undefined && input.queryData !== '') raw = Buffer.from(input.queryData);
  else if (input.body.length > 0) raw = input.body;
  else return refuse(400, 'decode', 'request missing data payload');
  let bytes = raw;
  if (!likelyForm(raw) && likelyBase64(raw)) bytes = strictDecode(raw) ?? raw;

  let formCompression: Compression = null;
  if ((input.contentType ?? '').trim() === formMime) {
    if (!likelyForm(bytes)) return decodeError('expected form data in POST request payload');
    const form = new URLSearchParams(bytes.toString('utf8'));
    formCompression = compressionOf(form.get('compression'));
    const data = form.get('data');
    // A form's `+` was decoded to a space: put it back when the data is base64 (lz64 included).
    if (data !== null) bytes = Buffer.from(likelyBase64(data, true) ? data.replaceAll(' ', '+') : data);
  }
  const encoding = (input.contentEncoding ?? '').trim();
  const compression = compressionOf(input.compression) ?? formCompression ?? compressionOf(encoding);
  // Never decode past what the queue can take now: beyond it the answer is 503 whatever the size.
  const cap = Math.min(input.limit, input.room);

  let text: Buffer;
  if (compression === 'gzip' || (bytes[0] === 0x1f && bytes[1] === 0x8b)) {
    let inflated: Buffer;
    try {
      inflated = gunzipSync(bytes, { maxOutputLength: Math.max(cap, 1) });
    } catch (error) {
      if (error instanceof RangeError || (error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
        return cap < input.limit ? full : tooBig(`Decompressed payload would exceed ${input.limit} bytes`);
      }
      return decodeError('invalid GZIP data');
    }
    if (!isUtf8(inflated)) return decodeError('invalid gzip data');
    text = inflated;
  } else if (compression === 'lz64') {
    // Each UTF-16 unit is at least one UTF-8 byte: capping the units at the byte cap refuses nothing that fits;
    // the UTF-8 length is checked after.
    const decoded = decodeLz64(bytes.toString('utf8'), cap);
    if (decoded.kind === 'too_large') return cap < input.limit ? full : tooBig(`Decompressed LZ64 payload would exceed ${input.limit} bytes`);
    if (decoded.kind === 'invalid') return decodeError('decompress_lz64: failed decompress to UTF16');
    if (decoded.kind === 'not_utf16') return decodeError('decompress_lz64: failed UTF16 to UTF8 conversion');
    text = Buffer.from(decoded.text);
    if (text.length > input.limit) return tooBig('lz64 request payload size limit exceeded');
    if (text.length > input.room) return full;
  } else {
    if (!isUtf8(bytes)) return decodeError('invalid UTF8 in request payload');
    if (bytes.length > input.limit) return tooBig(`Uncompressed payload size limit ${input.limit} exceeded: ${bytes.length}`);
    if (bytes.length > input.room) return full;
    text = bytes;
  }

  if (legacyPaths.has(input.path)) {
    const unwrapped = likelyBase64(text) ? strictDecode(text) : null;
    if (unwrapped !== null && isUtf8(unwrapped)) {
      if (unwrapped.length > input.limit) return tooBig(`decompress_payload: payload size limit ${input.limit} exceeded after post-decode base64 unwrap: ${unwrapped.length}`);
      text = unwrapped;
    }
  }
  return { kind: 'payload', bytes: text };
}
