/**
 * Bucketing hashes kept across requests (issue 19: "hash each (flag, distinct id) once"). A flag's rollout and
 * variant hashes depend only on its key and the bucketing value (distinct id, device id or group key), so a
 * snapshot's compiled definitions keep them per bucketing value: apps and SDKs ask for the same person again and
 * again (every page, every poll), and for those the SHA-1 work of a request, a quarter of an in-process answer at
 * 30 flags, is done once. Bounded: at most `memoBytes` per snapshot (one value's past ~130,000 flags; a
 * new snapshot starts empty), the oldest value dropped first; a value is kept from its second request on, and not
 * when longer than `maxValueLength`.
 */
import { SeenOnce } from './seen-once.js';

/** The memory a snapshot's memo holds, at most (each value: two doubles per flag and one, and its key). */
export const memoBytes = 2 * 1024 * 1024;
/** A bucketing value longer than this is hashed for its request only (its key would cost more than its hashes). */
export const maxValueLength = 200;
/** Per value, besides its row: its key, its Map entry and its place in the ring (an estimate). */
const entryOverhead = 160;
/** Values met once are remembered by their hashes in a table of this many places (a power of two). */
const recentSlots = 4096;
/** Rows are held in pages of about this size, made as the memo fills. */
const pageBytes = 64 * 1024;

/**
 * Bucketing hashes per value, one row each in pages of Float64Arrays (one allocation per page, not per value). A
 * row is at `base` of `page` after `find`: at `base` its tenancy (a number no other row of this memo has had: a row
 * is handed on to a new value when its own is dropped), at base + 1 + 2·slot the rollout hash of the flag with that
 * hashSlot, at base + 2 + 2·slot its variant hash (NaN: not computed yet).
 */
export class BucketHashMemo {
  /** Each kept value's row, numbered from 0 (row r is at (r % rowsPerPage) · rowSize of page r / rowsPerPage). */
  private readonly rows = new Map<string, number>();
  /**
   * The kept values in a ring, by row: `next` is the oldest once it is full. (A Map's own order is no queue: its
   * first key is found by walking past the slots of the keys deleted before it.)
   */
  private readonly ring: string[] = [];
  private next = 0;
  private readonly pages: Float64Array[] = [];
  /**
   * Values met once (in a loose row), by hash. A value is kept from its second request on: a stream of one-off
   * values (a new person each request) then never touches the Map, whose deletions and insertions at that rate
   * rehashed it over and over (~14 MiB more RSS under such load at 30 flags), and no such value is held past the
   * next two (held strings were promoted to the old generation: ~5 MiB).
   */
  private readonly recent = new SeenOnce(recentSlots);
  /** Where values not kept (met once, or too long) are hashed: two rows, and the value each is for. */
  private readonly loose: readonly Float64Array[];
  private readonly looseValues: Array<string | null> = [null, null];
  private lastLoose = 0;
  private tenancies = 0;
  readonly rowSize: number;
  readonly rowsPerPage: number;
  readonly maxEntries: number;
  /** The row `find` gave: its page and where it starts. */
  page: Float64Array;
  base = 0;

  /** `bytes`: the bound (tests give less). */
  constructor(slots: number, bytes = memoBytes) {
    this.rowSize = 1 + 2 * slots;
    this.maxEntries = Math.max(1, Math.floor(bytes / (8 * this.rowSize + entryOverhead)));
    this.rowsPerPage = Math.min(this.maxEntries, Math.max(1, Math.floor(pageBytes / (8 * this.rowSize))));
    this.loose = [new Float64Array(this.rowSize), new Float64Array(this.rowSize)];
    this.page = this.loose[0] as Float64Array;
  }

  /**
   * Point `page` and `base` at `value`'s row: the one kept, else its loose row, else an empty one (kept for it
   * when it was met before, else a loose row). The row is `value`'s while its tenancy (at `base`) stays what it was
   * when this returned.
   */
  find(value: string): void {
    let row = this.rows.get(value);
    if (row === undefined) {
      // A value not kept is hashed in one of two loose rows, kept for it until another takes that row: a request's
      // person and group flags switch between two values, and each would otherwise empty the other's row.
      for (let k = 0; k < 2; k++) {
        if (this.looseValues[k] === value) {
          this.page = this.loose[k] as Float64Array;
          this.base = 0;
          this.lastLoose = k;
          return;
        }
      }
      if (value.length > maxValueLength || !this.recent.again(value)) {
        const k = 1 - this.lastLoose;
        this.looseValues[k] = value;
        this.lastLoose = k;
        this.page = this.loose[k] as Float64Array;
        this.base = 0;
        this.empty();
        return;
      }
      // First in, first out: a hit costs one lookup and no reordering; a value dropped while in use is hashed again.
      if (this.ring.length < this.maxEntries) {
        row = this.ring.length;
        this.ring.push(value);
      } else {
        // The oldest value's row is handed on: once full, the memo allocates nothing.
        row = this.next;
        this.rows.delete(this.ring[row] as string);
        this.ring[row] = value;
        this.next = row + 1 === this.maxEntries ? 0 : row + 1;
      }
      this.rows.set(value, row);
      this.locate(row);
      this.empty();
      return;
    }
    this.locate(row);
  }

  /** How many values are kept (tests, metrics). */
  get size(): number {
    return this.rows.size;
  }

  private locate(row: number): void {
    const index = Math.floor(row / this.rowsPerPage);
    let page = this.pages[index];
    if (page === undefined) {
      const rows = Math.min(this.rowsPerPage, this.maxEntries - index * this.rowsPerPage);
      page = new Float64Array(rows * this.rowSize);
      this.pages[index] = page;
    }
    this.page = page;
    this.base = (row - index * this.rowsPerPage) * this.rowSize;
  }

  /** The row found emptied, under a new tenancy. */
  private empty(): void {
    this.page.fill(Number.NaN, this.base + 1, this.base + this.rowSize);
    this.page[this.base] = ++this.tenancies;
  }
}
