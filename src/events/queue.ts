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

/** Waiting events of one token: their texts and sizes, in the same order. */
interface Waiting {
  events: string[];
  sizes: number[];
}

/** A bounded in-memory queue. */
export function createMemoryQueue(limits: QueueLimits): EventQueue {
  // Waiting events per token; Map order is the round-robin order (a token taken from moves to the end).
  const waitingByToken = new Map<string, Waiting>();
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
      const list = waitingByToken.get(token);
      if (list) {
        for (const event of batch) list.events.push(event);
        for (const eventSize of sizes) list.sizes.push(eventSize);
      } else waitingByToken.set(token, { events: [...batch], sizes: [...sizes] });
      waitingCount += batch.length;
      events += batch.length;
      bytes += size;
      for (const listener of listeners) listener();
      return Promise.resolve(true);
    },
    take(maxEvents, maxBytes) {
      for (const [token, list] of waitingByToken) {
        let count = 0;
        let size = 0;
        while (count < list.events.length && count < maxEvents) {
          const next = list.sizes[count] as number;
          if (count > 0 && size + next > maxBytes) break;
          size += next;
          count += 1;
        }
        const taken = list.events.splice(0, count);
        const sizes = list.sizes.splice(0, count);
        waitingByToken.delete(token);
        if (list.events.length > 0) waitingByToken.set(token, list);
        waitingCount -= count;
        inFlight += count;
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
      const list = waitingByToken.get(batch.token);
      if (list) {
        list.events.unshift(...batch.events);
        list.sizes.unshift(...batch.sizes);
      } else waitingByToken.set(batch.token, { events: [...batch.events], sizes: [...batch.sizes] });
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
