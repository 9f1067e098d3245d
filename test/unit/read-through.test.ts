import { describe, expect, it } from 'vitest';
import { createReadThroughCache, type CachedResponse, type Fetched } from '../../src/store/read-through.js';

const response = (text: string, status = 200): CachedResponse => ({ status, headers: {}, body: Buffer.from(text) });
const answer = (text: string, ttlMs = 1000, status = 200): Fetched => ({ kind: 'answer', response: response(text, status), ttlMs, failed: status >= 500 });

function setup(options: { maxBytes?: number; maxEntries?: number; staleMaxMs?: number } = {}) {
  let clock = 1_000_000;
  const results: string[] = [];
  const cache = createReadThroughCache({
    maxBytes: options.maxBytes ?? 1 << 20,
    maxEntries: options.maxEntries ?? 100,
    staleMaxMs: options.staleMaxMs ?? 60_000,
    now: () => clock,
    observe: (r) => results.push(r),
  });
  return { cache, results, advance: (ms: number) => (clock += ms) };
}

describe('read-through cache', () => {
  it('serves a fresh entry from memory and asks again after its TTL', async () => {
    const { cache, advance } = setup();
    let calls = 0;
    const fetch = async (): Promise<Fetched> => answer(`v${++calls}`);
    expect((await cache.get('k', 1, fetch)).source).toBe('upstream');
    advance(999);
    const hit = await cache.get('k', 1, fetch);
    expect([hit.source, hit.response.body.toString(), hit.ageMs]).toEqual(['cache', 'v1', 999]);
    advance(1);
    expect((await cache.get('k', 1, fetch)).response.body.toString()).toBe('v2');
    expect(calls).toBe(2);
  });

  it('shares one fetch among concurrent misses, uncacheable answers included', async () => {
    const { cache, results } = setup();
    let calls = 0;
    let release: (f: Fetched) => void = () => undefined;
    const fetch = (): Promise<Fetched> => {
      calls += 1;
      return new Promise((resolve) => (release = resolve));
    };
    const waiting = Array.from({ length: 50 }, () => cache.get('k', 1, fetch));
    release(answer('{"detail":"nope"}', 0, 403));
    const served = await Promise.all(waiting);
    expect(calls).toBe(1);
    expect(served.every((s) => s.response.status === 403)).toBe(true);
    expect(results.filter((r) => r === 'coalesced')).toHaveLength(49);
    // Not cached: the next request asks again.
    await cache.get('k', 1, async () => answer('ok'));
    expect(results.at(-1)).toBe('miss');
  });

  it('serves a stale entry when upstream fails, within the stale limit only', async () => {
    const { cache, advance } = setup({ staleMaxMs: 10_000 });
    await cache.get('k', 1, async () => answer('good', 1000));
    advance(5000);
    const failing = async (): Promise<Fetched> => ({ kind: 'failure', error: new Error('down') });
    const stale = await cache.get('k', 1, failing);
    expect([stale.source, stale.response.body.toString(), stale.ageMs]).toEqual(['stale', 'good', 5000]);
    const erroring = await cache.get('k', 1, async () => answer('oops', 0, 500));
    expect(erroring.source).toBe('stale');
    advance(5001);
    await expect(cache.get('k', 1, failing)).rejects.toThrow('down');
    expect((await cache.get('k', 1, async () => answer('oops', 0, 502))).response.status).toBe(502);
  });

  it('drops a project on invalidate, and a fetch started before it neither stores nor is joined', async () => {
    const { cache } = setup();
    await cache.get('b', 2, async () => answer('b1'));
    let release: (f: Fetched) => void = () => undefined;
    const before = cache.get('a', 1, () => new Promise((resolve) => (release = resolve)));
    cache.invalidate(1);
    const after = cache.get('a', 1, async () => answer('a3'));
    release(answer('a2'));
    expect((await before).response.body.toString()).toBe('a2');
    expect((await after).response.body.toString()).toBe('a3');
    expect((await cache.get('a', 1, async () => answer('x'))).response.body.toString()).toBe('a3');
    // Another project is untouched; entries of unknown project (@current) go with any invalidation.
    expect((await cache.get('b', 2, async () => answer('x'))).source).toBe('cache');
    await cache.get('c', null, async () => answer('c1'));
    cache.invalidate(2);
    expect((await cache.get('c', null, async () => answer('c2'))).response.body.toString()).toBe('c2');
  });

  it('does not serve an invalidated entry as stale', async () => {
    const { cache } = setup();
    await cache.get('a', 1, async () => answer('before the write'));
    cache.invalidate(1);
    await expect(cache.get('a', 1, async () => ({ kind: 'failure', error: new Error('down') }))).rejects.toThrow('down');
  });

  it('stays within its byte bound under many distinct keys', async () => {
    const { cache } = setup({ maxBytes: 64 * 1024, maxEntries: 100_000 });
    const body = 'x'.repeat(1000);
    for (let i = 0; i < 2000; i++) await cache.get(`key-${i}`, 1, async () => answer(body));
    const { entries, bytes } = cache.size();
    expect(bytes).toBeLessThanOrEqual(64 * 1024);
    expect(entries).toBeGreaterThan(10);
    expect(entries).toBeLessThan(64);
    // The most recent entries are the ones kept.
    expect((await cache.get('key-1999', 1, async () => answer('refetched'))).source).toBe('cache');
  });

  it.each([1, 2, 3, 50])('keeps at most %i entries, dropping the least recently used', async (max) => {
    const { cache } = setup({ maxEntries: max });
    for (let i = 0; i < max; i++) await cache.get(`k${i}`, 1, async () => answer(`v${i}`));
    cache.set(`k${max - 1}`, 1, response('replaced'), 1000); // a key already held: nothing evicted
    cache.hit('k0', 1); // now the most recently used
    expect(cache.size().entries).toBe(max);
    await cache.get('new', 1, async () => answer('new'));
    expect(cache.size().entries).toBe(max);
    expect(cache.hit('new', 1)?.response.body.toString()).toBe('new');
    if (max > 1) expect(cache.hit('k0', 1)?.response.body.toString()).toBe('v0');
    if (max > 1) expect(cache.hit('k1', 1)).toBeUndefined();
  });

  it('evicts nothing for an answer over its byte bound (which it does not keep)', async () => {
    const { cache } = setup({ maxBytes: 4096, maxEntries: 2 });
    await cache.get('a', 1, async () => answer('a'));
    await cache.get('b', 1, async () => answer('b'));
    await cache.get('huge', 1, async () => answer('x'.repeat(8192)));
    expect(cache.size().entries).toBe(2);
    expect(cache.hit('a', 1)?.response.body.toString()).toBe('a');
    expect(cache.hit('huge', 1)).toBeUndefined();
  });

  it('allocates nothing up front for its entry bound', () => {
    const before = process.memoryUsage().heapUsed;
    const caches = Array.from({ length: 4 }, () => setup({ maxEntries: 1_000_000 }).cache);
    // lru-cache given `max` allocates its arrays for that many entries at once: ~30 MiB per cache here.
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(4 << 20);
    expect(caches.every((c) => c.size().entries === 0)).toBe(true);
  });
});
