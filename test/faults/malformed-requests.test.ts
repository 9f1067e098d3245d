import { gzipSync, deflateSync, brotliCompressSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, get } from '../support/fixtures.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { rawExchange, rawRequest } from '../support/raw-http.js';
import type { TestSidecar } from '../support/start-sidecar.js';
import { startTwoProjects } from '../support/two-projects-env.js';

// Requests no HTTP client sends, over raw sockets: smuggling shapes, oversized heads and bodies, odd encodings.
// Each is answered (a clean 4xx where the request is malformed), never a 5xx, never a hang, never a second
// request smuggled past auth; the process keeps serving and logs no error. Header overflow is checked as "a
// 4xx", not an exact status (its status is being changed to 431 elsewhere); deeply nested JSON is covered
// with that change too.
const key = 'phx_writer';
let upstream: FakeUpstream;
let sidecar: TestSidecar;

beforeAll(async () => {
  ({ upstream, sidecar } = await startTwoProjects({ personalKeys: { [key]: { scopes: ['*'], scoped_teams: [1] } } }));
});

afterAll(async () => {
  await sidecar.stop();
  await upstream.close();
});

const flagsBody = '{"token":"phc_one","distinct_id":"user-1"}';
const post = (path: string, headers: string[], body: string | Buffer): Buffer =>
  Buffer.concat([Buffer.from(rawRequest([`POST ${path} HTTP/1.1`, 'Host: localhost', 'Connection: close', ...headers], '')), Buffer.isBuffer(body) ? body : Buffer.from(body)]);
const flagsPost = (headers: string[], body: string | Buffer) => post('/flags?v=2', headers, body);
const sized = (body: string | Buffer, type = 'application/json') => [`Content-Type: ${type}`, `Content-Length: ${Buffer.byteLength(body)}`];
const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024)); // 64 MiB of zeros in ~64 KiB
const big = 'x'.repeat(2 * 1024 * 1024);

/** [name, request bytes, what must come back: '4xx' (every answer), 'ok' (a 2xx), or 'answered' (no 5xx)]. */
const cases: Array<[string, string | Buffer, '4xx' | 'ok' | 'answered']> = [
  ['a well-formed /flags request (control)', flagsPost(sized(flagsBody), flagsBody), 'ok'],
  // Smuggling shapes.
  ['Content-Length and Transfer-Encoding', flagsPost(['Content-Type: application/json', 'Content-Length: 4', 'Transfer-Encoding: chunked'], `${flagsBody.length.toString(16)}\r\n${flagsBody}\r\n0\r\n\r\n`), '4xx'],
  ['two different Content-Lengths', flagsPost(['Content-Length: 2', `Content-Length: ${flagsBody.length}`], flagsBody), '4xx'],
  ['two equal Content-Lengths', flagsPost([`Content-Length: ${flagsBody.length}`, `Content-Length: ${flagsBody.length}`], flagsBody), 'answered'],
  ['a Content-Length with a sign', flagsPost([`Content-Length: +${flagsBody.length}`], flagsBody), '4xx'],
  ['a negative Content-Length', flagsPost(['Content-Length: -1'], flagsBody), '4xx'],
  ['a hex Content-Length', flagsPost(['Content-Length: 0x10'], flagsBody), '4xx'],
  ['a space before the colon', flagsPost([`Content-Length : ${flagsBody.length}`], flagsBody), '4xx'],
  ['a bad chunk size', flagsPost(['Content-Type: application/json', 'Transfer-Encoding: chunked'], `zz\r\n${flagsBody}\r\n0\r\n\r\n`), '4xx'],
  ['a chunk size overflowing 64 bits', flagsPost(['Transfer-Encoding: chunked'], 'ffffffffffffffffffff\r\nab\r\n0\r\n\r\n'), '4xx'],
  ['a chunk longer than its size', flagsPost(['Transfer-Encoding: chunked'], `2\r\n${flagsBody}\r\n0\r\n\r\n`), '4xx'],
  ['Transfer-Encoding not ending in chunked', flagsPost(['Transfer-Encoding: chunked, identity'], flagsBody), '4xx'],
  ['Transfer-Encoding: xchunked', flagsPost(['Transfer-Encoding: xchunked'], flagsBody), '4xx'],
  ['an obs-fold header line', flagsPost([...sized(flagsBody), 'X-Folded: a', ' b'], flagsBody), '4xx'],
  ['a bare LF line ending', `GET /healthz HTTP/1.1\nHost: x\n\n`, 'answered'],
  ['a NUL in a header value', flagsPost([...sized(flagsBody), 'X-Nul: a\u0000b'], flagsBody), '4xx'],
  ['a CR inside a header value', flagsPost([...sized(flagsBody), 'X-Cr: a\rb'], flagsBody), '4xx'],
  ['an unknown method', rawRequest(['BREW /flags HTTP/1.1', 'Host: x', 'Connection: close']), '4xx'],
  ['an HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', '4xx'],
  ['HTTP/0.9', 'GET /healthz\r\n\r\n', '4xx'],
  ['an absolute-form target to another host', rawRequest(['GET http://evil.example/api/projects/2/feature_flags/local_evaluation HTTP/1.1', 'Host: x', `Authorization: Bearer ${key}`, 'Connection: close']), '4xx'],
  ['a request line of 100 KB', rawRequest([`GET /flags/definitions?token=${'a'.repeat(100_000)} HTTP/1.1`, 'Host: x', 'Connection: close']), '4xx'],
  // Oversized heads and bodies.
  ['one 20 KiB header', flagsPost([...sized(flagsBody), `X-Big: ${'a'.repeat(20 * 1024)}`], flagsBody), '4xx'],
  ['3,000 small headers', flagsPost([...sized(flagsBody), ...Array.from({ length: 3000 }, (_, i) => `X-${i}: 1`)], flagsBody), '4xx'],
  ['a 2 MiB body declared', flagsPost(sized(big), big), '4xx'],
  ['a 2 MiB body chunked', flagsPost(['Content-Type: application/json', 'Transfer-Encoding: chunked'], `${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`), '4xx'],
  ['a 2 MiB forwarded write', post('/api/projects/1/feature_flags/', [`Authorization: Bearer ${key}`, ...sized(big)], big), '4xx'],
  // Odd encodings.
  ['a gzip body', flagsPost([...sized(gzipSync(flagsBody)), 'Content-Encoding: gzip'], gzipSync(flagsBody)), 'ok'],
  ['a gzip bomb (64 MiB of zeros)', flagsPost([...sized(bomb), 'Content-Encoding: gzip'], bomb), '4xx'],
  ['gzip-js compression that is not gzip', post('/flags?v=2&compression=gzip-js', sized(flagsBody), flagsBody), '4xx'],
  ['a deflate body', flagsPost([...sized(deflateSync(flagsBody)), 'Content-Encoding: deflate'], deflateSync(flagsBody)), '4xx'],
  ['a brotli body', flagsPost([...sized(brotliCompressSync(flagsBody)), 'Content-Encoding: br'], brotliCompressSync(flagsBody)), '4xx'],
  ['an unknown Content-Encoding on plain JSON', flagsPost([...sized(flagsBody), 'Content-Encoding: x-unknown'], flagsBody), 'answered'],
  ['base64 form data that is not base64 JSON', post('/flags?v=2&compression=base64', sized('data=%%%%', 'application/x-www-form-urlencoded'), 'data=%%%%'), '4xx'],
  ['a UTF-16 body', flagsPost(sized(Buffer.from(flagsBody, 'utf16le'), 'application/json; charset=utf-16'), Buffer.from(flagsBody, 'utf16le')), '4xx'],
  // The flags service reads the body as JSON5 (json5::from_str), whose white space includes U+FEFF.
  ['a byte-order mark before the JSON', flagsPost(sized(`\uFEFF${flagsBody}`), `\uFEFF${flagsBody}`), 'ok'],
  ['invalid UTF-8 in a distinct_id', flagsPost(sized(Buffer.from('{"token":"phc_one","distinct_id":"\xff\xfe\xc3"}', 'latin1')), Buffer.from('{"token":"phc_one","distinct_id":"\xff\xfe\xc3"}', 'latin1')), 'answered'],
  ['a gzip forwarded write', post('/api/projects/1/feature_flags/', [`Authorization: Bearer ${key}`, ...sized(gzipSync('{"key":"x"}')), 'Content-Encoding: gzip'], gzipSync('{"key":"x"}')), '4xx'],
  // A second request smuggled in a body: it is a request of its own, without the first one's key.
  [
    'a pipelined request without credentials',
    Buffer.concat([
      Buffer.from(rawRequest(['POST /flags?v=2 HTTP/1.1', 'Host: x', ...sized(flagsBody), `Authorization: Bearer ${key}`], flagsBody)),
      Buffer.from(rawRequest(['GET /api/projects/1/feature_flags/local_evaluation HTTP/1.1', 'Host: x', 'Connection: close'])),
    ]),
    'answered',
  ],
];

describe('malformed and hostile requests', () => {
  it.each(cases)('%s', async (_name, request, expected) => {
    const writesBefore = upstream.requests.filter((r) => r.method !== 'GET').length;
    const res = await rawExchange(sidecar.apiUrl, request, { timeoutMs: 15_000 });
    expect(res.closed, 'the connection ends (no hang)').toBe(true);
    expect(res.statuses.length, res.text.slice(0, 200)).toBeGreaterThanOrEqual(1);
    for (const status of res.statuses) expect(status, res.text.slice(0, 300)).toBeLessThan(500);
    if (expected === '4xx') for (const status of res.statuses) expect(status, res.text.slice(0, 300)).toBeGreaterThanOrEqual(400);
    if (expected === 'ok') expect(res.statuses).toEqual([200]);
    if (_name.startsWith('a pipelined')) expect(res.statuses).toEqual([200, 401]);
    // Nothing refused here is forwarded upstream.
    if (expected === '4xx') expect(upstream.requests.filter((r) => r.method !== 'GET').length).toBe(writesBefore);
    // Still serving, with no error logged.
    expect((await get(`${sidecar.apiUrl}/api/projects/1/feature_flags/local_evaluation`, bearer(key))).status).toBe(200);
    expect(sidecar.logs.filter((l) => (l.level as number) >= 50)).toEqual([]);
  }, 30_000);
});
