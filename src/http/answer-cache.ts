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
 *
 * Bodies are looked up by a digest of their bytes (bytesDigest), then compared byte for byte; a body is never made a
 * string. A new person each request, the usual case for a server SDK, so pays the digest (~4.6k instructions for
 * a 330-byte body) where making the body a latin1 string and hashing it, for the lookup and again for the
 * admission, cost ~14k: 232k → 222k instructions a 30-flag request (docs/benchmarks.md as of c3f48ec, issue 19, i19-digest).
 */
import { LRUCache } from 'lru-cache';
import type { CompiledDefinitions } from '../eval/compile.js';
import type { FlagsQuery } from '../eval/flags-response.js';
import { SeenOnce } from '../eval/seen-once.js';

export { bytesDigest } from '../eval/seen-once.js';

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

/** Bodies longer than this are never kept (each miss hashes its bytes). */
export const maxKeptBodyBytes = 16 * 1024;
/** Per kept answer besides its head and body: the entry, its fields, lru-cache's bookkeeping (an estimate). */
const entryOverhead = 400;

/** A kept answer and the body it is kept for (its own copy). */
interface Held {
  readonly answer: KeptAnswer;
  readonly body: Buffer;
}

/**
 * The kept answers, by the digest of their request bodies (bytesDigest), each with its body's bytes: an answer is
 * given only to the very bytes it was kept for. Two bodies with one digest share a place, the later one replacing
 * the earlier.
 */
export class AnswerCache {
  private readonly kept: LRUCache<number, Held>;
  private readonly seen = new SeenOnce(4096);

  constructor(readonly maxBytes: number) {
    this.kept = new LRUCache<number, Held>({
      maxSize: maxBytes,
      // One answer may take a quarter of the bound at most: one project's large answers never hold all of it.
      maxEntrySize: Math.max(1, Math.floor(maxBytes / 4)),
      sizeCalculation: ({ answer, body }) => answer.head.length + body.length + answer.path.length + answer.rawQuery.length + entryOverhead,
    });
  }

  /** The answer kept for the body `raw`, whose digest is `digest` (checking it still holds is the caller's). */
  get(digest: number, raw: Uint8Array): KeptAnswer | undefined {
    const held = this.kept.get(digest);
    return held !== undefined && held.body.equals(raw) ? held.answer : undefined;
  }

  /**
   * Keep `answer` for the body `raw` (digest `digest`) if it was met before (or is kept already, then replaced). The
   * body is copied: what the socket handed over may be part of a larger buffer.
   */
  offer(digest: number, raw: Uint8Array, answer: () => KeptAnswer): void {
    const held = this.kept.peek(digest);
    if (!(held !== undefined && held.body.equals(raw)) && !this.seen.againHash(digest)) return;
    const body = Buffer.allocUnsafeSlow(raw.length);
    body.set(raw);
    this.kept.set(digest, { answer: answer(), body });
  }

  /** Drop the answer kept for `raw`, which no longer holds. */
  drop(digest: number, raw: Uint8Array): void {
    const held = this.kept.peek(digest);
    if (held !== undefined && held.body.equals(raw)) this.kept.delete(digest);
  }

  get size(): number {
    return this.kept.size;
  }

  get bytes(): number {
    return this.kept.calculatedSize;
  }
}
