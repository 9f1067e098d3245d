import { describe, expect, it } from 'vitest';
import { clientErrorResponse } from '../../src/http/client-error.js';

describe('clientErrorResponse (node:http defaults)', () => {
  const cases: Array<[unknown, string]> = [
    ['HPE_HEADER_OVERFLOW', 'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n'],
    ['HPE_CHUNK_EXTENSIONS_OVERFLOW', 'HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\n\r\n'],
    ['ERR_HTTP_REQUEST_TIMEOUT', 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n'],
    ['HPE_INVALID_METHOD', 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n'],
    [undefined, 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n'],
  ];
  it.each(cases)('%s', (code, expected) => {
    expect(clientErrorResponse(code)).toBe(expected);
  });
});
