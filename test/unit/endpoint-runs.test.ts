/**
 * The pure parts of the endpoint run cache: which requests share an entry, which go upstream uncached, and
 * how long an answer stays fresh.
 */
import { describe, expect, it } from 'vitest';
import { canonicalJson, planRun } from '../../src/http/routes/endpoint-run-plan.js';
import { runFreshness } from '../../src/http/routes/endpoint-run-upstream.js';

describe('canonicalJson', () => {
  it('sorts keys at every level and keeps arrays in order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson(undefined)).toBe('null');
  });
});

describe('planRun', () => {
  const keyOf = (body: unknown, version?: string): string | null => {
    const plan = planRun('daily', body, version);
    return plan.kind === 'uncached' ? null : `${plan.kind}:${plan.key}`;
  };

  it.each([
    ['variables in another key order', { variables: { a: 1, b: 2 } }, { variables: { b: 2, a: 1 } }],
    ['client_query_id is not part of the key', { client_query_id: 'x' }, { client_query_id: 'y' }],
    ['GET with ?version equals POST with version', null, { version: 3 }],
  ])('same entry: %s', (_name, a, b) => {
    const version = a === null ? '3' : undefined;
    expect(keyOf(a, version)).not.toBeNull();
    expect(keyOf(a, version)).toBe(keyOf(b));
  });

  it.each([
    ['different variables', { variables: { a: 1 } }, { variables: { a: 2 } }],
    ['a version against latest', { version: 2 }, {}],
    ['debug', { debug: true }, {}],
    ['filters_override', { filters_override: { date_from: '-7d' } }, {}],
    ['query_override', { query_override: { interval: 'week' } }, {}],
    // Newer upstreams answer 400 to `blocking` (EndpointRefreshMode): a run without `refresh` must not answer it.
    ['an explicit refresh: blocking', { refresh: 'blocking' }, {}],
    ['blocking and async_except_on_cache_miss', { refresh: 'blocking' }, { refresh: 'async_except_on_cache_miss' }],
  ])('different entries: %s', (_name, a, b) => {
    expect(keyOf(a)).not.toBeNull();
    expect(keyOf(b)).not.toBeNull();
    expect(keyOf(a)).not.toBe(keyOf(b));
  });

  it.each([
    ['an unknown body key', { foo: 1 }, undefined],
    ['a non-blocking refresh', { refresh: 'async' }, undefined],
    ['refresh null', { refresh: null }, undefined],
    ['a version that is not an integer', { version: '2' }, undefined],
    ['?version that is not digits', {}, 'abc'],
    ['a body that is not an object', [1], undefined],
    ['debug that is not a boolean', { debug: 'yes' }, undefined],
  ])('upstream judges %s (uncached)', (_name, body, version) => {
    expect(planRun('daily', body, version)).toEqual({ kind: 'uncached' });
  });

  it('force_blocking replaces the same entry a blocking run reads', () => {
    const force = planRun('daily', { refresh: 'force_blocking', variables: { a: 1 } }, undefined);
    const blocking = planRun('daily', { variables: { a: 1 } }, undefined);
    expect(force.kind).toBe('force');
    expect(force.kind !== 'uncached' && blocking.kind !== 'uncached' && force.key === blocking.key).toBe(true);
  });

  it('the body version wins over ?version, as upstream reads it', () => {
    expect(keyOf({ version: 2 }, '5')).toBe(keyOf({ version: 2 }));
  });
});

describe('runFreshness', () => {
  const at = Date.parse('2026-11-22T10:00:00Z');
  const body = (fields: Record<string, unknown>) => Buffer.from(JSON.stringify({ results: [[1]], ...fields }));

  it('lasts until upstream\'s cache_target_age', () => {
    expect(runFreshness(body({ cache_target_age: '2026-11-22T10:10:00.000000Z' }), at, 60_000, 86_400_000)).toBe(600_000);
  });
  it('falls back when upstream gives none or an unreadable one, and never goes negative or past the bound', () => {
    expect(runFreshness(body({}), at, 60_000, 86_400_000)).toBe(60_000);
    expect(runFreshness(body({ cache_target_age: 'soon' }), at, 60_000, 86_400_000)).toBe(60_000);
    expect(runFreshness(body({ cache_target_age: '2026-11-22T09:00:00Z' }), at, 60_000, 86_400_000)).toBe(0);
    expect(runFreshness(body({ cache_target_age: '2027-11-22T09:00:00Z' }), at, 60_000, 86_400_000)).toBe(86_400_000);
  });
  it('finds the field after large results', () => {
    const rows = Array.from({ length: 20_000 }, (_, i) => [i, 'x'.repeat(10)]);
    expect(runFreshness(Buffer.from(JSON.stringify({ results: rows, cache_target_age: '2026-11-22T10:01:00Z' })), at, 5, 86_400_000)).toBe(60_000);
  });
});
