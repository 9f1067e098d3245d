/**
 * The one gate every key verification passes on its way upstream (introspections and per-project grants): a
 * bounded number at once, the rest queued briefly and fairly, and an honest "busy" — never a silent wait and
 * never an outage report — when a key cannot be asked in time.
 *
 * Fairness is per caller address first (caller-address.ts: the TCP peer, an IPv6 /64), then per flow (a client
 * connection) within an address. Among the addresses with keys waiting, the one that asked least lately goes
 * next, and within it the flow that asked least: each carries a load that every key it sends adds to (asked,
 * queued or turned away alike), a key upstream rejected adds more, and that halves every `loadHalfLifeMs`. So a
 * flood — many connections from one address, a connection per key, or answered busy itself — weighs on its own
 * address, and a key from an address that asked little is asked next; equals take turns (serving one raises its
 * load). Many callers behind one address (a NAT) share one address's turn, and within it are served per connection.
 *
 * Capacity follows upstream's latency (Little's law: in flight = rate × latency): while keys wait, enough checks
 * at once to keep `ratePerSecond` going at the latency measured lately, within [`minInFlight`, `maxInFlight`]. A
 * slow upstream thus gets more checks at once but no more checks a second. (The rate is an aim, not the arrival
 * rate: a flood that waits for each answer arrives only as fast as it is served, which would never grow.)
 * Bounds: `maxQueued` waiting in all, `maxPerAddress` per address and `maxPerFlow` per flow (beyond: busy at once,
 * or, when everything is full, the newest entry of the fullest address makes room for an address with less), and
 * `maxWaitMs` in the queue (then busy). A waiting entry whose callers all went away is dropped unasked.
 */

/** Who waits for a verification: its flow (compared by identity), its address group, and whether anyone still wants the answer. */
export interface Waiter {
  readonly flow: object;
  readonly address: string;
  live(): boolean;
}

/** The answer when a key could not be asked in time: retry after this many seconds (1–60). */
export interface Busy {
  readonly kind: 'busy';
  readonly retryAfterSeconds: number;
}

/** Bounds of the queue. */
export interface VerifyQueueOptions {
  readonly minInFlight: number;
  readonly maxInFlight: number;
  /** The check rate capacity aims at while keys wait: in flight = this × latency. */
  readonly ratePerSecond: number;
  readonly maxQueued: number;
  readonly maxPerAddress: number;
  readonly maxPerFlow: number;
  readonly maxWaitMs: number;
  /** Milliseconds, monotonic (performance.now in production). */
  readonly now: () => number;
  /** Told of every key turned away busy, with its address (for a log line; never throws). */
  readonly onBusy?: (address: string) => void;
}

/**
 * The bounds the sidecar runs with, but for the two that are settings (maxInFlight, ratePerSecond): at least 8
 * checks at once, 1,024 waiting, a quarter of that per address, 8 per connection, at most 3 s in the queue.
 */
export const verifyQueueDefaults = { minInFlight: 8, maxQueued: 1024, maxPerAddress: 256, maxPerFlow: 8, maxWaitMs: 3000 } as const;

/** How fast a caller's load fades: a flood's weight is mostly gone a minute after it stops. */
const loadHalfLifeMs = 10_000;
/** What a key upstream rejected adds to its caller's load, on top of the 1 every key adds. */
const rejectionLoad = 4;
/** Addresses whose load is remembered while none of their keys waits (least recently seen forgotten first). */
const rememberedAddresses = 4096;

/** A load that halves every loadHalfLifeMs: `value` as of `at`. */
interface Load {
  readonly value: number;
  readonly at: number;
}

const loadAt = (load: Load | undefined, t: number): number => (load === undefined ? 0 : load.value * 2 ** ((load.at - t) / loadHalfLifeMs));
const grown = (load: Load | undefined, weight: number, t: number): Load => ({ value: loadAt(load, t) + weight, at: t });

interface Entry {
  /** Arrival order. */
  readonly seq: number;
  readonly waiter: Waiter;
  readonly start: () => Promise<unknown>;
  readonly settle: (value: unknown) => void;
  timer: ReturnType<typeof setTimeout> | null;
}

/** One address with keys waiting: its flows' entries, in turn order (a Map keeps insertion order). */
interface AddressState {
  readonly flows: Map<object, Entry[]>;
  queued: number;
}

/** Create the gate. */
export function createVerifyQueue(options: VerifyQueueOptions) {
  const { minInFlight, maxInFlight, ratePerSecond, maxQueued, maxPerAddress, maxPerFlow, maxWaitMs, now } = options;
  // Addresses with entries waiting, in turn order among equals (served ones go to the back).
  const waiting = new Map<string, AddressState>();
  // Loads: per flow, weak (a closed connection takes its own); per address, remembered for the busiest ones.
  const flowLoads = new WeakMap<object, Load>();
  const addressLoads = new Map<string, Load>();
  let running = 0;
  let queued = 0;
  let arrived = 0;
  // Recent time one verification takes (exponentially weighted; null before the first).
  let latencyMs: number | null = null;

  /** Add `weight` to everything `waiter` stands for: its flow and its address (most recently charged last). */
  function charge(waiter: Waiter, weight: number): void {
    const t = now();
    flowLoads.set(waiter.flow, grown(flowLoads.get(waiter.flow), weight, t));
    const load = grown(addressLoads.get(waiter.address), weight, t);
    addressLoads.delete(waiter.address);
    addressLoads.set(waiter.address, load);
    // Forget the least recently charged addresses with nothing waiting (a fresh start is all they gain).
    for (const address of addressLoads.keys()) {
      if (addressLoads.size <= rememberedAddresses) break;
      if (!waiting.has(address)) addressLoads.delete(address);
    }
  }

  /**
   * Checks allowed at once now: the rate aimed at times the latency seen lately (only used while keys wait, so
   * never more than there are keys to check).
   */
  function limit(): number {
    const wanted = Math.ceil((ratePerSecond * (latencyMs ?? 0)) / 1000);
    return Math.max(minInFlight, Math.min(maxInFlight, wanted));
  }

  function retryAfterSeconds(address: string): number {
    // Time for this address's own backlog at the current capacity: a flood is told to come back later than a newcomer.
    const backlog = (waiting.get(address)?.queued ?? 0) + 1;
    return Math.min(60, Math.max(1, Math.ceil((backlog * (latencyMs ?? 100)) / limit() / 1000)));
  }

  function busy(address: string): Busy {
    options.onBusy?.(address);
    return { kind: 'busy', retryAfterSeconds: retryAfterSeconds(address) };
  }

  function remove(entry: Entry): void {
    const state = waiting.get(entry.waiter.address);
    const entries = state?.flows.get(entry.waiter.flow);
    const at = entries ? entries.indexOf(entry) : -1;
    if (state === undefined || entries === undefined || at < 0) return;
    entries.splice(at, 1);
    if (entries.length === 0) state.flows.delete(entry.waiter.flow);
    state.queued -= 1;
    if (state.queued === 0) waiting.delete(entry.waiter.address);
    queued -= 1;
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
    const took = now() - started;
    latencyMs = latencyMs === null ? took : latencyMs * 0.8 + took * 0.2;
    entry.settle(value);
    pump();
  }

  /** The key of `map` with the least load now; the first of equals (map order is turn order). */
  function lightest<K extends object | string>(map: Map<K, unknown>, loads: { get(k: K): Load | undefined }, t: number): K {
    let best: K | undefined;
    let bestLoad = Number.POSITIVE_INFINITY;
    for (const key of map.keys()) {
      const load = loadAt(loads.get(key), t);
      if (load < bestLoad) [best, bestLoad] = [key, load];
    }
    return best as K;
  }

  /** The next entry in service order: the lightest address, its lightest flow, that flow's oldest entry. */
  function next(): Entry | undefined {
    if (waiting.size === 0) return undefined;
    const t = now();
    const address = lightest(waiting, addressLoads, t);
    const state = waiting.get(address) as AddressState;
    const flow = lightest(state.flows, flowLoads, t);
    const entries = state.flows.get(flow) as Entry[];
    const entry = entries.shift() as Entry;
    // To the back of the turn order among equals.
    state.flows.delete(flow);
    if (entries.length > 0) state.flows.set(flow, entries);
    waiting.delete(address);
    state.queued -= 1;
    if (state.queued > 0) waiting.set(address, state);
    queued -= 1;
    return entry;
  }

  function pump(): void {
    while (running < limit()) {
      const entry = next();
      if (entry === undefined) return;
      if (entry.waiter.live()) begin(entry);
      else {
        if (entry.timer !== null) clearTimeout(entry.timer);
        entry.settle(busy(entry.waiter.address));
      }
    }
  }

  /** Make room for `address` by turning away the newest entry of the address with most waiting, if it has more. */
  function evictFor(address: string): boolean {
    const mine = waiting.get(address)?.queued ?? 0;
    let fullest: AddressState | null = null;
    for (const state of waiting.values()) if (fullest === null || state.queued > fullest.queued) fullest = state;
    if (fullest === null || fullest.queued <= mine + 1) return false;
    // Within it, the newest entry of its fullest flow (of equals, the one whose newest came last).
    let longest: Entry[] = [];
    for (const entries of fullest.flows.values()) {
      const more = entries.length - longest.length;
      if (more > 0 || (more === 0 && (entries.at(-1) as Entry).seq > (longest.at(-1) as Entry).seq)) longest = entries;
    }
    const victim = longest.at(-1) as Entry;
    remove(victim);
    if (victim.timer !== null) clearTimeout(victim.timer);
    victim.settle(busy(victim.waiter.address));
    return true;
  }

  return {
    /**
     * Run `start` (one upstream verification) when a slot is free: its result, or `Busy` when it could not
     * start within the bounds. Never rejects unless `start` does.
     */
    run<T>(waiter: Waiter, start: () => Promise<T>): Promise<T | Busy> {
      return new Promise<T | Busy>((resolve) => {
        charge(waiter, 1);
        const entry: Entry = { seq: ++arrived, waiter, start, settle: resolve as (value: unknown) => void, timer: null };
        if (running < limit() && queued === 0) return begin(entry);
        const state = waiting.get(waiter.address);
        const mine = state?.flows.get(waiter.flow);
        if ((mine?.length ?? 0) >= maxPerFlow || (state?.queued ?? 0) >= maxPerAddress) return resolve(busy(waiter.address));
        if (queued >= maxQueued && !evictFor(waiter.address)) return resolve(busy(waiter.address));
        const own = waiting.get(waiter.address) ?? { flows: new Map<object, Entry[]>(), queued: 0 };
        waiting.set(waiter.address, own); // a new address joins the turn order at the back
        const entries = own.flows.get(waiter.flow);
        if (entries === undefined) own.flows.set(waiter.flow, [entry]);
        else entries.push(entry);
        own.queued += 1;
        queued += 1;
        entry.timer = setTimeout(() => {
          entry.timer = null;
          remove(entry);
          resolve(busy(waiter.address));
        }, maxWaitMs);
        entry.timer.unref();
      });
    },
    /** `waiter` sent a key upstream rejected: its flow and address weigh more from now on. */
    penalize(waiter: Waiter): void {
      charge(waiter, rejectionLoad);
    },
    /** Verifications running and waiting now, and how many may run at once. */
    size: (): { running: number; queued: number; limit: number } => ({ running, queued, limit: limit() }),
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
 * The queue sees the first caller's flow and address and drops the verification unasked once every caller has
 * gone; when `rejected` says upstream refused the key, every caller's load grows (see createVerifyQueue).
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
      if (rejected(outcome)) for (const w of waiters) queue.penalize(w);
      return outcome;
    });
  const first = { flow: waiter.flow, address: waiter.address, live: () => waiters.some((w) => w.live()) };
  const promise = queue.run(first, asked).finally(() => pending.delete(id));
  pending.set(id, { promise, waiters });
  return promise;
}
