import { describe, expect, it } from 'vitest';
import { createMemoryQueue } from '../../src/events/queue.js';

describe('createMemoryQueue', () => {
  it('accepts a request all or none within its bounds, in flight included', async () => {
    const queue = createMemoryQueue({ maxEvents: 3, maxBytes: 1024 });
    expect(await queue.append('t', ['1', '2'])).toBe(true);
    expect(await queue.append('t', ['3', '4'])).toBe(false);
    const batch = queue.take(10, 1024);
    expect(batch?.events).toEqual(['1', '2']);
    expect(await queue.append('t', ['3', '4'])).toBe(false);
    queue.ack(batch!);
    expect(await queue.append('t', ['3', '4'])).toBe(true);
    expect(queue.depth()).toEqual({ events: 2, bytes: 2, inFlight: 0 });
  });

  it('refuses past the byte bound', async () => {
    const queue = createMemoryQueue({ maxEvents: 100, maxBytes: 10 });
    expect(await queue.append('t', ['12345', '123456'])).toBe(false);
    expect(queue.depth().events).toBe(0);
  });

  it('takes one token at a time, round-robin, bounded by count and bytes (one event at least)', async () => {
    const queue = createMemoryQueue({ maxEvents: 100, maxBytes: 1000 });
    await queue.append('a', ['a1', 'a2', 'a3']);
    await queue.append('b', ['b1']);
    expect(queue.take(2, 1000)).toMatchObject({ token: 'a', events: ['a1', 'a2'], bytes: 4 });
    expect(queue.take(2, 1000)).toMatchObject({ token: 'b', events: ['b1'] });
    expect(queue.take(2, 1)).toMatchObject({ token: 'a', events: ['a3'] });
    expect(queue.take(2, 1000)).toBeNull();
  });

  it('puts a released batch back ahead of newer events', async () => {
    const queue = createMemoryQueue({ maxEvents: 100, maxBytes: 1000 });
    await queue.append('a', ['1', '2']);
    const batch = queue.take(1, 1000)!;
    await queue.append('a', ['3']);
    queue.release(batch);
    expect(queue.waiting()).toBe(3);
    expect(queue.take(10, 1000)?.events).toEqual(['1', '2', '3']);
  });

  it('counts the sizes the caller gives, and says how much room is left', async () => {
    const queue = createMemoryQueue({ maxEvents: 10, maxBytes: 100 });
    expect(await queue.append('t', ['{}', '{}'], [30, 40])).toBe(true);
    expect(queue.free()).toEqual({ events: 8, bytes: 30 });
    expect(queue.take(10, 50)).toMatchObject({ events: ['{}'], sizes: [30], bytes: 30 });
    expect(await queue.append('t', ['{}'], [31])).toBe(false);
  });
});

describe('createMemoryQueue: historical-migration lanes', () => {
  it("keeps a token's historical events apart from its live ones, through take and release", async () => {
    const queue = createMemoryQueue({ maxEvents: 100, maxBytes: 1000 });
    await queue.append('a', ['l1']);
    await queue.append('a', ['h1', 'h2'], undefined, true);
    await queue.append('a', ['l2']);
    const live = queue.take(10, 1000)!;
    expect(live).toMatchObject({ token: 'a', historical: false, events: ['l1', 'l2'] });
    const historical = queue.take(1, 1000)!;
    expect(historical).toMatchObject({ token: 'a', historical: true, events: ['h1'] });
    queue.release(historical);
    expect(queue.take(10, 1000)).toMatchObject({ token: 'a', historical: true, events: ['h1', 'h2'] });
    expect(queue.take(10, 1000)).toBeNull();
  });
});
