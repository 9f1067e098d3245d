import { afterEach, describe, expect, it, vi } from 'vitest';
import { createVerifyQueue, type Busy, type VerifyQueueOptions, type Waiter } from '../../src/auth/verify-queue.js';

const options = (extra: Partial<VerifyQueueOptions> = {}): VerifyQueueOptions => ({
  maxInFlight: 1,
  maxQueued: 100,
  maxPerFlow: 10,
  maxWaitMs: 60_000,
  now: () => 0,
  ...extra,
});
const waiter = (flow: object, live = () => true): Waiter => ({ flow, live });

/** A task that records its start and finishes when released. */
function task(name: string, started: string[]) {
  let release = (): void => undefined;
  const done = new Promise<string>((resolve) => (release = () => resolve(name)));
  return { start: () => (started.push(name), done), release: () => release() };
}

const isBusy = (value: unknown): value is Busy => typeof value === 'object' && value !== null && (value as Busy).kind === 'busy';

afterEach(() => vi.useRealTimers());

describe('the verification queue', () => {
  it('serves connections round-robin, one key each in turn', async () => {
    const queue = createVerifyQueue(options());
    const started: string[] = [];
    const [f1, f2] = [{}, {}];
    const blocker = task('blocker', started);
    const tasks = ['a1', 'a2', 'a3', 'b1'].map((n) => task(n, started));
    const results = [queue.run(waiter(f1), blocker.start), ...tasks.map((t, i) => queue.run(waiter(i < 3 ? f1 : f2), t.start))];
    blocker.release();
    for (const t of tasks) {
      await new Promise((r) => setImmediate(r));
      t.release();
    }
    await Promise.all(results);
    expect(started).toEqual(['blocker', 'a1', 'b1', 'a2', 'a3']);
  });

  it('serves a connection that sent a rejected key only after clean ones', async () => {
    const queue = createVerifyQueue(options());
    const started: string[] = [];
    const [flooder, newcomer] = [{}, {}];
    const blocker = task('blocker', started);
    const bogus = task('bogus', started);
    const valid = task('valid', started);
    const results = [queue.run(waiter(flooder), blocker.start), queue.run(waiter(flooder), bogus.start), queue.run(waiter(newcomer), valid.start)];
    queue.penalize(flooder);
    blocker.release();
    await new Promise((r) => setImmediate(r));
    valid.release();
    await new Promise((r) => setImmediate(r));
    bogus.release();
    await Promise.all(results);
    expect(started).toEqual(['blocker', 'valid', 'bogus']);
  });

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

  it('when full, makes room for a connection with less waiting by turning away the fullest one’s newest key', async () => {
    const queue = createVerifyQueue(options({ maxQueued: 2 }));
    const [hog, other, third] = [{}, {}, {}];
    const blocker = task('blocker', []);
    void queue.run(waiter(hog), blocker.start);
    const first = queue.run(waiter(hog), async () => 'hog 1');
    const second = queue.run(waiter(hog), async () => 'hog 2');
    const fair = queue.run(waiter(other), async () => 'other');
    expect(isBusy(await second)).toBe(true);
    // Now one each: nobody has more to give up, so a third connection is turned away.
    expect(isBusy(await queue.run(waiter(third), async () => 'third'))).toBe(true);
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
    expect(queue.size()).toEqual({ running: 0, queued: 0 });
  });

  it('never asks upstream for a key whose callers all went away', async () => {
    const queue = createVerifyQueue(options());
    const blocker = task('blocker', []);
    void queue.run(waiter({}), blocker.start);
    let asked = false;
    const gone = queue.run(waiter({}, () => false), async () => void (asked = true));
    blocker.release();
    expect(isBusy(await gone)).toBe(true);
    expect(asked).toBe(false);
  });
});
