import { describe, expect, it } from 'vitest';
import { computeEtag, createVariant, etagMatches, normalizeEtag } from '../../src/store/snapshot.js';

const definitions = { flags: [], groupTypeMapping: {}, cohorts: {}, parsed: { flags: [] } };

describe('ETags', () => {
  it.each([
    ['W/"abc"', 'abc'],
    ['"abc"', 'abc'],
    ['abc', 'abc'],
    [' W/"abc" ', 'abc'],
    ['"W/abc"', 'W/abc'],
  ])('normalize %j → %j (as upstream strips W/ and quotes)', (given, expected) => expect(normalizeEtag(given)).toBe(expected));

  it.each([
    ['W/"abc"', true],
    ['"abc"', true],
    ['abc', true],
    ['"x", W/"abc"', true],
    ['*', true],
    ['W/"abd"', false],
    ['', false],
  ])('If-None-Match %j matches abc: %s', (header, expected) => expect(etagMatches(header, 'abc')).toBe(expected));

  it('computes W/"<16 hex of sha256>" when upstream sent none', () => {
    // sha256("{}") = 44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a
    expect(computeEtag(Buffer.from('{}'))).toBe('W/"44136fa355b3678a"');
  });
});

describe('createVariant', () => {
  it("serves upstream's ETag verbatim and precomputes the 200 and 304 headers", () => {
    const body = Buffer.from('{"flags":[]}');
    const v = createVariant({ body, definitions, upstreamEtag: 'W/"0123456789abcdef"', fetchedAt: 0, source: 'upstream' });
    expect(v.etag).toBe('W/"0123456789abcdef"');
    expect(v.etagValue).toBe('0123456789abcdef');
    expect(v.headers200).toEqual({
      'content-type': 'application/json',
      'content-length': String(body.length),
      etag: 'W/"0123456789abcdef"',
      'cache-control': 'private, must-revalidate',
      'x-flag-sidecar-source': 'upstream',
    });
    expect(v.headers304).toEqual({ etag: 'W/"0123456789abcdef"', 'cache-control': 'private, must-revalidate', 'x-flag-sidecar-source': 'upstream' });
    expect(v.body).toBe(body);
    expect(Object.isFrozen(v)).toBe(true);
  });

  it('computes the ETag from the body when upstream sent none', () => {
    const v = createVariant({ body: Buffer.from('{}'), definitions, upstreamEtag: null, fetchedAt: 0, source: 'bootstrap' });
    expect(v.etag).toBe('W/"44136fa355b3678a"');
    expect(v.upstreamEtag).toBeNull();
  });
});
