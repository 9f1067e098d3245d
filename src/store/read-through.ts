/**
 * The read-through cache of upstream reads (docs/architecture.md#a-request), on lru-cache bounded by total bytes and by
 * entry count. Callers key entries by everything that decides the answer (principal digest, method, path,
 * canonical query), so no entry is ever served to a key other than the one upstream answered.
 *
 * - A fresh entry (younger than the TTL the fetcher chose for it) is served from memory.
 * - Concurrent misses for one key share one upstream request; everyone waiting gets its answer, cacheable or not.
 * - Stale-if-error: when the fetch fails (no answer, or upstream 5xx), an entry up to `staleMaxMs` old is served
 *   instead, marked stale.
 * - `invalidate(project)` drops a project's entries at once (a generation bump: older entries never match again,
 *   and a fetch started before the bump neither stores its answer nor is joined by requests made after it).
 *
 * Expiry is ours rather than lru-cache's TTL, because an expired entry must stay around for stale-if-error; the
 * byte bound keeps that memory bounded. (lru-cache's own fetchMethod is not used: an uncacheable answer, such as
 * a 403 or 500 passed through, must still reach every coalesced waiter, and staleness needs an age limit of its own.)
 */
import { LRUCache } from 'lru-cache';

/** An upstream answer as kept and served. */
export interface CachedResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

/** What a fetch produced: an answer and how long it may be served (0: not cached), or a failure. */
export type Fetched =
  | {
      readonly kind: 'answer';
      readonly response: CachedResponse;
      readonly ttlMs: number;
      readonly failed?: boolean;
      /** When the answer was fetched, if not now: one from another cache (served as `cache`, with its age). */
      readonly fetchedAt?: number;
    }
  | { readonly kind: 'failure'; readonly error: Error };

/** What a lookup served, and from where. */
export interface Served {
  readonly response: CachedResponse;
  /** upstream: fetched for this request (or a request it joined); cache: fresh entry; stale: expired entry, upstream failing. */
  readonly source: 'upstream' | 'cache' | 'stale';
  /** Milliseconds since the response was fetched. */
  readonly ageMs: number;
}

interface Entry {
  readonly response: CachedResponse;
  readonly fetchedAt: number;
  readonly expiresAt: number;
  readonly generation: number;
  /** The Served for a hit at `at`; the object is reused while the age in whole seconds stays the same. */
  served(at: number): Served;
}

/** An entry whose hits share one Served object per second of age (so callers can cache per object). */
function newEntry(response: CachedResponse, fetchedAt: number, expiresAt: number, generation: number): Entry {
  let last: Served | null = null;
  return {
    response,
    fetchedAt,
    expiresAt,
    generation,
    served(at: number): Served {
      const ageMs = at - fetchedAt;
      if (last === null || Math.floor(last.ageMs / 1000) !== Math.floor(ageMs / 1000)) last = { response, source: 'cache', ageMs };
      return last;
    },
  };
}

/** Settings and dependencies of createReadThroughCache. */
export interface ReadThroughOptions {
  readonly maxBytes: number;
  readonly maxEntries: number;
  readonly staleMaxMs: number;
  readonly now: () => number;
  /** Called for each lookup with its result. */
  readonly observe?: (result: 'hit' | 'miss' | 'coalesced' | 'stale') => void;
}

/** Rough fixed cost of an entry beyond its body (key, headers, bookkeeping), counted against the byte bound. */
const entryOverhead = 512;

/** Create the cache. */
export function createReadThroughCache(options: ReadThroughOptions) {
  const { now } = options;
  const sizeOf = (entry: Entry, key: string): number => entry.response.body.length + key.length * 2 + entryOverhead;
  // The entry count is bounded here, not by lru-cache's `max`: given `max`, lru-cache allocates its arrays for
  // that many entries in its constructor (~300 KiB for 10,000, two caches), held by caches that mostly stay empty.
  const entries = new LRUCache<string, Entry>({ maxSize: options.maxBytes, sizeCalculation: sizeOf });
  /** Store an entry; a new key in a full cache first evicts the least recently used entry, as `max` would. */
  const store = (key: string, entry: Entry): void => {
    // An entry over the byte bound is refused by lru-cache (which drops the key's old entry): evict nothing for it.
    if (entries.size >= options.maxEntries && !entries.has(key) && sizeOf(entry, key) <= options.maxBytes) entries.pop();
    entries.set(key, entry);
  };
  const inFlight = new Map<string, Promise<Served | Error>>();
  // Generation per project; `null` (a request whose project is not known here, e.g. @current forwarded) follows
  // a global generation that every invalidation bumps.
  const generations = new Map<number, number>();
  let globalGeneration = 0;
  const generationOf = (project: number | null): number =>
    project === null ? globalGeneration : (generations.get(project) ?? 0);

  async function load(key: string, generation: number, project: number | null, fetch: () => Promise<Fetched>): Promise<Served | Error> {
    const fetched = await fetch();
    const at = now();
    const current = entries.get(key);
    const usable = current !== undefined && current.generation === generation ? current : undefined;
    const failed = fetched.kind === 'failure' || fetched.failed === true;
    if (failed && usable !== undefined && at - usable.fetchedAt <= options.staleMaxMs) {
      options.observe?.('stale');
      return { response: usable.response, source: 'stale', ageMs: at - usable.fetchedAt };
    }
    if (fetched.kind === 'failure') return fetched.error;
    const fetchedAt = Math.min(fetched.fetchedAt ?? at, at);
    if (fetched.ttlMs > 0 && generationOf(project) === generation) {
      store(key, newEntry(fetched.response, fetchedAt, at + fetched.ttlMs, generation));
    }
    return { response: fetched.response, source: fetched.fetchedAt === undefined ? 'upstream' : 'cache', ageMs: at - fetchedAt };
  }

  /** A fresh entry's answer for `key` at `at` (now), or undefined (then get() decides); nothing is fetched. */
  function hit(key: string, project: number | null, at = now()): Served | undefined {
    const entry = entries.get(key);
    if (entry === undefined || entry.generation !== generationOf(project) || at >= entry.expiresAt) return undefined;
    options.observe?.('hit');
    return entry.served(at);
  }

  return {
    /**
     * The answer for `key`: a fresh entry, or the result of `fetch` (shared with concurrent callers of the same
     * key); synchronous for a fresh entry. Rejects with the fetch's error when there is neither an answer nor
     * a usable stale entry.
     */
    get(key: string, project: number | null, fetch: () => Promise<Fetched>): Served | Promise<Served> {
      const fresh = hit(key, project);
      if (fresh !== undefined) return fresh;
      const generation = generationOf(project);
      const entry = entries.peek(key);
      if (entry !== undefined && entry.generation !== generation) entries.delete(key);
      const flightKey = `${generation}\u0000${key}`;
      let running = inFlight.get(flightKey);
      if (running === undefined) {
        options.observe?.('miss');
        running = load(key, generation, project, fetch).finally(() => inFlight.delete(flightKey));
        inFlight.set(flightKey, running);
      } else options.observe?.('coalesced');
      return running.then((result) => {
        if (result instanceof Error) throw result;
        return result;
      });
    },
    hit,
    /** Store an answer fetched outside get() (a forced refresh), replacing what the key held. */
    set(key: string, project: number | null, response: CachedResponse, ttlMs: number): void {
      const at = now();
      if (ttlMs > 0) store(key, newEntry(response, at, at + ttlMs, generationOf(project)));
      else entries.delete(key);
    },
    /** Drop every entry of `project` (and every entry whose project is unknown). */
    invalidate(project: number): void {
      generations.set(project, (generations.get(project) ?? 0) + 1);
      globalGeneration += 1;
    },
    /** Entries and bytes held, for metrics. */
    size: (): { entries: number; bytes: number } => ({ entries: entries.size, bytes: entries.calculatedSize }),
  };
}

/** The cache handle. */
export type ReadThroughCache = ReturnType<typeof createReadThroughCache>;
