/**
 * Bucketing hashes kept across requests (issue 19: "hash each (flag, distinct id) once"). A flag's rollout and
 * variant hashes depend only on its key and the bucketing value (distinct id, device id or group key), so a
 * snapshot's compiled definitions keep them per bucketing value: apps and SDKs ask for the same person again and
 * again (every page, every poll), and for those the SHA-1 work of a request, a quarter of an in-process answer at
 * 30 flags, is done once. Bounded: at most `memoBytes` of hashes per snapshot (one value's past ~130,000 flags; a
 * new snapshot starts empty), the oldest value dropped first; values longer than `maxValueLength` are not kept.
 */

/** The hashes kept per snapshot, at most (each value: two doubles per flag). */
export const memoBytes = 2 * 1024 * 1024;
/** A bucketing value longer than this is hashed for its request only (its key would cost more than its hashes). */
export const maxValueLength = 200;
/** Per value, besides its hashes: the Map entry, the array's header and its key (an estimate). */
const entryOverhead = 160;

/**
 * Bucketing hashes per value, in a Float64Array each: at 0 its tenancy (a number no other array of this memo has
 * had: an array is handed on to a new value when its own is dropped), at 1 + 2·slot the rollout hash of the flag
 * with that hashSlot, at 2 + 2·slot its variant hash (NaN: not computed yet).
 */
export class BucketHashMemo {
  private readonly entries = new Map<string, Float64Array>();
  /**
   * The kept values in a ring, in the order they came: `next` is the oldest once it is full. (A Map's own order
   * is no queue: its first key is found by walking past the slots of the keys deleted before it.)
   */
  private readonly ring: string[] = [];
  private next = 0;
  private tenancies = 0;
  readonly maxEntries: number;

  /** `bytes`: the bound (tests give less). */
  constructor(
    private readonly slots: number,
    bytes = memoBytes,
  ) {
    this.maxEntries = Math.max(1, Math.floor(bytes / (16 * slots + entryOverhead)));
  }

  /**
   * The hashes of `value`: those kept, else an empty array (kept for it unless the value is too long). The array
   * is `value`'s while its tenancy (at 0) stays what it was when this returned it.
   */
  of(value: string): Float64Array {
    const kept = this.entries.get(value);
    if (kept !== undefined) return kept;
    if (value.length > maxValueLength) return this.empty(new Float64Array(1 + 2 * this.slots));
    let hashes: Float64Array;
    // First in, first out: a hit costs one lookup and no reordering; a value dropped while in use is hashed again.
    if (this.ring.length < this.maxEntries) {
      hashes = this.empty(new Float64Array(1 + 2 * this.slots));
      this.ring.push(value);
    } else {
      // The oldest value's array is handed on: once full, the memo allocates nothing (at 1,000 flags a new 16 KB
      // array a request kept the old generation's collector busy, and its write barriers on).
      const oldest = this.ring[this.next] as string;
      hashes = this.empty(this.entries.get(oldest) as Float64Array);
      this.entries.delete(oldest);
      this.ring[this.next] = value;
      this.next = this.next + 1 === this.maxEntries ? 0 : this.next + 1;
    }
    this.entries.set(value, hashes);
    return hashes;
  }

  /** `hashes` emptied, under a new tenancy. */
  private empty(hashes: Float64Array): Float64Array {
    hashes.fill(Number.NaN);
    hashes[0] = ++this.tenancies;
    return hashes;
  }

  /** How many values are kept (tests, metrics). */
  get size(): number {
    return this.entries.size;
  }
}
