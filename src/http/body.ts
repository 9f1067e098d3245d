/**
 * Request bodies of forwarded writes: read whole up to a limit (413 above it, decided from Content-Length
 * before reading when it is declared), and checked as JSON when declared JSON (upstream's 400 parse_error
 * otherwise), so a malformed body never costs an upstream request.
 */
import type { IncomingMessage } from 'node:http';
import { bodyTooLarge, parseError } from '../errors.js';
import { exceedsJsonDepth, maxApiJsonDepth } from './json-depth.js';

/** Read the whole body; rejects with a 413 ApiError past `limit` bytes, or with the request's stream error. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let settled = false;
    req.on('error', (error: Error) => {
      if (settled) return;
      settled = true;
      reject(error);
    });
    readBodyThen(req, limit, (error, body) => {
      if (settled) return;
      settled = true;
      if (error === null) resolve(body as Buffer);
      else reject(error);
    });
  });
}

/**
 * Read the whole body and call `done` once, from its 'end' event: with the body, or with a 413 ApiError past
 * `limit` bytes (decided from Content-Length before reading when it is declared). A small body arrives with its
 * headers and 'end' follows in the same turn. (Answering at the last declared byte instead, before 'end', measured
 * 2-3% more CPU per cached endpoint run: node then keeps the request on the parser until it ends.) A request cut
 * off mid-body never calls `done` (there is no one left to answer; node emits its stream error only to 'error'
 * listeners, which readBody adds).
 */
export function readBodyThen(req: IncomingMessage, limit: number, done: (error: Error | null, body: Buffer | null) => void): void {
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  if (declared > limit) {
    done(bodyTooLarge(limit), null);
    return;
  }
  let first: Buffer | null = null;
  let rest: Buffer[] | null = null;
  // A declared body of several chunks is copied into one buffer as it arrives, not gathered and then joined (which
  // holds it twice: a 20 MB capture batch would take 40 MB).
  let whole: Buffer | null = null;
  let size = 0;
  let settled = false;
  // The request is done with once settled: its listeners go with it (removing them costs more than a small read).
  req.on('data', (chunk: Buffer) => {
    if (settled) return;
    const at = size;
    size += chunk.length;
    if (size > limit) {
      settled = true;
      done(bodyTooLarge(limit), null);
      return;
    }
    if (first === null) first = chunk;
    else if (size <= declared) {
      if (whole === null) {
        whole = Buffer.allocUnsafe(declared);
        first.copy(whole, 0);
      }
      chunk.copy(whole, at);
    } else (rest ??= [first]).push(chunk);
  });
  req.on('end', () => {
    if (settled) return;
    settled = true;
    if (whole !== null) done(null, whole.subarray(0, size));
    else done(null, rest !== null ? Buffer.concat(rest, size) : (first ?? emptyBody));
  });
}

const emptyBody = Buffer.alloc(0);

/** A JSON object (not null, not an array). */
export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The `personal_api_key` a parsed JSON body carries (a credential upstream accepts there), or undefined. */
export const bodyKeyOf = (parsed: unknown): string | undefined =>
  isRecord(parsed) && typeof parsed.personal_api_key === 'string' ? parsed.personal_api_key : undefined;

/** True when a Content-Type names JSON (`application/json`, `…+json`). */
export const isJsonType = (contentType: string | undefined): boolean =>
  contentType !== undefined && /^[^;]*[/+]json\s*(;|$)/i.test(contentType.trim());

/**
 * Parse a JSON body (empty → null); throws upstream's 400 parse_error, also for a body nesting deeper than
 * `maxApiJsonDepth` (checked before parsing, so nothing recursive ever walks such a body).
 */
export function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) return null;
  const text = body.toString('utf8');
  if (exceedsJsonDepth(text, maxApiJsonDepth)) throw parseError(`nesting deeper than ${maxApiJsonDepth} levels`);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw parseError(error instanceof Error ? error.message : 'invalid JSON');
  }
}
