/**
 * The bounded queue between the capture routes and the forwarder. `append` accepts a request's events all or
 * none (never some): it resolves true once they are accepted, false when they do not fit (the route answers 503
 * and the SDK sends them again), so an accepted event is never dropped here. Events are kept in lanes: one per
 * token, and apart from those one per token for historical-migration events (a `/batch/` with
 * `historical_migration: true`, which upstream routes to its historical topic: they must travel in batches of
 * their own that carry the flag). The forwarder `take`s a batch of one lane's events (round-robin over lanes),
 * which stays counted against the bounds while in flight, then `ack`s it (forwarded, or refused by upstream for
 * good) or `release`s it (to be retried, ahead of newer events).
 * Each event is the bytes the SDK sent, usually a slice of its request's decoded body (never a copy): the bytes
 * counted against the bound are what a request keeps alive (`held`: its whole decoded body, while any of its
 * events is not acked), not only the events' own bytes, so the bound is the memory the queue holds.
 * A disk spool fits behind this interface: append resolves after the spool accepted, ack trims it.
 */
/** A batch leased to the forwarder. */
export interface EventBatch {
  readonly token: string;
  /** Historical-migration events: forwarded with `historical_migration: true`. */
  readonly historical: boolean;
  /** Each event's JSON text, in arrival order. */
  readonly events: readonly Buffer[];
  /** The events' bytes. */
  readonly bytes: number;
}

/** What the queue holds now. */
export interface QueueDepth {
  /** Events not yet acked (waiting + in flight). */
  readonly events: number;
  /** Bytes the events not yet acked keep in memory. */
  readonly bytes: number;
  readonly inFlight: number;
}

/** One request's events as appended. */
export interface QueuedRequest {
  readonly token: string;
  /** Each event's JSON text (slices of one buffer, or of several). */
  readonly events: readonly Buffer[];
  /** The request's `historical_migration` flag (its events go to a lane of their own). */
  readonly historical?: boolean;
  /** Bytes the events keep alive until every one of them is acked (default: their own bytes). */
  readonly held?: number;
}

/** The queue's interface (see the module comment). */
export interface EventQueue {
  append(request: QueuedRequest): Promise<boolean>;
  take(maxEvents: number, maxBytes: number): EventBatch | null;
  ack(batch: EventBatch): void;
  release(batch: EventBatch): void;
  /** Events waiting to be taken. */
  waiting(): number;
  depth(): QueueDepth;
  /** Room left before the bounds (what an append may still add). */
  free(): { readonly events: number; readonly bytes: number };
  /** Called after every accepted append. */
  onAppend(listener: () => void): void;
}

/** Bounds of the queue. */
export interface QueueLimits {
  readonly maxEvents: number;
  readonly maxBytes: number;
}

/** The events' own bytes. */
export const bytesOf = (events: readonly Buffer[]): number => events.reduce((total, event) => total + event.length, 0);

/** Bytes `request` keeps in memory while queued. */
export const heldBy = (request: QueuedRequest): number => request.held ?? bytesOf(request.events);

/** The lane of a token's events: historical-migration events have their own. */
export const laneOf = (token: string, historical: boolean): string => (historical ? `h:${token}` : `l:${token}`);

/** What one appended request keeps alive: `bytes` until its `pending` events are acked. */
interface Hold {
  readonly bytes: number;
  pending: number;
}

/** One lane's waiting events, one run per append (oldest first). */
interface Lane {
  readonly token: string;
  readonly historical: boolean;
  readonly runs: EventRun[];
}

/** Events of one request not yet taken: those from `next` on. */
interface EventRun {
  readonly events: readonly Buffer[];
  readonly hold: Hold;
  next: number;
}

/** A bounded in-memory queue. */
export function createMemoryQueue(limits: QueueLimits): EventQueue {
  // Waiting events per lane; Map order is the round-robin order (a lane taken from moves to the end).
  const lanes = new Map<string, Lane>();
  const runsOf = (token: string, historical: boolean): EventRun[] => {
    const key = laneOf(token, historical);
    let lane = lanes.get(key);
    if (lane === undefined) lanes.set(key, (lane = { token, historical, runs: [] }));
    return lane.runs;
  };
  // Of each batch in flight, the holds its events came from, as runs of [hold, count].
  const leased = new WeakMap<EventBatch, Array<{ hold: Hold; count: number }>>();
  let waitingCount = 0;
  let events = 0;
  let bytes = 0;
  let inFlight = 0;
  const listeners: Array<() => void> = [];

  return {
    append(request) {
      const { events: batch } = request;
      const size = heldBy(request);
      if (events + batch.length > limits.maxEvents || bytes + size > limits.maxBytes) return Promise.resolve(false);
      if (batch.length === 0) return Promise.resolve(true);
      runsOf(request.token, request.historical === true).push({ events: batch, hold: { bytes: size, pending: batch.length }, next: 0 });
      waitingCount += batch.length;
      events += batch.length;
      bytes += size;
      for (const listener of listeners) listener();
      return Promise.resolve(true);
    },
    take(maxEvents, maxBytes) {
      for (const [key, lane] of lanes) {
        const list = lane.runs;
        const taken: Buffer[] = [];
        const holds: Array<{ hold: Hold; count: number }> = [];
        let size = 0;
        while (list.length > 0 && taken.length < maxEvents) {
          const run = list[0] as EventRun;
          const next = run.events[run.next] as Buffer;
          if (taken.length > 0 && size + next.length > maxBytes) break;
          taken.push(next);
          run.next += 1;
          size += next.length;
          const last = holds[holds.length - 1];
          if (last?.hold === run.hold) last.count += 1;
          else holds.push({ hold: run.hold, count: 1 });
          if (run.next === run.events.length) list.shift();
        }
        lanes.delete(key);
        if (list.length > 0) lanes.set(key, lane);
        waitingCount -= taken.length;
        inFlight += taken.length;
        const batch: EventBatch = { token: lane.token, historical: lane.historical, events: taken, bytes: size };
        leased.set(batch, holds);
        return batch;
      }
      return null;
    },
    ack(batch) {
      inFlight -= batch.events.length;
      events -= batch.events.length;
      for (const { hold, count } of leased.get(batch) ?? []) {
        hold.pending -= count;
        if (hold.pending === 0) bytes -= hold.bytes;
      }
      leased.delete(batch);
    },
    release(batch) {
      inFlight -= batch.events.length;
      // Back ahead of newer events, each part still counted against the request it came from.
      const runs = runsOf(batch.token, batch.historical);
      let end = batch.events.length;
      for (const { hold, count } of (leased.get(batch) ?? []).reverse()) {
        runs.unshift({ events: batch.events.slice(end - count, end), hold, next: 0 });
        end -= count;
      }
      leased.delete(batch);
      waitingCount += batch.events.length;
      for (const listener of listeners) listener();
    },
    waiting: () => waitingCount,
    depth: () => ({ events, bytes, inFlight }),
    free: () => ({ events: limits.maxEvents - events, bytes: limits.maxBytes - bytes }),
    onAppend(listener) {
      listeners.push(listener);
    },
  };
}
