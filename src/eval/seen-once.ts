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
    return this.againHash(h ^ (h >>> 15));
  }

  /** `again` for a key known by a 32-bit hash of its own (bytesDigest's, say), its low bits well mixed. */
  againHash(h: number): boolean {
    const at = h & (this.slots - 1);
    if (this.recent[at] === h) return true;
    this.recent[at] = h;
    return false;
  }
}

/**
 * A 32-bit hash of `bytes`, four at a time (murmur's multiply and shifts; not for anything adversarial: a collision
 * only makes a cache compare bytes it does not hold, or admit a key a sight early). Read through a DataView: ~14
 * instructions a byte, where reading the bytes one by one cost ~18, and a latin1 string of them hashed as `again`
 * hashes its keys ~26 a character, plus V8's own hash of it for a Map (~11).
 */
export function bytesDigest(bytes: Uint8Array): number {
  const n = bytes.length;
  const words = new DataView(bytes.buffer, bytes.byteOffset, n);
  let h = n ^ 0x9747b28c;
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    let w = Math.imul(words.getInt32(i, true), 0x5bd1e995);
    w ^= w >>> 24;
    h = Math.imul(h, 0x5bd1e995) ^ Math.imul(w, 0x5bd1e995);
  }
  for (; i < n; i++) h = Math.imul(h ^ (bytes[i] as number), 0x5bd1e995);
  h ^= h >>> 13;
  h = Math.imul(h, 0x5bd1e995);
  return h ^ (h >>> 15);
}
