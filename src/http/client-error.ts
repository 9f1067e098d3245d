/**
 * What a listener answers a request node's parser rejects (a `clientError`), exactly as node:http does when no
 * listener is installed: 431 for headers above the limit, 413 for oversized chunk extensions, 408 when the
 * request did not arrive in time, 400 for anything else; always closing the connection.
 */
import { http } from './node-http.js';

const { STATUS_CODES } = http;

const line = (status: number): string => `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nConnection: close\r\n\r\n`;

const byCode: Readonly<Record<string, string>> = {
  HPE_HEADER_OVERFLOW: line(431),
  HPE_CHUNK_EXTENSIONS_OVERFLOW: line(413),
  ERR_HTTP_REQUEST_TIMEOUT: line(408),
};

const badRequest = line(400);

/** The raw response for a parser error `code` (node's `error.code`; anything unknown is a 400). */
export function clientErrorResponse(code: unknown): string {
  return typeof code === 'string' ? (byCode[code] ?? badRequest) : badRequest;
}
