/**
 * The bounded queue between the capture routes and the forwarder. `append` accepts a request's events all or
 * none (never some): it resolves true once they are accepted, false when they do not fit (the route answers 503
 * and the SDK sends them again), so an accepted event is never dropped here. Events are kept in lanes: one per
 * token, and apart from those one per token for historical-migration events (a `/batch/` with
 * `historical_migration: true`, which upstream routes to its historical topic: they must travel in batches of
 * their own that carry the flag). The forwarder `take`s a batch of one lane's events (round-robin over lanes),
 * which stays counted against the bounds while in flight, then `ack`s it (forwarded, or refused by upstream for
 * good) or `release`s it (to be retried, ahead of newer events).
 * A disk spool fits behind this interface: append resolves after the spool accepted, ack trims it.
 */
/** A batch leased to the forwarder. */
export interface EventBatch {
  readonly token: string;
  /** Historical-migration events: forwarded with `historical_migration: true`. */
  readonly historical: boolean;
  /** Each event's JSON text, in arrival order. */
  readonly events: readonly string[];
  /** Each event's size in bytes. */
  readonly sizes: readonly number[];
  readonly bytes: number;
}

/** What the queue holds now. */
export interface QueueDepth {
  /** Events not yet acked (waiting + in flight). */
  readonly events: number;
  readonly bytes: number;
  readonly inFlight: number;
}

/** The queue's interface (see the module comment). */
export interface EventQueue {
  /**
   * `sizes`: each event's size in bytes when the caller knows them (else measured here); `historical`: the
   * request's `historical_migration` flag (its events go to a lane of their own).
   */
  append(token: string, events: readonly string[], sizes?: readonly number[], historical?: boolean): Promise<boolean>;
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

/** Each event's size in bytes. */
export const sizesOf = (events: readonly string[]): number[] => events.map((e) => Buffer.byteLength(e));
const sum = (sizes: readonly number[]): number => sizes.reduce((total, size) => total + size, 0);

/** The lane of a token's events: historical-migration events have their own. */
export const laneOf = (token: string, historical: boolean): string => (historical ? `h:${token}` : `l:${token}`);

/** One lane's waiting events, one run per append (oldest first). */
interface Lane {
  readonly token: string;
  readonly historical: boolean;
  readonly runs: EventRun[];
}

/** One append's events not yet taken: those from `next` on. */
interface EventRun {
  readonly texts: readonly string[];
  readonly sizes: readonly number[];
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
  let waitingCount = 0;
  let events = 0;
  let bytes = 0;
  let inFlight = 0;
  const listeners: Array<() => void> = [];

  return {
    append(token, batch, known, historical = false) {
      const sizes = known ?? sizesOf(batch);
      const size = sum(sizes);
      if (events + batch.length > limits.maxEvents || bytes + size > limits.maxBytes) return Promise.resolve(false);
      if (batch.length === 0) return Promise.resolve(true);
      runsOf(token, historical).push({ texts: batch, sizes, next: 0 });
      waitingCount += batch.length;
      events += batch.length;
      bytes += size;
      for (const listener of listeners) listener();
      return Promise.resolve(true);
    },
    take(maxEvents, maxBytes) {
      for (const [key, lane] of lanes) {
        const list = lane.runs;
        const taken: string[] = [];
        const sizes: number[] = [];
        let size = 0;
        while (list.length > 0 && taken.length < maxEvents) {
          const run = list[0] as EventRun;
          const next = run.sizes[run.next] as number;
          if (taken.length > 0 && size + next > maxBytes) break;
          taken.push(run.texts[run.next] as string);
          run.next += 1;
          sizes.push(next);
          size += next;
          if (run.next === run.sizes.length) list.shift();
        }
        lanes.delete(key);
        if (list.length > 0) lanes.set(key, lane);
        waitingCount -= taken.length;
        inFlight += taken.length;
        return { token: lane.token, historical: lane.historical, events: taken, sizes, bytes: size };
      }
      return null;
    },
    ack(batch) {
      inFlight -= batch.events.length;
      events -= batch.events.length;
      bytes -= batch.bytes;
    },
    release(batch) {
      inFlight -= batch.events.length;
      runsOf(batch.token, batch.historical).unshift({ texts: batch.events, sizes: batch.sizes, next: 0 });
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
