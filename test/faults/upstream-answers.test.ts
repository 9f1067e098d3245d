/**
 * Hostile and malformed requests answered as upstream answers them (issue 15 item 6), through a real sidecar in
 * front of the fake upstream: deeply nested JSON (a clean 400, never a stack overflow), the flags service's own
 * refusals on /flags, /decide and /flags/definitions (status, content type and body of its FlagError), and what
 * node's parser rejects (raw sockets: 431 for oversized headers, as node itself answers).
 */
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFlagSidecar, startFlagUpstream, tokenOne } from '../support/flag-api-env.js';
import { bearer } from '../support/fixtures.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import type { TestSidecar } from '../support/start-sidecar.js';

let upstream: FakeUpstream;
let sidecar: TestSidecar;

beforeAll(async () => {
  upstream = await startFlagUpstream();
  sidecar = await startFlagSidecar(upstream);
});

afterAll(async () => {
  await sidecar.stop();
  await upstream.close();
});

const nested = (levels: number): string => '['.repeat(levels) + ']'.repeat(levels);
const deep = nested(100_000);
const flagsBody = (personProperties: string): string => `{"token":"${tokenOne}","distinct_id":"u1","person_properties":{"p":${personProperties}}}`;

const plain = 'text/plain; charset=utf-8';
const jsonType = 'application/json';
// The service's depth guard (FlagRequest::check_json_depth) refuses, and try_parse_with_fallbacks answers its own reason.
const tooDeepText = 'Failed to decode request: invalid JSON. Please check your request format and try again.';
const apiTooDeep = { type: 'invalid_request', code: 'parse_error', detail: 'JSON parse error - nesting deeper than 1000 levels', attr: null };
const authError = (code: string, detail: string) => ({ type: 'authentication_error', code, detail, attr: null });

interface Case {
  readonly name: string;
  readonly method?: string;
  readonly path: string;
  readonly key?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Uint8Array;
  readonly status: number;
  readonly type: string | null;
  /** The exact text, or the parsed JSON body. */
  readonly body_: string | Record<string, unknown>;
}

async function send(c: Case) {
  const headers: Record<string, string> = { ...(c.key ? bearer(c.key) : {}), ...c.headers };
  if (c.body !== undefined) headers['content-type'] ??= 'application/json';
  const response = await fetch(`${sidecar.apiUrl}${c.path}`, { method: c.method ?? 'GET', headers, body: c.body });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text(), allow: response.headers.get('allow') };
}

function expectAnswer(c: Case, got: { status: number; type: string | null; text: string }): void {
  const body = typeof c.body_ === 'string' ? got.text : (JSON.parse(got.text) as unknown);
  expect({ status: got.status, type: got.type, body }, c.name).toEqual({ status: c.status, type: c.type, body: c.body_ });
}

const cases: Case[] = [
  // Deep nesting: /flags answers as the flags service's depth guard (128 levels) leaves it, /api routes DRF's parse error.
  { name: '/flags, person property nested 100,000 deep', method: 'POST', path: '/flags?v=2', body: flagsBody(deep), status: 400, type: plain, body_: tooDeepText },
  { name: '/flags, 129 levels in all', method: 'POST', path: '/flags?v=2', body: flagsBody(nested(127)), status: 400, type: plain, body_: tooDeepText },
  { name: '/decide, nested 100,000 deep', method: 'POST', path: '/decide?v=4', body: flagsBody(deep), status: 400, type: plain, body_: tooDeepText },
  { name: '/flags, unknown token, nested deep', method: 'POST', path: '/flags?v=2', body: `{"token":"phc_other","distinct_id":"u1","x":${deep}}`, status: 400, type: plain, body_: tooDeepText },
  { name: 'flag create nested 100,000 deep', method: 'POST', path: '/api/projects/1/feature_flags/', key: 'phx_writer', body: `{"key":"deep","filters":${deep}}`, status: 400, type: jsonType, body_: apiTooDeep },
  { name: 'flag update nested 1,001 deep', method: 'PATCH', path: '/api/projects/1/feature_flags/1/', key: 'phx_writer', body: `{"filters":${nested(1000)}}`, status: 400, type: jsonType, body_: apiTooDeep },
  { name: 'bulk_keys nested deep', method: 'POST', path: '/api/projects/1/feature_flags/bulk_keys/', key: 'phx_reader', body: `{"ids":${deep}}`, status: 400, type: jsonType, body_: apiTooDeep },
  { name: 'endpoint run nested deep', method: 'POST', path: '/api/projects/1/endpoints/daily/run/', key: 'phx_legacy', body: `{"variables":${deep}}`, status: 400, type: jsonType, body_: apiTooDeep },
  {
    name: 'evaluation_reasons, person_properties nested 1,001 deep in the query',
    path: `/api/projects/1/feature_flags/evaluation_reasons/?distinct_id=u1&person_properties=${encodeURIComponent(`{"p":${nested(1000)}}`)}`,
    key: 'phx_legacy',
    status: 400,
    type: jsonType,
    body_: { type: 'validation_error', code: 'invalid_input', detail: 'person_properties must be a JSON object', attr: 'person_properties' },
  },
  // /flags refusals, as the flags service's FlagError answers them.
  { name: '/flags without a token', method: 'POST', path: '/flags?v=2', body: '{"distinct_id":"u1"}', status: 401, type: jsonType, body_: authError('not_authenticated', 'No API token provided. Please include a valid API token in your request.') },
  { name: '/flags, malformed JSON', method: 'POST', path: '/flags?v=2', body: '{"token":', status: 400, type: plain, body_: 'Failed to decode request: invalid JSON. Please check your request format and try again.' },
  { name: '/flags, a JSON array', method: 'POST', path: '/flags?v=2', body: '[1]', status: 400, type: plain, body_: 'Failed to decode request: invalid JSON. Please check your request format and try again.' },
  { name: '/flags, body above the limit', method: 'POST', path: '/flags?v=2', body: `{"pad":"${'x'.repeat(1_100_000)}"}`, status: 413, type: plain, body_: 'Failed to buffer the request body: length limit exceeded' },
  {
    name: '/flags, gzip inflating past the limit',
    method: 'POST',
    path: '/flags?v=2',
    headers: { 'content-encoding': 'gzip' },
    body: gzipSync(Buffer.alloc(5_000_000, 0x20)),
    status: 413,
    type: plain,
    body_: 'Decompressed request body exceeded 1048576 bytes. If this is a legitimate workload, contact PostHog support.',
  },
  { name: '/flags, not gzip', method: 'POST', path: '/flags?v=2', headers: { 'content-encoding': 'gzip' }, body: '{"token":"x"}', status: 400, type: plain, body_: 'Failed to decode request: IO error: invalid gzip header. Please check your request format and try again.' },
  // /flags/definitions: the flags service checks keys itself (every secret-key failure is its 401).
  { name: 'definitions, another project’s secret key', path: `/flags/definitions?token=${tokenOne}`, key: 'phs_projecttwo', status: 401, type: jsonType, body_: authError('authentication_failed', 'Secret API token is invalid.') },
  { name: 'definitions, unknown secret key', path: `/flags/definitions?token=${tokenOne}`, key: 'phs_unknown', status: 401, type: jsonType, body_: authError('authentication_failed', 'Secret API token is invalid.') },
  { name: 'definitions, unknown personal key', path: `/flags/definitions?token=${tokenOne}`, key: 'phx_unknown', status: 401, type: jsonType, body_: authError('authentication_failed', 'Personal API key is invalid.') },
  { name: 'definitions, personal key scoped to another project', path: `/flags/definitions?token=${tokenOne}`, key: 'phx_project_two', status: 401, type: jsonType, body_: authError('authentication_failed', 'Personal API key is invalid.') },
  {
    name: 'definitions, unknown project token',
    path: '/flags/definitions?token=phc_unknown',
    key: 'phs_projectone',
    status: 401,
    type: jsonType,
    body_: authError('authentication_failed', 'The provided API key is invalid or has expired. Please check your API key and try again.'),
  },
  { name: 'definitions, POST', method: 'POST', path: `/flags/definitions?token=${tokenOne}`, key: 'phs_projectone', body: '{}', status: 405, type: null, body_: '' },
  { name: 'definitions, HEAD (before any key check)', method: 'HEAD', path: `/flags/definitions?token=${tokenOne}`, status: 200, type: jsonType, body_: '' },
];

/** Answers that already matched upstream's before this change, kept as guards. */
const unchanged: Case[] = [
  { name: 'definitions without a key', path: `/flags/definitions?token=${tokenOne}`, status: 401, type: jsonType, body_: authError('not_authenticated', 'Authentication credentials were not provided.') },
  { name: 'definitions without ?token=', path: '/flags/definitions', key: 'phs_projectone', status: 400, type: plain, body_: 'Failed to deserialize query string: missing field `token`' },
  { name: '/flags without distinct_id', method: 'POST', path: '/flags?v=2', body: `{"token":"${tokenOne}"}`, status: 400, type: plain, body_: 'The distinct_id field is missing from the request. Please include a valid identifier.' },
];

describe('answers as upstream gives them', () => {
  it.each(cases)('$name', async (c) => {
    expectAnswer(c, await send(c));
  });

  it.each(unchanged)('$name (unchanged)', async (c) => {
    expectAnswer(c, await send(c));
  });

  it('answers a definitions POST with the methods upstream allows', async () => {
    expect((await send({ ...(cases.find((c) => c.name === 'definitions, POST') as Case) })).allow).toBe('GET, OPTIONS, HEAD');
  });

  it('accepts what upstream accepts: 128 levels on /flags, 1,000 on the API, brackets inside strings', async () => {
    const atLimit = await send({ name: '', method: 'POST', path: '/flags?v=2', body: flagsBody(nested(126)), status: 200, type: jsonType, body_: {} });
    expect(atLimit.status).toBe(200);
    const inString = await send({ name: '', method: 'POST', path: '/flags?v=2', body: flagsBody(JSON.stringify('['.repeat(5000))), status: 200, type: jsonType, body_: {} });
    expect(inString.status).toBe(200);
    const before = upstream.requests.filter((r) => r.method === 'PATCH').length;
    const update = await send({ name: '', method: 'PATCH', path: '/api/projects/1/feature_flags/2/', key: 'phx_writer', body: `{"tags":${nested(998)}}`, status: 0, type: null, body_: '' });
    expect(update.status).not.toBe(500);
    expect(upstream.requests.filter((r) => r.method === 'PATCH').length).toBe(before + 1);
  });

  it('never sends a write upstream whose body nests too deep', async () => {
    const before = upstream.requests.length;
    await send(cases[4] as Case);
    expect(upstream.requests.length).toBe(before);
  });

  it('reads any query string flat: qs-style nesting and 1,500 parameters are just names', async () => {
    const nestedNames = `a${'[b]'.repeat(3000)}=1`;
    const many = Array.from({ length: 1500 }, (_, i) => `p${i}=${i}`).join('&');
    for (const query of [nestedNames, many]) {
      const response = await send({ name: '', path: `/flags/definitions?token=${tokenOne}&${query}`, key: 'phs_projectone', status: 200, type: jsonType, body_: {} });
      expect(response.status).toBe(200);
    }
  });
});

/** Write raw bytes on a fresh connection; resolve with everything the server sent until it closed. */
function raw(data: string): Promise<string> {
  const url = new URL(sidecar.apiUrl);
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    let out = '';
    socket.on('data', (chunk) => (out += chunk.toString('latin1')));
    socket.on('close', () => resolve(out));
    socket.on('error', () => resolve(out));
    socket.write(data);
  });
}

describe('what node’s parser rejects, answered as node does', () => {
  const rawCases: Array<{ name: string; request: string; answer: string }> = [
    { name: 'a header above the 16 KiB limit', request: `GET /flags/definitions HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, answer: 'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n' },
    { name: 'a URL above the limit', request: `GET /api/projects/1/feature_flags/?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, answer: 'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n' },
    { name: 'a malformed request line', request: 'GARBAGE\r\n\r\n', answer: 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n' },
    { name: 'Content-Length with chunked (smuggling shape)', request: 'POST /flags HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', answer: 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n' },
  ];

  it.each(rawCases)('$name', async ({ request, answer }) => {
    expect(await raw(request)).toBe(answer);
    // The listener is unharmed.
    expect((await fetch(`${sidecar.opsUrl}/healthz`)).status).toBe(200);
  });
});
