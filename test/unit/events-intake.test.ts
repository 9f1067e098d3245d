import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodeCapture, type CaptureInput } from '../../src/events/intake.js';
import { eventsUrlFor } from '../../src/config/events-url.js';

const token = 'phc_abc';
const ev = { event: 'clicked', distinct_id: 'u1', uuid: '0190a5c4-0000-7000-8000-000000000001', properties: { a: 1 } };
const input = (body: string | Buffer, extra: Partial<CaptureInput> = {}): CaptureInput => ({
  body: typeof body === 'string' ? Buffer.from(body) : body,
  contentType: 'application/json',
  contentEncoding: undefined,
  compression: undefined,
  limit: 1024 * 1024,
  room: Number.MAX_SAFE_INTEGER,
  ...extra,
});

describe('decodeCapture', () => {
  it.each([
    ['a batch with api_key', JSON.stringify({ api_key: token, batch: [ev, ev] }), {}, 2],
    ['a batch with token', JSON.stringify({ token, batch: [ev] }), {}, 1],
    ['an array, token in properties', JSON.stringify([{ ...ev, properties: { a: 1, token } }]), {}, 1],
    ['one event with $token', JSON.stringify({ ...ev, $token: token }), {}, 1],
    ['gzip by Content-Encoding', gzipSync(JSON.stringify({ api_key: token, batch: [ev] })), { contentEncoding: 'gzip' }, 1],
    ['gzip by ?compression=gzip-js', gzipSync(JSON.stringify({ api_key: token, batch: [ev] })), { compression: 'gzip-js' }, 1],
    ['gzip by its magic bytes', gzipSync(JSON.stringify({ api_key: token, batch: [ev] })), {}, 1],
    [
      'form with base64 data',
      `data=${encodeURIComponent(Buffer.from(JSON.stringify({ ...ev, api_key: token })).toString('base64'))}&compression=base64`,
      { contentType: 'application/x-www-form-urlencoded' },
      1,
    ],
  ] as const)('accepts %s', (_what, body, extra, count) => {
    const decoded = decodeCapture(input(body, extra));
    expect(decoded).toMatchObject({ kind: 'events', token });
    if (decoded.kind === 'events') {
      expect(decoded.events).toHaveLength(count);
      expect(JSON.parse(decoded.events[0] as string)).toMatchObject({ uuid: ev.uuid, properties: expect.objectContaining({ a: 1 }) });
    }
  });

  it.each([
    ['not JSON', '{x', {}, 400, 'failed to parse request: '],
    ['a JSON scalar', '42', {}, 400, 'failed to parse request: '],
    ['an empty batch', JSON.stringify({ api_key: token, batch: [] }), {}, 400, 'request holds no event'],
    ['an event without a name', JSON.stringify({ api_key: token, batch: [{ distinct_id: 'x' }] }), {}, 400, 'event submitted with an empty event name'],
    ['no token anywhere', JSON.stringify([ev]), {}, 401, 'event submitted without an api_key'],
    ['two tokens', JSON.stringify([{ ...ev, api_key: 'phc_a' }, { ...ev, api_key: 'phc_b' }]), {}, 401, 'batch submitted with inconsistent api_key values'],
    ['bad gzip', 'plain text', { compression: 'gzip-js' }, 400, 'failed to decode request: invalid GZIP data'],
    ['a gzip bomb', gzipSync(Buffer.alloc(64 * 1024)), { limit: 1024 }, 400, 'maximum event size exceeded'],
    ['lz64', 'abc', { compression: 'lz64' }, 400, 'failed to decode request: lz64'],
    ['a form without data', 'foo=bar', { contentType: 'application/x-www-form-urlencoded' }, 400, 'failed to decode request: missing data field'],
    ['too deep', `${'['.repeat(1001)}${']'.repeat(1001)}`, {}, 400, 'failed to parse request: nesting'],
  ] as const)('refuses %s as upstream does', (_what, body, extra, status, message) => {
    const decoded = decodeCapture(input(body, extra));
    expect(decoded).toMatchObject({ kind: 'refused', status });
    if (decoded.kind === 'refused') expect(decoded.message.startsWith(message)).toBe(true);
  });
});

describe('decodeCapture keeps each event as sent', () => {
  const sent = ['{ "event" : "clicked",\n  "uuid":"u-1", "properties": {"x": "\\u00e9 ]}\\" [{", "n": 1.0}, "api_key":"phc_abc" }', '{"event":"b","properties":{"s":"😀"}}'];
  const batch = `{"batch": [ ${sent.join(' ,\n')} ], "api_key": "phc_abc", "sent_at": "2026-11-25T00:00:00Z"}`;
  it.each([
    ['a batch', batch, {}],
    ['a gzip batch', gzipSync(batch), { contentEncoding: 'gzip' }],
    ['an array', ` [${sent.join(',')}] `, {}],
    ['a form with base64 data', `data=${encodeURIComponent(Buffer.from(batch).toString('base64'))}`, { contentType: 'application/x-www-form-urlencoded' }],
  ] as const)('%s: byte for byte, with each size in bytes', (_what, body, extra) => {
    const decoded = decodeCapture(input(body, extra));
    expect(decoded).toMatchObject({ kind: 'events', events: sent, sizes: sent.map((e) => Buffer.byteLength(e)) });
  });

  it('one event: the body itself, without the whitespace around it', () => {
    expect(decodeCapture(input(`\n ${sent[0]} \n`))).toMatchObject({ kind: 'events', events: [sent[0]] });
  });

  it('answers full, without parsing, when the decoded body is larger than the room left', () => {
    expect(decodeCapture(input('{not even json', { room: 10 }))).toEqual({ kind: 'full' });
    expect(decodeCapture(input(gzipSync(batch), { room: Buffer.byteLength(batch) - 1 }))).toEqual({ kind: 'full' });
    expect(decodeCapture(input(batch, { room: Buffer.byteLength(batch) }))).toMatchObject({ kind: 'events' });
  });
});

describe('eventsUrlFor', () => {
  it.each([
    ['https://us.posthog.com', 'https://us.i.posthog.com/'],
    ['https://eu.posthog.com', 'https://eu.i.posthog.com/'],
    ['https://app.posthog.com', 'https://us.i.posthog.com/'],
    ['https://posthog.example.com/base', 'https://posthog.example.com/base'],
  ])('%s → %s', (upstream, expected) => {
    expect(eventsUrlFor(null, new URL(upstream))?.href).toBe(expected);
  });
  it('prefers the given URL, and is null offline', () => {
    expect(eventsUrlFor(new URL('http://relay:1'), new URL('https://us.posthog.com'))?.href).toBe('http://relay:1/');
    expect(eventsUrlFor(null, null)).toBeNull();
  });
});
