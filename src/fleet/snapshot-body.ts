/**
 * A snapshot body as stored in Redis: Brotli-compressed (node:zlib, on the libuv pool so the event loop keeps
 * serving). Every follower reads the body of each change, so its size is the fleet's Redis egress per change;
 * local_evaluation JSON shrinks 5–30× at quality 6, compressed once by the leader in tens of milliseconds for a
 * few megabytes. The seal covers the compressed bytes, so nothing unverified is ever decompressed.
 * Decompression is bounded: a body that would grow past the limit is refused, never allocated.
 */
import { promisify } from 'node:util';
import { brotliCompress, brotliDecompress, constants } from 'node:zlib';
import type { BodyEncoding } from './snapshot-head.js';

const compress = promisify(brotliCompress);
const decompress = promisify(brotliDecompress);

/** The body compressed for Redis. */
export function encodeBody(body: Buffer): Promise<Buffer> {
  return compress(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 6, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } });
}

/** The body stored as `encoding`, at most `maxBytes` once decompressed; or why it is refused. Never rejects. */
export async function decodeBody(stored: Buffer, encoding: BodyEncoding, maxBytes: number): Promise<Buffer | string> {
  if (encoding === 'identity') return stored;
  try {
    return await decompress(stored, { maxOutputLength: maxBytes });
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' ? 'decompresses past FLAG_SIDECAR_UPSTREAM_MAX_BODY' : 'is not valid Brotli';
  }
}
