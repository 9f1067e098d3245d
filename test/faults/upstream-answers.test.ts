/**
 * Hostile and malformed requests answered as upstream answers them (issue 15 item 6), through a real sidecar in
 * front of the fake upstream: deeply nested JSON (a clean 400, never a stack overflow), the flags service's own
 * refusals on /flags, /decide and /flags/definitions (status, content type and body of its FlagError), and what
 * node's parser rejects (raw sockets: 431 for oversized headers, as node itself answers), and /flags bodies read
 * as the flags service reads them, against the fake upstream's own reading.
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

// /flags bodies read as upstream's flags service reads them (decoding.rs, flag_request.rs): the same request sent to
// the sidecar and to the fake upstream (which models the service apart from the sidecar's code) gets the same status
// and, for a refusal, the same text, each given here as the service's source words it.
const refusal = (reason: string): string => `Failed to decode request: ${reason}. Please check your request format and try again.`;
/** A request whose whole body nests `levels` deep (the body object, `person_properties`, then arrays). */
const nestedRequest = (levels: number): string => `{"token":"${tokenOne}","distinct_id":"u1","person_properties":{"p":${'['.repeat(levels - 2)}${']'.repeat(levels - 2)}}}`;
const request = (extra: Record<string, unknown> = {}): string => JSON.stringify({ token: tokenOne, distinct_id: 'u1', ...extra });
const form = (json: string): string => `data=${encodeURIComponent(Buffer.from(json).toString('base64'))}`;
const gzipped = gzipSync(Buffer.from(request()));
const formType = { 'content-type': 'application/x-www-form-urlencoded' };

interface BodyCase {
  readonly name: string;
  readonly query?: string;
  readonly headers?: Record<string, string>;
  readonly body: string | Buffer;
  /** 200, or the refusal's reason. */
  readonly answer: 200 | string;
}

const bodyCases: BodyCase[] = [
  { name: 'JSON nested 128 levels (the guard\'s limit)', body: nestedRequest(128), answer: 200 },
  { name: 'JSON nested 129 levels: the guard refuses, the base64 fallback then says "invalid JSON"', body: nestedRequest(129), answer: 'invalid JSON' },
  { name: 'form data nested 127 levels (serde_json\'s limit)', headers: formType, body: form(nestedRequest(127)), answer: 200 },
  { name: 'form data nested 128 levels', headers: formType, body: form(nestedRequest(128)), answer: 'invalid JSON structure' },
  { name: 'JSON5: comments, single quotes, unquoted keys, trailing commas', body: `{ // an SDK's hand-written body\n token: '${tokenOne}', distinct_id: 'u1', person_properties: { plan: 'pro', }, }`, answer: 200 },
  { name: 'JSON5: NaN and Infinity (read as null)', body: `{"token":"${tokenOne}","distinct_id":"u1","person_properties":{"score":NaN,"max":-Infinity}}`, answer: 200 },
  { name: 'a byte-order mark before the JSON (JSON5 white space)', body: `\uFEFF${request()}`, answer: 200 },
  { name: 'JSON5 in form data (serde_json there)', headers: formType, body: form(`{token:'${tokenOne}',distinct_id:'u1'}`), answer: 'invalid JSON structure' },
  { name: 'form data with `+` in its base64 (not a space)', headers: formType, body: `data=${Buffer.from(request({ person_properties: { v: '>>>' } })).toString('base64')}`, answer: 200 },
  { name: 'gzip found by its magic bytes alone', body: gzipped, answer: 200 },
  { name: 'base64 JSON without ?compression=', body: Buffer.from(request()).toString('base64'), answer: 200 },
  { name: 'an unknown ?compression=', query: 'compression=lz64', body: request(), answer: 'Unsupported compression type' },
  { name: 'an unknown content type', headers: { 'content-type': 'application/xml; charset=utf-8' }, body: request(), answer: 'unsupported content type: application/xml; charset=utf-8' },
  { name: 'a distinct_id that is an object', body: request({ distinct_id: { id: 1 } }), answer: 'invalid JSON' },
  { name: 'person_properties that are a list', body: request({ person_properties: [1] }), answer: 'invalid JSON' },
  { name: 'token and api_key both (one field, two names)', body: request({ api_key: tokenOne }), answer: 'invalid JSON' },
  { name: 'a group without its properties object', body: request({ group_properties: { company: 1 } }), answer: 'invalid JSON' },
  { name: 'evaluation_runtime that is not text', body: request({ evaluation_runtime: 1 }), answer: 'invalid JSON' },
  { name: 'gzip shorter than its header', headers: { 'content-encoding': 'gzip' }, body: 'nope', answer: 'IO error: unexpected end of file' },
  { name: 'gzip with a bad header', headers: { 'content-encoding': 'gzip' }, body: request(), answer: 'IO error: invalid gzip header' },
  { name: 'gzip cut short', body: gzipped.subarray(0, gzipped.length - 4), answer: 'IO error: unexpected end of file' },
  {
    name: 'gzip with a bad checksum',
    body: Buffer.concat([gzipped.subarray(0, gzipped.length - 8), Buffer.from([1, 2, 3, 4]), gzipped.subarray(gzipped.length - 4)]),
    answer: 'IO error: corrupt gzip stream does not have a matching checksum',
  },
  { name: 'gzip with a corrupt deflate stream', body: Buffer.concat([gzipped.subarray(0, 10), Buffer.from([0xff, 0xff]), gzipped.subarray(12)]), answer: 'IO error: corrupt deflate stream' },
  { name: 'gzip asked for form data', query: 'compression=gzip', headers: formType, body: form(request()), answer: 'Gzip compression not supported for form-urlencoded data' },
  { name: 'form data that is not base64', headers: formType, body: 'data=ab!c', answer: 'Base64 decoding error: Invalid symbol 33, offset 2.' },
  { name: 'form data (no `data=`) with a symbol after padding', headers: formType, body: 'ab%3Dc', answer: 'Base64 decoding error: Invalid symbol 61, offset 2.' },
  { name: 'form data whose last symbol has stray bits', headers: formType, body: 'data=ab', answer: 'Base64 decoding error: Invalid last symbol 98, offset 1.' },
  { name: 'form data that is not UTF-8', headers: formType, body: Buffer.from([0x64, 0x61, 0x74, 0x61, 0x3d, 0xff]), answer: 'Invalid UTF-8 in form data' },
];

async function post(base: string, c: BodyCase): Promise<{ status: number; text: string }> {
  const response = await fetch(`${base}/flags?${c.query ?? 'v=2'}${c.query ? '&v=2' : ''}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...c.headers },
    body: c.body,
  });
  return { status: response.status, text: await response.text() };
}

describe('/flags bodies read as the flags service reads them', () => {
  it.each(bodyCases)('$name', async (c) => {
    const expected = c.answer === 200 ? { status: 200 } : { status: 400, text: refusal(c.answer) };
    for (const base of [sidecar.apiUrl, upstream.url]) {
      const got = await post(base, c);
      expect(c.answer === 200 ? { status: got.status } : got, `${base === upstream.url ? 'fake upstream' : 'sidecar'}: ${got.text.slice(0, 200)}`).toEqual(expected);
    }
  });

  it('reads `+` in form data as base64, not as a space', async () => {
    const body = `data=${Buffer.from(request({ person_properties: { v: '>>>' } })).toString('base64')}`;
    expect(body).toContain('+');
    const response = await fetch(`${sidecar.apiUrl}/flags?v=2`, { method: 'POST', headers: formType, body });
    expect(response.status).toBe(200);
  });
});
