/**
 * The events queue with the disk spool behind it (FLAG_SIDECAR_SNAPSHOT_DIR set): a request's events enter the
 * memory queue (and may be forwarded) only once its spool record is fsync'ed, and `append` then resolves true;
 * false (503, the SDK retries) when either is full or the write failed, and then nothing of the request is kept
 * anywhere: a request answered 503 is never relayed, so the SDK's retry is not a duplicate. Room in the memory
 * queue is held for a request while its record is written. A request's spool record is acked once every one of its
 * events was acked. Records a previous run left are replayed a part at a time: a part read from the spool is
 * held until the memory queue has room for its records, in order, and the next part is read only once all of it
 * is in; so replay holds at most one part beyond the queue's bounds, whatever the spool's size. A held part counts
 * against new appends' room, so the backlog is not starved by new requests. A replayed record larger than the
 * whole memory queue can never be forwarded: it is logged, counted as dropped and acked.
 */
import type { Logger } from '../logger.js';
import { heldBy, laneOf, type EventBatch, type EventQueue, type QueuedRequest, type QueueLimits } from './queue.js';
import type { ReplayedRecord, Spool, SpoolRef, SpoolReplay } from './spool.js';

interface Slice {
  readonly ref: SpoolRef;
  readonly count: number;
}

const keyOf = (ref: SpoolRef): string => `${ref.segment}:${ref.index}`;

/** Dependencies of createSpooledQueue. */
export interface SpooledQueueDeps {
  /** An empty memory queue bounded by `limits`. */
  readonly memory: EventQueue;
  readonly limits: QueueLimits;
  readonly spool: Spool;
  /** What a previous run left (read as the queue has room). */
  readonly replay: SpoolReplay;
  readonly logger: Logger;
  /** Called with the events of a replayed record that can never fit the memory queue. */
  readonly dropped: (events: number) => void;
}

/** Create the spooled queue; replaying `deps.replay` into it starts at once. */
export function createSpooledQueue(deps: SpooledQueueDeps): EventQueue {
  const { memory, limits, spool } = deps;
  // Mirrors memory's per-lane order (queue.ts laneOf): which spool record each waiting event came from.
  const slicesByLane = new Map<string, Slice[]>();
  const leased = new WeakMap<EventBatch, Slice[]>();
  // Events of a record not yet acked.
  const remaining = new Map<string, number>();
  // The part read from the spool and not yet in the memory queue.
  const backlog: ReplayedRecord[] = [];
  let backlogEvents = 0;
  let backlogBytes = 0;
  // Requests whose records are being written: their room in the memory queue is held.
  let writingEvents = 0;
  let writingBytes = 0;
  let reading = false;
  let replayDone = false;

  const fits = (count: number, bytes: number): boolean => {
    const depth = memory.depth();
    return depth.events + writingEvents + count <= limits.maxEvents && depth.bytes + writingBytes + bytes <= limits.maxBytes;
  };
  const enqueue = (request: QueuedRequest, ref: SpoolRef): void => {
    const count = request.events.length;
    remaining.set(keyOf(ref), count);
    const lane = laneOf(request.token, request.historical === true);
    const list = slicesByLane.get(lane);
    if (list) list.push({ ref, count });
    else slicesByLane.set(lane, [{ ref, count }]);
    void memory.append(request);
  };
  const pump = (): void => {
    while (backlog.length > 0) {
      const next = backlog[0] as ReplayedRecord;
      const bytes = heldBy(next);
      if (!fits(next.events.length, bytes)) {
        if (memory.depth().events > 0) return;
        deps.logger.error({ events: next.events.length, bytes }, 'events spool: a spooled request is larger than the whole events queue; it is dropped');
        deps.dropped(next.events.length);
        spool.ack(next.ref);
      } else enqueue(next, next.ref);
      backlog.shift();
      backlogEvents -= next.events.length;
      backlogBytes -= bytes;
    }
    if (replayDone || reading) return;
    reading = true;
    deps.replay.next().then(
      (records) => {
        reading = false;
        if (records === null) replayDone = true;
        else {
          backlog.push(...records);
          backlogEvents += records.reduce((sum, r) => sum + r.events.length, 0);
          backlogBytes += records.reduce((sum, r) => sum + heldBy(r), 0);
        }
        pump();
      },
      (error: Error) => {
        reading = false;
        replayDone = true;
        deps.logger.error({ err: error.message }, 'events spool: replay stopped; the records not read yet are kept for the next start');
      },
    );
  };
  pump();

  return {
    async append(request) {
      const { events } = request;
      const bytes = heldBy(request);
      if (!fits(backlogEvents + events.length, backlogBytes + bytes)) return false;
      const written = spool.append(request);
      if (written === null) return false;
      writingEvents += events.length;
      writingBytes += bytes;
      const ref = await written;
      writingEvents -= events.length;
      writingBytes -= bytes;
      if (ref === null) return false;
      enqueue(request, ref);
      return true;
    },
    take(maxEvents, maxBytes) {
      const batch = memory.take(maxEvents, maxBytes);
      if (batch === null) return null;
      const lane = laneOf(batch.token, batch.historical);
      const list = slicesByLane.get(lane) ?? [];
      const taken: Slice[] = [];
      let left = batch.events.length;
      while (left > 0 && list.length > 0) {
        const first = list[0] as Slice;
        if (first.count <= left) {
          taken.push(first);
          list.shift();
          left -= first.count;
        } else {
          taken.push({ ref: first.ref, count: left });
          list[0] = { ref: first.ref, count: first.count - left };
          left = 0;
        }
      }
      if (list.length === 0) slicesByLane.delete(lane);
      leased.set(batch, taken);
      return batch;
    },
    ack(batch) {
      memory.ack(batch);
      for (const slice of leased.get(batch) ?? []) {
        const key = keyOf(slice.ref);
        const left = (remaining.get(key) ?? 0) - slice.count;
        if (left > 0) remaining.set(key, left);
        else {
          remaining.delete(key);
          spool.ack(slice.ref);
        }
      }
      leased.delete(batch);
      pump();
    },
    release(batch) {
      const slices = leased.get(batch) ?? [];
      leased.delete(batch);
      const lane = laneOf(batch.token, batch.historical);
      const list = slicesByLane.get(lane);
      if (list) list.unshift(...slices);
      else slicesByLane.set(lane, [...slices]);
      memory.release(batch);
    },
    waiting: () => memory.waiting(),
    // The part of the replay held for room, and the requests being written, count against new appends (as in append).
    free() {
      const free = memory.free();
      return { events: free.events - backlogEvents - writingEvents, bytes: free.bytes - backlogBytes - writingBytes };
    },
    depth() {
      const depth = memory.depth();
      return { events: depth.events + backlogEvents, bytes: depth.bytes + backlogBytes, inFlight: depth.inFlight };
    },
    onAppend: (listener) => memory.onAppend(listener),
  };
}
