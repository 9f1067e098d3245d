/**
 * The bounded queue between the capture routes and the forwarder. `append` accepts a request's events all or
 * none (never some): it resolves true once they are accepted, false when they do not fit (the route answers 503
 * and the SDK sends them again), so an accepted event is never dropped here. The forwarder `take`s a batch of one
 * token's events (round-robin over tokens), which stays counted against the bounds while in flight, then `ack`s
 * it (forwarded, or refused by upstream for good) or `release`s it (to be retried, ahead of newer events).
 * A disk spool fits behind this interface: append resolves after the spool accepted, ack trims it.
 */
/** A batch leased to the forwarder. */
export interface EventBatch {
  readonly token: string;
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
  /** `sizes`: each event's size in bytes when the caller knows them (else measured here). */
  append(token: string, events: readonly string[], sizes?: readonly number[]): Promise<boolean>;
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

/** One append's events not yet taken: those from `next` on. */
interface EventRun {
  readonly texts: readonly string[];
  readonly sizes: readonly number[];
  next: number;
}

/** A bounded in-memory queue. */
export function createMemoryQueue(limits: QueueLimits): EventQueue {
  // Waiting events per token, one run per append (oldest first); Map order is the round-robin order (a token
  // taken from moves to the end).
  const waitingByToken = new Map<string, EventRun[]>();
  let waitingCount = 0;
  let events = 0;
  let bytes = 0;
  let inFlight = 0;
  const listeners: Array<() => void> = [];

  return {
    append(token, batch, known) {
      const sizes = known ?? sizesOf(batch);
      const size = sum(sizes);
      if (events + batch.length > limits.maxEvents || bytes + size > limits.maxBytes) return Promise.resolve(false);
      if (batch.length === 0) return Promise.resolve(true);
      const run: EventRun = { texts: batch, sizes, next: 0 };
      const list = waitingByToken.get(token);
      if (list) list.push(run);
      else waitingByToken.set(token, [run]);
      waitingCount += batch.length;
      events += batch.length;
      bytes += size;
      for (const listener of listeners) listener();
      return Promise.resolve(true);
    },
    take(maxEvents, maxBytes) {
      for (const [token, list] of waitingByToken) {
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
        waitingByToken.delete(token);
        if (list.length > 0) waitingByToken.set(token, list);
        waitingCount -= taken.length;
        inFlight += taken.length;
        return { token, events: taken, sizes, bytes: size };
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
      const run: EventRun = { texts: batch.events, sizes: batch.sizes, next: 0 };
      const list = waitingByToken.get(batch.token);
      if (list) list.unshift(run);
      else waitingByToken.set(batch.token, [run]);
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
