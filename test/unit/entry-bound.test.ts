import { LRUCache } from 'lru-cache';
import { describe, expect, it } from 'vitest';
import { entryBound } from '../../src/store/entry-bound.js';

describe('entryBound', () => {
  it.each([2, 3, 50])('keeps at most %i entries, dropping the least recently used', (max) => {
    const cache = new LRUCache<string, number>(entryBound(max));
    for (let i = 0; i < max; i++) cache.set(`k${i}`, i);
    cache.get('k0'); // now the most recently used
    cache.set('new', -1);
    expect(cache.size).toBe(max);
    expect(cache.has('k0')).toBe(true);
    expect(cache.has('new')).toBe(true);
    expect(cache.has('k1')).toBe(false);
  });
});
