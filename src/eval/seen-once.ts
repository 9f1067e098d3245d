/**
 * Admission by second sight, for the caches a stream of one-off keys would churn (hash-memo.ts's bucketing values,
 * http/answer-cache.ts's request bodies): `again(key)` says whether `key` was met before, remembering only a 32-bit
 * hash of each key in a fixed table, so that no one-off key is held (held strings are promoted to the old
 * generation) and a cache filled only from second sights never sees one. Two keys with the same hash (or the same
 * place, the later one having overwritten it) only let the second in early or late.
 */
export class SeenOnce {
  private readonly recent: Int32Array;

  /** `slots`: the table's places (a power of two). */
  constructor(private readonly slots = 4096) {
    this.recent = new Int32Array(slots);
  }

  /** Whether `key` was met before and its place still holds its hash; its hash is put there now if not. */
  again(key: string): boolean {
    let h = key.length;
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x5bd1e995);
    h ^= h >>> 15;
    const at = h & (this.slots - 1);
    if (this.recent[at] === h) return true;
    this.recent[at] = h;
    return false;
  }
}
