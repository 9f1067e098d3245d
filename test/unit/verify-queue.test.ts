import { afterEach, describe, expect, it, vi } from 'vitest';
import { createVerifyQueue, sharedVerification, type Busy, type Pending, type VerifyQueueOptions, type Waiter } from '../../src/auth/verify-queue.js';

const options = (extra: Partial<VerifyQueueOptions> = {}): VerifyQueueOptions => ({
  minInFlight: 1,
  maxInFlight: 1,
  ratePerSecond: 100,
  maxQueued: 100,
  maxPerAddress: 100,
  maxPerFlow: 10,
  maxWaitMs: 60_000,
  now: () => 0,
  ...extra,
});
const waiter = (flow: object, address = 'a', live = () => true): Waiter => ({ flow, address, live });

/** A task that records its start and finishes when released. */
function task(name: string, started: string[]) {
  let release = (): void => undefined;
  const done = new Promise<string>((resolve) => (release = () => resolve(name)));
  return { start: () => (started.push(name), done), release: () => release() };
}

const isBusy = (value: unknown): value is Busy => typeof value === 'object' && value !== null && (value as Busy).kind === 'busy';
const tick = () => new Promise((r) => setImmediate(r));

/** Release tasks one at a time, each once it started (the queue runs one at a time in these tests). */
async function drain(tasks: ReadonlyArray<{ release(): void }>): Promise<void> {
  for (const t of tasks) {
    await tick();
    t.release();
  }
}

afterEach(() => vi.useRealTimers());

describe('the verification queue: order', () => {
  it('serves the connection that asked least first, then takes turns', async () => {
    const queue = createVerifyQueue(options());
    const started: string[] = [];
    const [f1, f2] = [{}, {}];
    const blocker = task('blocker', started);
    const tasks = ['a1', 'a2', 'a3', 'b1'].map((n) => task(n, started));
    const results = [queue.run(waiter(f1), blocker.start), ...tasks.map((t, i) => queue.run(waiter(i < 3 ? f1 : f2), t.start))];
    blocker.release();
    await drain([tasks[3], ...tasks.slice(0, 3)] as typeof tasks);
    await Promise.all(results);
    expect(started).toEqual(['blocker', 'b1', 'a1', 'a2', 'a3']);
  });

  it('serves a key from another address before the keys of 400 connections flooding from one address', async () => {
    const queue = createVerifyQueue(options({ maxQueued: 1000, maxPerAddress: 500 }));
    const started: string[] = [];
    const blocker = task('blocker', started);
    const flood = Array.from({ length: 400 }, (_, i) => task(`flood ${i}`, started));
    const results = [queue.run(waiter({}, '127.0.0.1'), blocker.start), ...flood.map((t) => queue.run(waiter({}, '127.0.0.1'), t.start))];
    const valid = task('valid', started);
    results.push(queue.run(waiter({}, '127.0.0.2'), valid.start));
    blocker.release();
    await tick();
    expect(started).toEqual(['blocker', 'valid']);
    valid.release();
    await drain(flood);
    await Promise.all(results);
  });

  it('serves a quiet connection before a flooding one behind the same address', async () => {
    const queue = createVerifyQueue(options());
    const started: string[] = [];
    const [flooder, quiet] = [{}, {}];
    const tasks = ['f1', 'f2', 'f3', 'f4', 'q1'].map((n) => task(n, started));
    const results = tasks.map((t, i) => queue.run(waiter(i < 4 ? flooder : quiet, 'nat'), t.start));
    await drain([tasks[0], tasks[4], tasks[1], tasks[2], tasks[3]] as typeof tasks);
    await Promise.all(results);
    expect(started).toEqual(['f1', 'q1', 'f2', 'f3', 'f4']);
  });

  it('weighs every key an address sent, even those turned away busy: a flood answered 429 is not clean', async () => {
    const queue = createVerifyQueue(options({ maxPerAddress: 1 }));
    const started: string[] = [];
    const blocker = task('blocker', started);
    const results = [queue.run(waiter({}, 'other'), blocker.start), queue.run(waiter({}, 'steady'), async () => 'steady first')];
    // The flood: a connection per key, each but the first turned away at its address's bound.
    results.push(queue.run(waiter({}, 'flood'), async () => 'flood first'));
    for (let i = 0; i < 20; i += 1) expect(isBusy(await queue.run(waiter({}, 'flood'), async () => 'never'))).toBe(true);
    blocker.release();
    await Promise.all(results);
    // Both addresses had one key asked; now one more each, the flood's first in line: it still goes second.
    const [flood, steady, holder] = [task('flood', started), task('steady', started), task('holder', started)];
    const later = [queue.run(waiter({}, 'holder'), holder.start), queue.run(waiter({}, 'flood'), flood.start), queue.run(waiter({}, 'steady'), steady.start)];
    await drain([holder, steady, flood]);
    await Promise.all(later);
    expect(started.slice(-3)).toEqual(['holder', 'steady', 'flood']);
  });

  it('serves a connection that sent a rejected key after others that asked as much', async () => {
    const queue = createVerifyQueue(options());
    const started: string[] = [];
    const [flooder, newcomer] = [{}, {}];
    const pending = new Map<string, Pending<string | Busy>>();
    const blocker = task('blocker', started);
    const first = queue.run(waiter(newcomer), blocker.start);
    const bogus = sharedVerification(pending, queue, 'bogus', waiter(flooder), async () => 'rejected', () => true);
    blocker.release();
    expect(await bogus).toBe('rejected');
    await first;
    const hold = task('hold', started);
    const held = queue.run(waiter({}), hold.start);
    const [again, valid] = [task('again', started), task('valid', started)];
    const results = [queue.run(waiter(flooder), again.start), queue.run(waiter(newcomer), valid.start)];
    await drain([hold, valid, again]);
    await Promise.all([held, ...results]);
    // Both connections had asked once before; the one whose key was rejected waits.
    expect(started.slice(-2)).toEqual(['valid', 'again']);
  });

  it('lets loads fade: an address that flooded two minutes ago goes before one asking twice now', async () => {
    let now = 0;
    const queue = createVerifyQueue(options({ now: () => now, maxPerAddress: 2 }));
    const started: string[] = [];
    const blocker = task('blocker', started);
    const held = queue.run(waiter({}, 'holder'), blocker.start);
    for (let i = 0; i < 10; i += 1) void queue.run(waiter({}, 'old flood'), async () => 'x');
    blocker.release();
    await held;
    await tick();
    now = 120_000;
    const hold = task('hold', started);
    const second = queue.run(waiter({}, 'holder'), hold.start);
    const [r1, old, r2] = [task('r1', started), task('old', started), task('r2', started)];
    const results = [queue.run(waiter({}, 'recent'), r1.start), queue.run(waiter({}, 'old flood'), old.start), queue.run(waiter({}, 'recent'), r2.start)];
    await drain([hold, old, r1, r2]);
    await Promise.all([second, ...results]);
    expect(started.slice(-3)).toEqual(['old', 'r1', 'r2']);
  });
});

describe('the verification queue: capacity', () => {
  /** `count` keys from distinct addresses at t = 0, the first `minInFlight` taking `latencyMs` each. */
  async function underLoad(extra: Partial<VerifyQueueOptions>, latencyMs: number, count = 200) {
    let now = 0;
    const queue = createVerifyQueue(options({ minInFlight: 2, maxInFlight: 64, maxQueued: 1000, ...extra, now: () => now }));
    const tasks = Array.from({ length: count }, (_, i) => task(String(i), []));
    const results = tasks.map((t, i) => queue.run(waiter({}, `10.0.0.${i}`), t.start));
    const before = queue.size();
    now = latencyMs;
    for (const t of tasks.slice(0, before.running)) t.release();
    await tick();
    const after = queue.size();
    now += 60_000;
    for (const t of tasks) t.release();
    for (let i = 0; i < 20; i += 1) await tick();
    await Promise.all(results);
    return { before, after };
  }

  it('runs the least number of checks at once until it knows how long one takes', async () => {
    expect((await underLoad({}, 300)).before).toEqual({ running: 2, queued: 198, limit: 2 });
  });

  it('runs more at once when upstream is slow: the rate aimed at times the latency (100 a second × 0.3 s)', async () => {
    const { after } = await underLoad({ ratePerSecond: 100 }, 300);
    expect(after).toMatchObject({ limit: 30, running: 30 });
  });

  it('never more than its bound', async () => {
    expect((await underLoad({ ratePerSecond: 1000, maxInFlight: 16 }, 300)).after).toMatchObject({ limit: 16, running: 16 });
  });

  it('the least at once when upstream is fast (100 a second × 10 ms is 1)', async () => {
    expect((await underLoad({ ratePerSecond: 100 }, 10)).after).toMatchObject({ limit: 2 });
  });
});

describe('the verification queue: bounds', () => {
  it('turns a connection past its own bound away at once', async () => {
    const queue = createVerifyQueue(options({ maxPerFlow: 2 }));
    const flow = {};
    const blocker = task('blocker', []);
    void queue.run(waiter(flow), blocker.start);
    const queued = [queue.run(waiter(flow), async () => 'x'), queue.run(waiter(flow), async () => 'y')];
    expect(isBusy(await queue.run(waiter(flow), async () => 'z'))).toBe(true);
    blocker.release();
    expect(await Promise.all(queued)).toEqual(['x', 'y']);
  });

  it('turns an address past its share away at once, while another address still queues', async () => {
    const busyFrom: string[] = [];
    const queue = createVerifyQueue(options({ maxPerAddress: 2, onBusy: (address) => busyFrom.push(address) }));
    const blocker = task('blocker', []);
    void queue.run(waiter({}, 'other'), blocker.start);
    const queued = [queue.run(waiter({}, 'flood'), async () => 'f1'), queue.run(waiter({}, 'flood'), async () => 'f2')];
    const turned = await queue.run(waiter({}, 'flood'), async () => 'f3');
    expect(isBusy(turned) && turned.retryAfterSeconds >= 1).toBe(true);
    expect(busyFrom).toEqual(['flood']);
    const fair = queue.run(waiter({}, 'other'), async () => 'other');
    blocker.release();
    expect(await Promise.all([...queued, fair])).toEqual(['f1', 'f2', 'other']);
  });

  it('when full, makes room for an address with less waiting by turning away the fullest one’s newest key', async () => {
    const queue = createVerifyQueue(options({ maxQueued: 2 }));
    const blocker = task('blocker', []);
    void queue.run(waiter({}, 'hog'), blocker.start);
    const first = queue.run(waiter({}, 'hog'), async () => 'hog 1');
    const second = queue.run(waiter({}, 'hog'), async () => 'hog 2');
    const fair = queue.run(waiter({}, 'other'), async () => 'other');
    expect(isBusy(await second)).toBe(true);
    // Now one each: nobody has more to give up, so a third address is turned away.
    expect(isBusy(await queue.run(waiter({}, 'third'), async () => 'third'))).toBe(true);
    blocker.release();
    expect([await first, await fair]).toEqual(['hog 1', 'other']);
  });

  it('answers busy, with a Retry-After of at least a second, once a key waited its longest', async () => {
    vi.useFakeTimers();
    const queue = createVerifyQueue(options({ maxWaitMs: 3000 }));
    const blocker = task('blocker', []);
    void queue.run(waiter({}), blocker.start);
    let started = false;
    const late = queue.run(waiter({}), async () => void (started = true));
    vi.advanceTimersByTime(3000);
    const answer = await late;
    expect(isBusy(answer) && answer.retryAfterSeconds >= 1).toBe(true);
    blocker.release();
    await vi.runAllTimersAsync();
    expect(started).toBe(false);
    expect(queue.size()).toMatchObject({ running: 0, queued: 0 });
  });

  it('never asks upstream for a key whose callers all went away', async () => {
    const queue = createVerifyQueue(options());
    const blocker = task('blocker', []);
    void queue.run(waiter({}), blocker.start);
    let asked = false;
    const gone = queue.run(waiter({}, 'a', () => false), async () => void (asked = true));
    blocker.release();
    expect(isBusy(await gone)).toBe(true);
    expect(asked).toBe(false);
  });
});
