/**
 * The one gate every key verification passes on its way upstream (introspections and per-project grants): at
 * most `maxInFlight` at once, the rest queued briefly and fairly, and an honest "busy" — never a silent wait and
 * never an outage report — when a key cannot be asked in time.
 *
 * Fairness is per flow (a client connection): flows are served round-robin, so one connection sending many keys
 * (pipelined or one after another) does not delay another connection's first key. Flows that sent a key upstream
 * rejected are served only when no clean flow waits: a connection flooding made-up keys falls behind at its first
 * rejection, and a new key on a new connection is asked next. Bounds: `maxQueued` waiting in all, `maxPerFlow`
 * per flow (beyond: busy at once, or the newest entry of the fullest flow makes room for a flow with less), and
 * `maxWaitMs` in the queue (then busy). A waiting entry whose callers all went away is dropped unasked.
 */

/** Who waits for a verification: its flow (compared by identity) and whether anyone still wants the answer. */
export interface Waiter {
  readonly flow: object;
  live(): boolean;
}

/** The answer when a key could not be asked in time: retry after this many seconds (1–60). */
export interface Busy {
  readonly kind: 'busy';
  readonly retryAfterSeconds: number;
}

/** Bounds of the queue. */
export interface VerifyQueueOptions {
  readonly maxInFlight: number;
  readonly maxQueued: number;
  readonly maxPerFlow: number;
  readonly maxWaitMs: number;
  /** Milliseconds, monotonic (performance.now in production). */
  readonly now: () => number;
}

/**
 * The bounds the sidecar runs with: 8 verifications at once (half of the upstream client's 16 connections, so
 * polls, writes and read-through always find one), 1,024 waiting (8 per connection), at most 3 s in the queue.
 */
export const verifyQueueDefaults = { maxInFlight: 8, maxQueued: 1024, maxPerFlow: 8, maxWaitMs: 3000 } as const;

interface Entry {
  readonly waiter: Waiter;
  readonly start: () => Promise<unknown>;
  readonly settle: (value: unknown) => void;
  timer: ReturnType<typeof setTimeout> | null;
}

interface FlowState {
  readonly entries: Entry[];
}

/** Create the gate. */
export function createVerifyQueue(options: VerifyQueueOptions) {
  const { maxInFlight, maxQueued, maxPerFlow, maxWaitMs, now } = options;
  // Rings of flows with entries waiting, in service order (a Map keeps insertion order: first is next).
  const clean = new Map<object, FlowState>();
  const dirty = new Map<object, FlowState>();
  // Flows that sent a rejected key; weak, so a closed connection takes its mark with it.
  const marked = new WeakSet<object>();
  let running = 0;
  let queued = 0;
  // Recent time one verification takes (exponentially weighted), for Retry-After.
  let averageMs = 100;

  const retryAfterSeconds = (): number =>
    Math.min(60, Math.max(1, Math.ceil(((queued + running) / maxInFlight) * averageMs / 1000)));
  const busy = (): Busy => ({ kind: 'busy', retryAfterSeconds: retryAfterSeconds() });

  function remove(entry: Entry): void {
    const ring = marked.has(entry.waiter.flow) ? [dirty, clean] : [clean, dirty];
    for (const map of ring) {
      const state = map.get(entry.waiter.flow);
      const at = state ? state.entries.indexOf(entry) : -1;
      if (state === undefined || at < 0) continue;
      state.entries.splice(at, 1);
      if (state.entries.length === 0) map.delete(entry.waiter.flow);
      queued -= 1;
      return;
    }
  }

  function begin(entry: Entry): void {
    if (entry.timer !== null) clearTimeout(entry.timer);
    running += 1;
    const started = now();
    entry.start().then(
      (value) => finish(entry, started, value),
      (error: unknown) => finish(entry, started, Promise.reject(error)),
    );
  }

  function finish(entry: Entry, started: number, value: unknown): void {
    running -= 1;
    averageMs = averageMs * 0.8 + (now() - started) * 0.2;
    entry.settle(value);
    pump();
  }

  /** The next entry in service order: clean flows first, round-robin within a ring. */
  function next(): Entry | undefined {
    for (const ring of [clean, dirty]) {
      const first = ring.entries().next();
      if (first.done === true) continue;
      const [flow, state] = first.value;
      const entry = state.entries.shift() as Entry;
      ring.delete(flow);
      if (state.entries.length > 0) ring.set(flow, state); // to the back of the ring
      queued -= 1;
      return entry;
    }
    return undefined;
  }

  function pump(): void {
    while (running < maxInFlight) {
      const entry = next();
      if (entry === undefined) return;
      if (entry.waiter.live()) begin(entry);
      else {
        if (entry.timer !== null) clearTimeout(entry.timer);
        entry.settle(busy());
      }
    }
  }

  /** Make room for `flow` by turning away the newest entry of the fullest flow, if that flow has more. */
  function evictFor(flow: object): boolean {
    const mine = (clean.get(flow) ?? dirty.get(flow))?.entries.length ?? 0;
    let fullest: FlowState | null = null;
    for (const ring of [dirty, clean]) {
      for (const state of ring.values()) if (fullest === null || state.entries.length > fullest.entries.length) fullest = state;
      if (fullest !== null && fullest.entries.length > mine + 1) break; // a dirty flow to take from is enough
    }
    if (fullest === null || fullest.entries.length <= mine + 1) return false;
    const victim = fullest.entries[fullest.entries.length - 1] as Entry;
    remove(victim);
    if (victim.timer !== null) clearTimeout(victim.timer);
    victim.settle(busy());
    return true;
  }

  return {
    /**
     * Run `start` (one upstream verification) when a slot is free: its result, or `Busy` when it could not
     * start within the bounds. Never rejects unless `start` does.
     */
    run<T>(waiter: Waiter, start: () => Promise<T>): Promise<T | Busy> {
      return new Promise<T | Busy>((resolve) => {
        const entry: Entry = { waiter, start, settle: resolve as (value: unknown) => void, timer: null };
        if (running < maxInFlight && queued === 0) return begin(entry);
        const ring = marked.has(waiter.flow) ? dirty : clean;
        const state = ring.get(waiter.flow);
        if ((state?.entries.length ?? 0) >= maxPerFlow) return resolve(busy());
        if (queued >= maxQueued && !evictFor(waiter.flow)) return resolve(busy());
        if (state === undefined) ring.set(waiter.flow, { entries: [entry] });
        else state.entries.push(entry);
        queued += 1;
        entry.timer = setTimeout(() => {
          entry.timer = null;
          remove(entry);
          resolve(busy());
        }, maxWaitMs);
        entry.timer.unref();
      });
    },
    /** Mark `flow` as one that sent a key upstream rejected: from now on it is served after clean flows. */
    penalize(flow: object): void {
      if (marked.has(flow)) return;
      marked.add(flow);
      const state = clean.get(flow);
      if (state === undefined) return;
      clean.delete(flow);
      dirty.set(flow, state);
    },
    /** Verifications running and waiting now. */
    size: (): { running: number; queued: number } => ({ running, queued }),
  };
}

/** The gate's handle. */
export type VerifyQueue = ReturnType<typeof createVerifyQueue>;

/** A verification under way (or waiting its turn) and everyone waiting for it. */
export interface Pending<T> {
  readonly promise: Promise<T>;
  readonly waiters: Waiter[];
}

/**
 * Join the verification under way for `id`, or queue a new one with `ask`: concurrent callers for one key share it.
 * The queue sees the first caller's flow and drops the verification unasked once every caller has gone; when
 * `rejected` says upstream refused the key, every caller's flow is marked (it waits behind clean ones from then on).
 */
export function sharedVerification<T>(
  pending: Map<string, Pending<T | Busy>>,
  queue: VerifyQueue,
  id: string,
  waiter: Waiter,
  ask: () => Promise<T>,
  rejected: (outcome: T) => boolean,
): Promise<T | Busy> {
  const running = pending.get(id);
  if (running !== undefined) {
    running.waiters.push(waiter);
    return running.promise;
  }
  const waiters = [waiter];
  const asked = (): Promise<T> =>
    ask().then((outcome) => {
      if (rejected(outcome)) for (const w of waiters) queue.penalize(w.flow);
      return outcome;
    });
  const promise = queue.run({ flow: waiter.flow, live: () => waiters.some((w) => w.live()) }, asked).finally(() => pending.delete(id));
  pending.set(id, { promise, waiters });
  return promise;
}
