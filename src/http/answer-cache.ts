/**
 * Whole `/flags` answers kept for requests sent again byte for byte (issue 19). An SDK evaluating remotely sends the
 * same body for the same person each time it asks (posthog-node's `getFeatureFlag` without local evaluation: every
 * call; a browser: every page load), and an answer decided entirely from the snapshot depends only on that body,
 * the request's path and query, the runtime its headers name, the compiled definitions and the static cohorts'
 * membership. So such an answer's bytes up to its stamp (`"requestId":` included) are kept; a request with the
 * same bytes, checked against the project's current definitions, membership and quota, gets them with a fresh
 * stamp (a new request id, its own `evaluatedAt`) and no parsing, evaluation or serialization.
 *
 * An answer that checked a date filter relative to now (`-30d`) is reused only until the instant its verdict could
 * change (dates.ts clockHorizon). Never kept: answers with any part from upstream or answered absent from memory
 * of upstream's (absent-keys.ts), gzip bodies, a quota-limited project's. Bounded by
 * bytes (least recently used go first); a body is kept from its second sight on (SeenOnce), so a stream of one-off
 * persons never fills it or churns it.
 */
import { LRUCache } from 'lru-cache';
import type { CompiledDefinitions } from '../eval/compile.js';
import type { FlagsQuery } from '../eval/flags-response.js';
import { SeenOnce } from '../eval/seen-once.js';

/** One kept answer and what it was decided from. */
export interface KeptAnswer {
  readonly path: string;
  readonly rawQuery: string;
  /** The project token the body names, and the project it named then. */
  readonly token: string;
  readonly projectId: number;
  /**
   * The compiled definitions it was decided from, and the static cohorts' membership (swapped whole on a refresh;
   * null: none), both by identity, held weakly: an answer that no longer holds never keeps a replaced snapshot's
   * definitions (their hash memo is up to 2 MiB) or members alive.
   */
  readonly defs: WeakRef<CompiledDefinitions>;
  readonly membership: WeakRef<object> | null;
  /**
   * The runtime the request's headers gave (User-Agent, browser headers) when the body named none and some flag
   * is limited to a runtime; undefined: the headers did not matter.
   */
  readonly headerRuntime: FlagsQuery['runtime'] | undefined;
  /** The answer up to its stamp (own memory, never a slab's). */
  readonly head: Buffer;
  /** The stamp ends with the slim-events opt-in (v2 bodies of a project that opted in). */
  readonly minimal: boolean;
  /** Flags decided in it (the evaluation metrics count them on every reuse). */
  readonly decided: number;
  /**
   * When it was evaluated, and the last instant it holds (a filter relative to now may decide otherwise after;
   * Infinity: none was checked). Before its evaluation (the clock stepped back) it is not known to hold.
   */
  readonly validFrom: number;
  readonly validUntil: number;
}

/** Bodies longer than this are never kept (each miss hashes its key). */
export const maxKeptBodyBytes = 16 * 1024;
/** Per kept answer besides its head and key: the entry, its fields, lru-cache's bookkeeping (an estimate). */
const entryOverhead = 400;

/** The kept answers, by request body (its bytes as a latin1 string). */
export class AnswerCache {
  private readonly kept: LRUCache<string, KeptAnswer>;
  private readonly seen = new SeenOnce(4096);

  constructor(readonly maxBytes: number) {
    this.kept = new LRUCache<string, KeptAnswer>({
      maxSize: maxBytes,
      // One answer may take a quarter of the bound at most: one project's large answers never hold all of it.
      maxEntrySize: Math.max(1, Math.floor(maxBytes / 4)),
      sizeCalculation: (answer, key) => answer.head.length + key.length + answer.path.length + answer.rawQuery.length + entryOverhead,
    });
  }

  /** The answer kept for `key`, if any (checking it still holds is the caller's). */
  get(key: string): KeptAnswer | undefined {
    return this.kept.get(key);
  }

  /** Keep `answer` for `key` if this key was met before (or is kept already, then replaced). */
  offer(key: string, answer: () => KeptAnswer): void {
    if (!this.kept.has(key) && !this.seen.again(key)) return;
    this.kept.set(key, answer());
  }

  /** Drop a kept answer that no longer holds. */
  drop(key: string): void {
    this.kept.delete(key);
  }

  get size(): number {
    return this.kept.size;
  }

  get bytes(): number {
    return this.kept.calculatedSize;
  }
}
