/**
 * The pure parts of fleet-wide invalidation and shared endpoint runs: which resource a write changed, the
 * invalidation message codec (untrusted input from Redis), the shared run entry codec and its checks, and a
 * read-through answer taken from another cache keeping its age.
 */
import { describe, expect, it } from 'vitest';
import { decodeInvalidation, encodeInvalidation, maxInvalidationBytes } from '../../src/fleet/invalidation-message.js';
import { decodeSharedRun, encodeSharedRun, maxSharedRunBytes } from '../../src/fleet/shared-run-entry.js';
import { endpointOf, isWrittenResource, writtenResource } from '../../src/http/routes/write-resource.js';
import { createReadThroughCache } from '../../src/store/read-through.js';

describe('written resource', () => {
  it.each([
    ['flag_update', '7', 'flags'],
    ['flag_create', undefined, 'flags'],
    ['endpoint_update', 'daily_v2-x', 'endpoint:daily_v2-x'],
    ['endpoint_delete', 'daily', 'endpoint:daily'],
    ['endpoint_create', undefined, 'reads'],
    ['endpoint_update', '9lives', 'reads'],
    ['endpoint_update', 'a'.repeat(129), 'reads'],
    ['endpoint_update', 'with space', 'reads'],
  ] as const)('%s %s → %s', (route, name, resource) => {
    expect(writtenResource(route, name)).toBe(resource);
    expect(isWrittenResource(resource)).toBe(true);
  });

  it.each(['', 'everything', 'endpoint:', 'endpoint:9x', 'endpoint:a b', `endpoint:${'a'.repeat(129)}`, 7, null])('refuses %j', (value) => {
    expect(isWrittenResource(value)).toBe(false);
  });

  it('names the endpoint of a resource', () => {
    expect([endpointOf('endpoint:daily'), endpointOf('flags'), endpointOf('reads')]).toEqual(['daily', null, null]);
  });
});

describe('invalidation message', () => {
  const known = (id: number): boolean => id === 1;
  const decode = (text: string) => decodeInvalidation(Buffer.from(text), known);

  it('round-trips', () => {
    const message = { project: 1, resource: 'endpoint:daily', origin: 'pod-a/12/0a0b0c0d' } as const;
    expect(decode(encodeInvalidation(message))).toEqual({ ok: true, message });
  });

  it.each([
    ['not json', 'shape'],
    ['[]', 'shape'],
    ['null', 'shape'],
    ['{"v":2,"project":1,"resource":"flags","origin":"x"}', 'shape'],
    ['{"v":1,"project":"1","resource":"flags","origin":"x"}', 'shape'],
    ['{"v":1,"project":1.5,"resource":"flags","origin":"x"}', 'shape'],
    ['{"v":1,"project":-1,"resource":"flags","origin":"x"}', 'shape'],
    ['{"v":1,"project":1,"resource":"all","origin":"x"}', 'shape'],
    ['{"v":1,"project":1,"resource":"flags","origin":""}', 'shape'],
    [`{"v":1,"project":1,"resource":"flags","origin":"${'x'.repeat(301)}"}`, 'shape'],
    ['{"v":1,"project":1,"resource":"flags","origin":"x","extra":1}', 'shape'],
    ['{"v":1,"project":2,"resource":"flags","origin":"x"}', 'unknown_project'],
    [`{"v":1,"project":1,"resource":"flags","origin":"x","pad":"${'x'.repeat(maxInvalidationBytes)}"}`, 'size'],
  ])('refuses %s', (text, reason) => {
    expect(decode(text)).toEqual({ ok: false, reason });
  });
});

describe('shared run entry', () => {
  const now = 1_700_000_000_000;
  const response = { status: 200, headers: { 'content-type': 'application/json', 'x-posthog-request-id': 'r1' }, body: Buffer.from('{"results":[[1]]}') };
  const run = { response, fetchedAt: now - 1000, expiresAt: now + 60_000 };
  const entry = (header: Record<string, unknown>, body = '{"results":[]}'): Buffer =>
    Buffer.from(`${JSON.stringify({ v: 1, gen: 'g1', status: 200, type: 'application/json', fetched: now, expires: now + 1000, ...header })}\n${body}`);

  it('round-trips, replaying only the content type, under its generation', () => {
    const decoded = decodeSharedRun(encodeSharedRun(run, 'g1') as Buffer, now);
    expect(decoded?.gen).toBe('g1');
    expect(decoded?.run).toEqual({ ...run, response: { ...response, headers: { 'content-type': 'application/json', 'content-length': '17' } } });
  });

  it('does not share a body over the bound', () => {
    expect(encodeSharedRun({ ...run, response: { ...response, body: Buffer.alloc(maxSharedRunBytes + 1, 32) } }, 'g')).toBeNull();
  });

  it('keeps a fetch time from the future at now', () => {
    expect(decodeSharedRun(entry({ fetched: now + 5000, expires: now + 6000 }), now)?.run.fetchedAt).toBe(now);
  });

  it.each([
    ['no header line', Buffer.from('{"v":1}')],
    ['a header that is not JSON', Buffer.from('v1\n{}')],
    ['a header too long', Buffer.from(`${JSON.stringify({ v: 1, pad: 'x'.repeat(2000) })}\n{}`)],
    ['another version', entry({ v: 2 })],
    ['a generation that is not a short string', entry({ gen: 'g'.repeat(65) })],
    ['a status outside 2xx', entry({ status: 500 })],
    ['a status that is not a number', entry({ status: '200' })],
    ['a content type carrying a header', entry({ type: 'text/html\r\nset-cookie: a=b' })],
    ['a content type that is no media type', entry({ type: 'json' })],
    ['expired', entry({ expires: now })],
    ['fresh for over a day', entry({ fetched: now, expires: now + 25 * 3_600_000 })],
    ['expiring before it was fetched', entry({ fetched: now + 2000, expires: now + 1000 })],
    ['times that are not numbers', entry({ fetched: 'now' })],
    ['a body that is not JSON', entry({}, '<html>')],
    ['a body over the bound', entry({}, `"${'x'.repeat(maxSharedRunBytes)}"`)],
  ])('refuses %s', (_what, raw) => {
    expect(decodeSharedRun(raw, now)).toBeNull();
  });
});

describe('read-through answer from another cache', () => {
  it('is served as cache with its age, and kept with that age', async () => {
    let clock = 10_000;
    const cache = createReadThroughCache({ maxBytes: 1 << 20, maxEntries: 10, staleMaxMs: 60_000, now: () => clock });
    const response = { status: 200, headers: {}, body: Buffer.from('{}') };
    const first = await cache.get('k', 1, async () => ({ kind: 'answer', response, ttlMs: 5000, fetchedAt: 7_000 }));
    expect([first.source, first.ageMs]).toEqual(['cache', 3000]);
    clock += 1000;
    const hit = await cache.get('k', 1, async () => ({ kind: 'failure', error: new Error('not asked') }));
    expect([hit.source, hit.ageMs]).toEqual(['cache', 4000]);
  });
});
