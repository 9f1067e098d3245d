/**
 * Memory for large answer bodies (a `/flags` answer above the slab's share: ~286 KB at 1,000 flags), reused once the
 * socket has taken a body's bytes, rather than a fresh allocation per answer. Each fresh one was memory outside V8's
 * heap that V8 counts: at ~1,000 answers a second it set off a scavenge every ~70 answers ("external memory
 * pressure"), which promoted the objects of the requests in flight, which filled the old generation, which was
 * marked and compacted every ~70 ms: a quarter of the CPU of a `/flags` request at 1,000 flags went to the
 * collector (docs/benchmarks.md as of c3f48ec, issue 19, "Large answers' memory reused").
 *
 * The contract: a body from `lend` is written once (respond.ts `send`) and then handed back with `giveBack`, which
 * keeps its memory for a later body only when nothing can read it any more (the caller's proof: the socket holds
 * no unwritten bytes). A body never handed back (a socket that was slow, a connection that was lost) is an ordinary
 * buffer the collector frees. Bounded: at most `maxFree` memories of at most `maxPooled` bytes each are kept.
 */

/** Bodies this size or smaller are not lent (they are cut from flags-response.ts's slab). */
export const minLent = 32 * 1024;
/** A memory larger than this is never kept (a body that large is rare, and keeping it would hold that much idle). */
export const maxPooled = 4 * 1024 * 1024;
/** How many memories are kept free at most. */
export const maxFree = 4;
/** Memories are made in multiples of this, so a body a little larger than the last still fits. */
const grain = 64 * 1024;

/** Memories free for a body, each whole. */
const free: Buffer[] = [];
/** Bodies lent and not yet handed back, each to the whole memory it is cut from. */
const lent = new WeakMap<Buffer, Buffer>();

/**
 * Memory for a body of at most `size` bytes: a free one that is large enough, else a new one (not zero-filled: the
 * caller writes every byte it gives out, and marks the body it cuts from it with `markLent`).
 */
export function lend(size: number): Buffer {
  for (let i = 0; i < free.length; i++) {
    const memory = free[i] as Buffer;
    if (memory.length >= size) {
      free[i] = free[free.length - 1] as Buffer;
      free.length -= 1;
      return memory;
    }
  }
  return Buffer.allocUnsafeSlow(Math.ceil(size / grain) * grain);
}

/** Record `body` (a view from the start of `memory`, which `lend` gave) as lent, to be handed back once written. */
export function markLent(body: Buffer, memory: Buffer): void {
  lent.set(body, memory);
}

/**
 * `body` has been written (or will never be): its memory is free for another body. A body that was not lent, or was
 * handed back already, is left alone.
 */
export function giveBack(body: Buffer): void {
  const memory = lent.get(body);
  if (memory === undefined) return;
  lent.delete(body);
  if (memory.length > maxPooled) return;
  if (free.length < maxFree) {
    free.push(memory);
    return;
  }
  // Full: it stands for the smallest free memory when larger (bodies grew: the small ones no longer fit).
  let smallest = 0;
  for (let i = 1; i < free.length; i++) if ((free[i] as Buffer).length < (free[smallest] as Buffer).length) smallest = i;
  if ((free[smallest] as Buffer).length < memory.length) free[smallest] = memory;
}

/** How many memories are free (for tests). */
export const freeCount = (): number => free.length;
