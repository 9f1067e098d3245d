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
  append(token: string, events: readonly string[]): Promise<boolean>;
  take(maxEvents: number, maxBytes: number): EventBatch | null;
  ack(batch: EventBatch): void;
  release(batch: EventBatch): void;
  /** Events waiting to be taken. */
  waiting(): number;
  depth(): QueueDepth;
  /** Called after every accepted append. */
  onAppend(listener: () => void): void;
}

/** Bounds of the queue. */
export interface QueueLimits {
  readonly maxEvents: number;
  readonly maxBytes: number;
}

const sizeOf = (events: readonly string[]): number => events.reduce((sum, e) => sum + Buffer.byteLength(e), 0);

/** A bounded in-memory queue. */
export function createMemoryQueue(limits: QueueLimits): EventQueue {
  // Waiting events per token; Map order is the round-robin order (a token taken from moves to the end).
  const waitingByToken = new Map<string, string[]>();
  let waitingCount = 0;
  let events = 0;
  let bytes = 0;
  let inFlight = 0;
  const listeners: Array<() => void> = [];

  return {
    append(token, batch) {
      const size = sizeOf(batch);
      if (events + batch.length > limits.maxEvents || bytes + size > limits.maxBytes) return Promise.resolve(false);
      const list = waitingByToken.get(token);
      if (list) for (const event of batch) list.push(event);
      else waitingByToken.set(token, [...batch]);
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
        while (count < list.length && count < maxEvents) {
          const next = Buffer.byteLength(list[count] as string);
          if (count > 0 && size + next > maxBytes) break;
          size += next;
          count += 1;
        }
        const taken = list.splice(0, count);
        waitingByToken.delete(token);
        if (list.length > 0) waitingByToken.set(token, list);
        waitingCount -= count;
        inFlight += count;
        return { token, events: taken, bytes: size };
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
      if (list) list.unshift(...batch.events);
      else waitingByToken.set(batch.token, [...batch.events]);
      waitingCount += batch.events.length;
      for (const listener of listeners) listener();
    },
    waiting: () => waitingCount,
    depth: () => ({ events, bytes, inFlight }),
    onAppend(listener) {
      listeners.push(listener);
    },
  };
}
