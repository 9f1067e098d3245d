import { describe, expect, it } from 'vitest';
import { createMemoryQueue, type EventBatch, type QueuedRequest } from '../../src/events/queue.js';

/** A request of `token` with these events' texts. */
const req = (token: string, texts: string[], extra: Partial<QueuedRequest> = {}): QueuedRequest => ({ token, events: texts.map((t) => Buffer.from(t)), ...extra });
/** A batch with its events as text. */
const read = (batch: EventBatch | null) => batch && { ...batch, events: batch.events.map(String) };

describe('createMemoryQueue', () => {
  it('accepts a request all or none within its bounds, in flight included', async () => {
    const queue = createMemoryQueue({ maxEvents: 3, maxBytes: 1024 });
    expect(await queue.append(req('t', ['1', '2']))).toBe(true);
    expect(await queue.append(req('t', ['3', '4']))).toBe(false);
    const batch = queue.take(10, 1024);
    expect(read(batch)?.events).toEqual(['1', '2']);
    expect(await queue.append(req('t', ['3', '4']))).toBe(false);
    queue.ack(batch!);
    expect(await queue.append(req('t', ['3', '4']))).toBe(true);
    expect(queue.depth()).toEqual({ events: 2, bytes: 2, inFlight: 0 });
  });

  it('refuses past the byte bound', async () => {
    const queue = createMemoryQueue({ maxEvents: 100, maxBytes: 10 });
    expect(await queue.append(req('t', ['12345', '123456']))).toBe(false);
    expect(queue.depth().events).toBe(0);
  });

  it('takes one token at a time, round-robin, bounded by count and bytes (one event at least)', async () => {
    const queue = createMemoryQueue({ maxEvents: 100, maxBytes: 1000 });
    await queue.append(req('a', ['a1', 'a2', 'a3']));
    await queue.append(req('b', ['b1']));
    expect(read(queue.take(2, 1000))).toMatchObject({ token: 'a', events: ['a1', 'a2'], bytes: 4 });
    expect(read(queue.take(2, 1000))).toMatchObject({ token: 'b', events: ['b1'] });
    expect(read(queue.take(2, 1))).toMatchObject({ token: 'a', events: ['a3'] });
    expect(queue.take(2, 1000)).toBeNull();
  });

  it('puts a released batch back ahead of newer events', async () => {
    const queue = createMemoryQueue({ maxEvents: 100, maxBytes: 1000 });
    await queue.append(req('a', ['1', '2']));
    const batch = queue.take(1, 1000)!;
    await queue.append(req('a', ['3']));
    queue.release(batch);
    expect(queue.waiting()).toBe(3);
    expect(read(queue.take(10, 1000))?.events).toEqual(['1', '2', '3']);
  });

  it('counts what a request holds until the last of its events is acked, through take and release, and says how much room is left', async () => {
    const queue = createMemoryQueue({ maxEvents: 10, maxBytes: 100 });
    // Events that are views of a 30-byte body hold all 30 bytes; another request holds 40.
    expect(await queue.append(req('t', ['{}', '{}'], { held: 30 }))).toBe(true);
    expect(await queue.append(req('t', ['{}'], { held: 40 }))).toBe(true);
    expect(queue.free()).toEqual({ events: 7, bytes: 30 });
    expect(await queue.append(req('t', ['{}'], { held: 31 }))).toBe(false);
    // A batch across both requests, released: each part stays counted against its own request.
    queue.release(queue.take(3, 100)!);
    const first = queue.take(1, 100)!;
    queue.ack(first);
    expect(queue.depth()).toEqual({ events: 2, bytes: 70, inFlight: 0 });
    const rest = queue.take(10, 100)!;
    expect(rest.bytes).toBe(4);
    queue.ack(rest);
    expect(queue.depth()).toEqual({ events: 0, bytes: 0, inFlight: 0 });
  });
});

describe('createMemoryQueue: historical-migration lanes', () => {
  it("keeps a token's historical events apart from its live ones, through take and release", async () => {
    const queue = createMemoryQueue({ maxEvents: 100, maxBytes: 1000 });
    await queue.append(req('a', ['l1']));
    await queue.append(req('a', ['h1', 'h2'], { historical: true }));
    await queue.append(req('a', ['l2']));
    const live = queue.take(10, 1000)!;
    expect(read(live)).toMatchObject({ token: 'a', historical: false, events: ['l1', 'l2'] });
    const historical = queue.take(1, 1000)!;
    expect(read(historical)).toMatchObject({ token: 'a', historical: true, events: ['h1'] });
    queue.release(historical);
    expect(read(queue.take(10, 1000))).toMatchObject({ token: 'a', historical: true, events: ['h1', 'h2'] });
    expect(queue.take(10, 1000)).toBeNull();
  });
});
