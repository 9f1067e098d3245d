/**
 * Request bodies of forwarded writes: read whole up to a limit (413 above it, decided from Content-Length
 * before reading when it is declared), and checked as JSON when declared JSON (upstream's 400 parse_error
 * otherwise), so a malformed body never costs an upstream request.
 */
import type { IncomingMessage } from 'node:http';
import { bodyTooLarge, parseError } from '../errors.js';

/** Read the whole body; rejects with a 413 ApiError past `limit` bytes. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(bodyTooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        reject(bodyTooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      // The request is done with: its listeners go with it (removing them costs more than the rest of a small read).
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(error);
    };
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
  });
}

/** True when a Content-Type names JSON (`application/json`, `…+json`). */
export const isJsonType = (contentType: string | undefined): boolean =>
  contentType !== undefined && /^[^;]*[/+]json\s*(;|$)/i.test(contentType.trim());

/** Parse a JSON body (empty → null); throws upstream's 400 parse_error. */
export function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) return null;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw parseError(error instanceof Error ? error.message : 'invalid JSON');
  }
}
