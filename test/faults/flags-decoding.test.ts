/**
 * `/flags` bodies read as upstream's flags service reads them (decoding.rs, flag_request.rs): the same request sent
 * to the sidecar and to the fake upstream (which models the service apart from the sidecar's code) gets the same
 * status and, for a refusal, the same text — each given here as the service's source words it.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFlagSidecar, startFlagUpstream, tokenOne } from '../support/flag-api-env.js';
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

const refusal = (reason: string): string => `Failed to decode request: ${reason}. Please check your request format and try again.`;
/** A request whose whole body nests `levels` deep (the body object, `person_properties`, then arrays). */
const nested = (levels: number): string => `{"token":"${tokenOne}","distinct_id":"u1","person_properties":{"p":${'['.repeat(levels - 2)}${']'.repeat(levels - 2)}}}`;
const request = (extra: Record<string, unknown> = {}): string => JSON.stringify({ token: tokenOne, distinct_id: 'u1', ...extra });
const form = (json: string): string => `data=${encodeURIComponent(Buffer.from(json).toString('base64'))}`;
const gzipped = gzipSync(Buffer.from(request()));
const formType = { 'content-type': 'application/x-www-form-urlencoded' };

interface Case {
  readonly name: string;
  readonly query?: string;
  readonly headers?: Record<string, string>;
  readonly body: string | Buffer;
  /** 200, or the refusal's reason. */
  readonly answer: 200 | string;
}

const cases: Case[] = [
  { name: 'JSON nested 128 levels (the guard\'s limit)', body: nested(128), answer: 200 },
  { name: 'JSON nested 129 levels: the guard refuses, the base64 fallback then says "invalid JSON"', body: nested(129), answer: 'invalid JSON' },
  { name: 'form data nested 127 levels (serde_json\'s limit)', headers: formType, body: form(nested(127)), answer: 200 },
  { name: 'form data nested 128 levels', headers: formType, body: form(nested(128)), answer: 'invalid JSON structure' },
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

async function post(base: string, c: Case): Promise<{ status: number; text: string }> {
  const response = await fetch(`${base}/flags?${c.query ?? 'v=2'}${c.query ? '&v=2' : ''}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...c.headers },
    body: c.body,
  });
  return { status: response.status, text: await response.text() };
}

describe('/flags bodies read as the flags service reads them', () => {
  it.each(cases)('$name', async (c) => {
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
