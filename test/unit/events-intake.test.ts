import { gzipSync } from 'node:zlib';
import LZString from 'lz-string';
import { describe, expect, it } from 'vitest';
import { decodeCapture as decodeBytes, decodedPayloadLimit, type CaptureInput } from '../../src/events/intake.js';
import { eventsUrlFor } from '../../src/config/events-url.js';

const token = 'phc_abc';
const ev = { event: 'clicked', distinct_id: 'u1', uuid: '0190a5c4-0000-7000-8000-000000000001', properties: { a: 1 } };
const form = 'application/x-www-form-urlencoded';
const input = (body: string | Buffer, extra: Partial<CaptureInput> = {}): CaptureInput => ({
  path: '/batch',
  body: typeof body === 'string' ? Buffer.from(body) : body,
  queryData: undefined,
  contentType: 'application/json',
  contentEncoding: undefined,
  compression: undefined,
  limit: 1024 * 1024,
  room: Number.MAX_SAFE_INTEGER,
  ...extra,
});
/** decodeCapture, with the events as text. */
const decodeCapture = (given: CaptureInput) => {
  const decoded = decodeBytes(given);
  return decoded.kind === 'events' ? { ...decoded, events: decoded.events.map(String) } : decoded;
};
const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64');
const lz64 = (value: unknown): string => LZString.compressToBase64(JSON.stringify(value));

describe('decodeCapture', () => {
  it.each([
    ['a batch with api_key', JSON.stringify({ api_key: token, batch: [ev, ev] }), {}, 2],
    ['a batch with token', JSON.stringify({ token, batch: [ev] }), {}, 1],
    ['an array, token in properties', JSON.stringify([{ ...ev, properties: { a: 1, token } }]), {}, 1],
    ['one event with $token', JSON.stringify({ ...ev, $token: token }), {}, 1],
    ['gzip by Content-Encoding', gzipSync(JSON.stringify({ api_key: token, batch: [ev] })), { contentEncoding: 'gzip' }, 1],
    ['gzip by ?compression=gzip-js', gzipSync(JSON.stringify({ api_key: token, batch: [ev] })), { compression: 'gzip-js' }, 1],
    ['gzip by its magic bytes', gzipSync(JSON.stringify({ api_key: token, batch: [ev] })), {}, 1],
    ['form with base64 data on /e', `data=${encodeURIComponent(b64({ ...ev, api_key: token }))}&compression=base64`, { path: '/e', contentType: form }, 1],
    ['form with lz64 data', `data=${encodeURIComponent(lz64({ api_key: token, batch: [ev, ev] }))}&compression=lz64`, { contentType: form }, 2],
    ["form with lz64 data, the '+' decoded to spaces", `compression=lz64&data=${lz64([{ ...ev, api_key: token }]).replaceAll('+', '%20')}`, { contentType: form }, 1],
    ['?compression=lz64 on a form', `data=${encodeURIComponent(lz64([{ ...ev, api_key: token }]))}`, { contentType: form, compression: 'lz64' }, 1],
    ['a base64 body without a hint', b64({ api_key: token, batch: [ev] }), { contentType: 'text/plain' }, 1],
    ['a GET with ?data= JSON', '', { queryData: JSON.stringify({ ...ev, api_key: token }) }, 1],
    ['a GET with ?data= base64', '', { queryData: b64([{ ...ev, api_key: token }]), compression: 'base64' }, 1],
  ] as const)('accepts %s', (_what, body, extra, count) => {
    const decoded = decodeCapture(input(body, extra));
    expect(decoded).toMatchObject({ kind: 'events', token });
    if (decoded.kind === 'events') {
      expect(decoded.events).toHaveLength(count);
      expect(JSON.parse(decoded.events[0]!)).toMatchObject({ uuid: ev.uuid, properties: expect.objectContaining({ a: 1 }) });
    }
  });

  it.each([
    ['not JSON', '{x', {}, 400, 'failed to parse request: '],
    ['a JSON scalar', '42', {}, 400, 'failed to parse request: data did not match any variant of untagged enum RawRequest'],
    ['an empty body', '', {}, 400, 'request missing data payload'],
    ['an empty batch', JSON.stringify({ api_key: token, batch: [] }), {}, 400, 'request holds no event'],
    ['a batch event without a name', JSON.stringify({ api_key: token, batch: [{ distinct_id: 'x' }] }), {}, 400, 'failed to hydrate events from request: non-engage request missing event name attribute'],
    ['one event without a name on /e', JSON.stringify({ distinct_id: 'x', api_key: token }), { path: '/e' }, 400, 'failed to hydrate events from request: non-engage request missing event name attribute'],
    ['an array event without a name', JSON.stringify([{ distinct_id: 'x', api_key: token }]), {}, 400, 'failed to parse request: data did not match any variant'],
    ['an event with an empty name', JSON.stringify({ api_key: token, batch: [{ event: '', distinct_id: 'x' }] }), {}, 400, 'event submitted with an empty event name'],
    ['no token anywhere', JSON.stringify([ev]), {}, 401, 'event submitted without an api_key'],
    ['two tokens', JSON.stringify([{ ...ev, api_key: 'phc_a' }, { ...ev, api_key: 'phc_b' }]), {}, 401, 'batch submitted with inconsistent api_key values'],
    ['a non-boolean $cookieless_mode', JSON.stringify({ api_key: token, batch: [{ ...ev, properties: { $cookieless_mode: 'yes' } }] }), {}, 400, 'event submitted with invalid cookieless mode'],
    ['bad gzip', 'plain text', { compression: 'gzip-js' }, 400, 'failed to decode request: invalid GZIP data'],
    ['gzip of text that is not UTF-8', gzipSync(Buffer.from([0x7b, 0xff, 0xfe, 0x7d])), {}, 400, 'failed to decode request: invalid gzip data'],
    ['a body that is not UTF-8', Buffer.concat([Buffer.from('{"api_key":"phc_abc","batch":[{"event":"e","distinct_id":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}]}')]), {}, 400, 'failed to decode request: invalid UTF8 in request payload'],
    ['a lone surrogate in lz64', `data=${encodeURIComponent(LZString.compressToBase64('[{"event":"e\ud800"}]'))}&compression=lz64`, { contentType: form }, 400, 'failed to decode request: decompress_lz64: failed UTF16 to UTF8 conversion'],
    ['lz64 cut short', `data=${encodeURIComponent(lz64([ev]).slice(0, 20))}&compression=lz64`, { contentType: form }, 400, 'failed to decode request: decompress_lz64: failed decompress to UTF16'],
    ['a gzip bomb', gzipSync(Buffer.alloc(64 * 1024)), { limit: 1024 }, 413, 'maximum event size exceeded: Decompressed payload would exceed 1024 bytes'],
    ['an lz64 bomb', `data=${encodeURIComponent(LZString.compressToBase64('a'.repeat(1 << 20)))}&compression=lz64`, { contentType: form, limit: 4096 }, 413, 'maximum event size exceeded: Decompressed LZ64 payload would exceed 4096 bytes'],
    ['plain text past the limit', JSON.stringify([{ ...ev, pad: 'x'.repeat(2000) }]), { limit: 1024 }, 413, 'maximum event size exceeded: Uncompressed payload size limit 1024 exceeded'],
    ['a form body that is not a form', '{"event":"e"}', { contentType: form }, 400, 'failed to decode request: expected form data in POST request payload'],
    ['a form without data', 'compression=base64', { contentType: form }, 400, 'failed to parse request: '],
    ['base64 form data on /batch (no legacy unwrap there)', `data=${encodeURIComponent(b64({ api_key: token, batch: [ev] }))}`, { contentType: form }, 400, 'failed to parse request: '],
    ['nesting past serde_json\'s 127 levels', `${'['.repeat(128)}${']'.repeat(128)}`, {}, 400, 'failed to parse request: recursion limit exceeded at line 1 column 128'],
    ['nesting past 127 levels inside an event, over lines', `{"api_key":"phc_abc",\n "batch":[{"event":"e","distinct_id":"d",\n"p":${'['.repeat(125)}${']'.repeat(125)}}]}`, {}, 400, 'failed to parse request: recursion limit exceeded at line 3 column 129'],
  ] as const)('refuses %s as upstream does', (_what, body, extra, status, message) => {
    const decoded = decodeCapture(input(body, extra));
    expect(decoded).toMatchObject({ kind: 'refused', status });
    if (decoded.kind === 'refused') expect(decoded.message.startsWith(message), decoded.message).toBe(true);
  });
});

describe('decodeCapture: distinct_id as upstream extracts it (RawEvent::extract_distinct_id)', () => {
  const { distinct_id: _omitted, ...nameless } = ev;
  it.each([
    ['distinct_id', { distinct_id: 'u' }],
    ['$distinct_id', { $distinct_id: 'u' }],
    ['a number', { distinct_id: 0 }],
    ['false', { distinct_id: false }],
    ['an object', { distinct_id: {} }],
    ['properties.distinct_id', { properties: { distinct_id: 'u' } }],
    ['null at the top, properties.distinct_id', { distinct_id: null, properties: { distinct_id: 'u' } }],
  ])('accepts %s', (_what, fields) => {
    expect(decodeCapture(input(JSON.stringify({ api_key: token, batch: [{ ...nameless, ...fields }] })))).toMatchObject({ kind: 'events' });
  });
  it.each([
    ['no distinct_id', {}],
    ['null', { distinct_id: null }],
    ['an empty string', { distinct_id: '' }],
    ["an empty string at the top (properties' not looked at)", { distinct_id: '', properties: { distinct_id: 'u' } }],
    ['null in properties', { properties: { distinct_id: null } }],
  ])('refuses %s with 400 at once', (_what, fields) => {
    const batch = [ev, { ...nameless, ...fields }];
    expect(decodeCapture(input(JSON.stringify({ api_key: token, batch })))).toEqual({
      kind: 'refused',
      status: 400,
      reason: 'distinct_id',
      message: 'event submitted without a distinct_id',
    });
  });
});

describe('decodeCapture: sizes and the queue', () => {
  const big = (bytes: number): string => JSON.stringify({ api_key: token, batch: [{ ...ev, properties: { pad: 'x'.repeat(bytes) } }] });
  it.each([
    ['a 3 MB event gzipped on /e', '/e', 3 * 1024 * 1024],
    ['a 25 MB batch gzipped on /batch', '/batch', 25 * 1024 * 1024],
  ])('takes %s: the decoded limit is 100 MB, not the body limit', (_what, path, bytes) => {
    const body = gzipSync(big(bytes));
    expect(body.length).toBeLessThan(40 * 1024);
    const decoded = decodeCapture(input(body, { path, limit: decodedPayloadLimit }));
    expect(decoded).toMatchObject({ kind: 'events', token });
  });

  it('answers full (503), not 413, when the decoded text is larger than the room left, without inflating past it', () => {
    const body = gzipSync(big(3 * 1024 * 1024));
    expect(decodeCapture(input(body, { limit: decodedPayloadLimit, room: 1024 * 1024 }))).toEqual({ kind: 'full' });
    expect(decodeCapture(input(big(4000), { room: 1000 }))).toEqual({ kind: 'full' });
    const lz = `data=${encodeURIComponent(LZString.compressToBase64(big(100_000)))}&compression=lz64`;
    expect(decodeCapture(input(lz, { contentType: form, room: 10_000 }))).toEqual({ kind: 'full' });
  });
});

describe('decodeCapture: an events array parsed an event at a time', () => {
  const one = '{"event":"a","distinct_id":"d","api_key":"phc_abc"}';
  it('takes nesting to serde_json\'s limit: 127 levels', () => {
    const body = `{"api_key":"phc_abc","batch":[{"event":"e","distinct_id":"d","p":${'['.repeat(124)}${']'.repeat(124)}}]}`;
    expect(decodeCapture(input(body))).toMatchObject({ kind: 'events', token });
  });

  it.each([
    ['text between events that is not JSON', `[${one} ${one}]`, 400, 'failed to parse request: '],
    ['an event that is not JSON', `[${one},{"event":"b",}]`, 400, 'failed to parse request: '],
    ['a key after the batch that is not JSON', `{"api_key":"phc_abc","batch":[${one}],"x":}`, 400, 'failed to parse request: '],
    ['an array holding a number', `[${one},1]`, 400, 'failed to parse request: data did not match any variant'],
    ['a syntax error after an event that would be refused', `[{"event":""},${one}`, 400, 'failed to parse request: '],
  ] as const)('refuses %s as a whole parse would', (_what, body, status, message) => {
    const decoded = decodeCapture(input(body));
    expect(decoded).toMatchObject({ kind: 'refused', status });
    if (decoded.kind === 'refused') expect(decoded.message.startsWith(message), decoded.message).toBe(true);
  });

  it('reads a root object that is not a batch as one event, whole, even when it holds a batch array', () => {
    const body = '{"event":"x","distinct_id":"d","properties":{"token":"phc_abc"},"batch":[{"event":"y"}]}';
    expect(decodeCapture(input(body))).toMatchObject({ kind: 'events', token, events: [body] });
    expect(decodeCapture(input(body.replace('"event":"x",', ''), { path: '/engage' }))).toMatchObject({ kind: 'events', events: [expect.stringMatching(/^{"event":"\$identify",/)] });
  });

  it('keeps the batch\'s own token and its first refused event, in order', () => {
    expect(decodeCapture(input(`{"api_key":"phc_abc","batch":[${one},{"event":"b"},{"event":""}]}`))).toMatchObject({ kind: 'refused', reason: 'distinct_id' });
    expect(decodeCapture(input(`[${one},{"event":"b","distinct_id":"d","api_key":"phc_other"}]`))).toMatchObject({ kind: 'refused', reason: 'tokens' });
  });
});

describe('decodeCapture: the request-level fields upstream reads', () => {
  it('keeps a batch\'s historical_migration: true', () => {
    expect(decodeCapture(input(JSON.stringify({ api_key: token, historical_migration: true, batch: [ev] })))).toMatchObject({ kind: 'events', historical: true });
    expect(decodeCapture(input(JSON.stringify({ api_key: token, historical_migration: false, batch: [ev] })))).toMatchObject({ kind: 'events', historical: false });
    expect(decodeCapture(input(JSON.stringify([{ ...ev, api_key: token, historical_migration: true }])))).toMatchObject({ kind: 'events', historical: false });
  });

  it.each([
    ['no event field', `{"$set": {"plan": "pro"}, "distinct_id": "u1", "api_key": "phc_abc"}`, '{"event":"$identify","$set": {"plan": "pro"}, "distinct_id": "u1", "api_key": "phc_abc"}'],
    ['a null event', '{"event": null, "distinct_id": "u1", "api_key": "phc_abc"}', '{"event":"$identify","distinct_id":"u1","api_key":"phc_abc"}'],
  ])('makes an /engage event with %s an $identify (v0_request.rs events)', (_what, body, sent) => {
    expect(decodeCapture(input(body, { path: '/engage' }))).toMatchObject({ kind: 'events', token, events: [sent] });
  });

  it('keeps a named /engage event as sent', () => {
    const body = JSON.stringify({ ...ev, event: '$set', api_key: token });
    expect(decodeCapture(input(body, { path: '/engage' }))).toMatchObject({ kind: 'events', events: [body] });
  });
});

describe('decodeCapture keeps each event as sent', () => {
  const sent = ['{ "event" : "clicked",\n  "uuid":"u-1", "distinct_id": "d", "properties": {"x": "\\u00e9 ]}\\" [{", "n": 1.0}, "api_key":"phc_abc" }', '{"event":"b","distinct_id":7,"properties":{"s":"😀"}}'];
  const batch = `{"batch": [ ${sent.join(' ,\n')} ], "api_key": "phc_abc", "sent_at": "2026-11-25T00:00:00Z"}`;
  it.each([
    ['a batch', batch, {}],
    ['a gzip batch', gzipSync(batch), { contentEncoding: 'gzip' }],
    ['an array', ` [${sent.join(',')}] `, {}],
    ['a form with base64 data on /e', `data=${encodeURIComponent(Buffer.from(batch).toString('base64'))}`, { contentType: form, path: '/e' }],
  ] as const)('%s: byte for byte, with each size in bytes', (_what, body, extra) => {
    const decoded = decodeCapture(input(body, extra));
    expect(decoded).toMatchObject({ kind: 'events', events: sent });
  });

  it.each([
    ['a batch', batch, {}, Buffer.byteLength(batch)],
    ['a gzip batch', gzipSync(batch), { contentEncoding: 'gzip' }, Buffer.byteLength(batch)],
    ['a small gzip batch (inflated into a view of the shared pool)', gzipSync(`[${sent[0]}]`), { contentEncoding: 'gzip' }, Buffer.byteLength(`[${sent[0]}]`)],
  ] as const)('%s: the events are views of one buffer of the decoded text alone, which they hold', (_what, body, extra, length) => {
    const decoded = decodeBytes(input(body, extra));
    if (decoded.kind !== 'events') throw new Error(decoded.kind);
    expect(decoded.held).toBe(length);
    for (const event of decoded.events) expect(event.buffer).toBe(decoded.events[0]?.buffer);
    expect(decoded.events[0]?.buffer.byteLength).toBe(length);
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
