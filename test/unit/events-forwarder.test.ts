import { describe, expect, it } from 'vitest';
import { createForwarder, forwardConcurrency } from '../../src/events/forwarder.js';
import { createMemoryQueue, type QueuedRequest } from '../../src/events/queue.js';
import { createLogger } from '../../src/logger.js';
import type { UpstreamResult } from '../../src/upstream/client.js';

/** A request of `token` with these events' texts. */
const req = (token: string, texts: string[], historical = false): QueuedRequest => ({ token, events: texts.map((t) => Buffer.from(t)), historical });
const response = (status: number, headers: Record<string, string> = {}): UpstreamResult => ({ kind: 'response', status, headers, body: Buffer.from('x') });

type Answer = (events: string[], signal: AbortSignal) => UpstreamResult | Promise<UpstreamResult>;

function setup(answers: Answer[]) {
  const queue = createMemoryQueue({ maxEvents: 1000, maxBytes: 1 << 20 });
  const sent: Array<{ at: number; events: string[]; historical: unknown }> = [];
  const seen = { forwarded: 0, dropped: 0, retried: 0 };
  const forwarder = createForwarder({
    queue,
    send: (body, signal) => {
      const parsed = JSON.parse(body.toString()) as { batch: unknown[]; historical_migration?: unknown };
      const events = parsed.batch.map((e) => JSON.stringify(e));
      sent.push({ at: Date.now(), events, historical: parsed.historical_migration });
      const answer = answers.shift() ?? (() => response(200));
      return Promise.resolve(answer(events, signal));
    },
    batchMaxEvents: 4,
    batchMaxBytes: 1 << 20,
    lingerMs: 5,
    retryMinMs: 20,
    retryMaxMs: 40,
    logger: createLogger('silent'),
    observer: {
      forwarded: (n) => void (seen.forwarded += n),
      dropped: (n) => void (seen.dropped += n),
      retried: (n) => void (seen.retried += n),
    },
    now: Date.now,
    random: () => 0.5,
  });
  return { queue, sent, seen, forwarder };
}

const until = async (check: () => boolean): Promise<void> => {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('createForwarder', () => {
  it('retries a failed batch with backoff and honours Retry-After, then acks it', async () => {
    const { queue, sent, seen, forwarder } = setup([
      () => ({ kind: 'failure', cause: 'connect', code: 'ECONNREFUSED', message: 'refused' }),
      () => response(429, { 'retry-after': '1' }),
    ]);
    forwarder.start();
    await queue.append(req('t', ['1', '2']));
    await until(() => seen.forwarded === 2);
    expect(sent).toHaveLength(3);
    expect((sent[2]?.at ?? 0) - (sent[1]?.at ?? 0)).toBeGreaterThanOrEqual(950);
    expect(seen.retried).toBe(4);
    expect(queue.depth().events).toBe(0);
    expect(await forwarder.stop(100)).toBe(0);
  });

  it('splits a batch upstream finds too large (413) and drops only an event refused alone', async () => {
    const { queue, sent, seen, forwarder } = setup([() => response(413), () => response(413), () => response(200), () => response(400), () => response(200)]);
    forwarder.start();
    await queue.append(req('t', ['1', '2', '3', '4']));
    await until(() => seen.forwarded + seen.dropped === 4);
    expect(sent.map((s) => s.events)).toEqual([['1', '2', '3', '4'], ['1', '2'], ['1'], ['2'], ['3', '4']]);
    expect(seen).toMatchObject({ forwarded: 3, dropped: 1 });
    expect(queue.depth().events).toBe(0);
    await forwarder.stop(100);
  });

  it('sends historical_migration events in batches of their own that carry the flag, halves included', async () => {
    const { queue, sent, seen, forwarder } = setup([() => response(400)]);
    await queue.append(req('t', ['1', '2'], true));
    await queue.append(req('t', ['3']));
    forwarder.start();
    await until(() => seen.forwarded === 3);
    const byEvents = new Map(sent.map((s) => [s.events.join(','), s.historical]));
    expect(byEvents).toEqual(new Map<string, unknown>([['1,2', true], ['1', true], ['2', true], ['3', undefined]]));
    await forwarder.stop(100);
  });

  it('on stop forwards what is queued without lingering, and reports what it could not forward in the budget', async () => {
    const first = setup([]);
    await first.queue.append(req('t', ['1']));
    expect(await first.forwarder.stop(1000)).toBe(0);
    expect(first.seen.forwarded).toBe(1);
    const down = setup(Array.from({ length: 100 }, () => () => response(503)));
    down.forwarder.start();
    await down.queue.append(req('t', ['1', '2']));
    expect(await down.forwarder.stop(100)).toBe(2);
    expect(down.queue.depth()).toMatchObject({ events: 2, inFlight: 0 });
  });

  it('keeps several batches in flight and acks or retries each as it completes, in any order', async () => {
    const answered: Array<(result: UpstreamResult) => void> = [];
    const held: Answer = () => new Promise((resolve) => answered.push(resolve));
    const { queue, sent, seen, forwarder } = setup(Array.from({ length: forwardConcurrency }, () => held));
    const events = Array.from({ length: 4 * forwardConcurrency }, (_, i) => String(i));
    await queue.append(req('t', events));
    forwarder.start();
    await until(() => answered.length === forwardConcurrency);
    expect(queue.depth()).toMatchObject({ events: events.length, inFlight: events.length });
    answered[forwardConcurrency - 1]?.(response(200));
    await until(() => seen.forwarded === 4);
    expect(queue.depth()).toMatchObject({ events: events.length - 4, inFlight: events.length - 4 });
    answered[0]?.(response(503));
    for (const answer of answered.slice(1, -1)) answer(response(200));
    await until(() => seen.forwarded === events.length);
    expect(seen.retried).toBe(4);
    expect(sent.flatMap((s) => s.events).sort()).toEqual([...events, ...events.slice(0, 4)].sort());
    expect(queue.depth()).toEqual({ events: 0, bytes: 0, inFlight: 0 });
    expect(await forwarder.stop(100)).toBe(0);
  });

  it('holds every batch back for the backoff after a failure, even when new events arrive', async () => {
    const { queue, sent, seen, forwarder } = setup([() => response(503, { 'retry-after': '1' })]);
    forwarder.start();
    await queue.append(req('t', ['1']));
    await until(() => seen.retried === 1);
    for (let i = 2; i < 40; i++) await queue.append(req('t', [String(i)]));
    await until(() => seen.forwarded === 39);
    expect((sent[1]?.at ?? 0) - (sent[0]?.at ?? 0)).toBeGreaterThanOrEqual(950);
    await forwarder.stop(100);
  });

  it('on stop aborts every batch in flight and puts all of them back', async () => {
    const hang: Answer = (_events, signal) =>
      new Promise((resolve) => signal.addEventListener('abort', () => resolve({ kind: 'failure', cause: 'timeout', code: 'ABORT', message: 'aborted' })));
    const { queue, sent, forwarder } = setup(Array.from({ length: forwardConcurrency }, () => hang));
    await queue.append(req('t', Array.from({ length: 4 * forwardConcurrency + 1 }, (_, i) => String(i))));
    forwarder.start();
    await until(() => sent.length === forwardConcurrency);
    expect(await forwarder.stop(50)).toBe(4 * forwardConcurrency + 1);
    expect(queue.depth()).toMatchObject({ events: 4 * forwardConcurrency + 1, inFlight: 0 });
    expect(queue.waiting()).toBe(4 * forwardConcurrency + 1);
  });
});
