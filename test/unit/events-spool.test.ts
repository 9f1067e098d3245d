import { appendFileSync, mkdirSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createMemoryQueue } from '../../src/events/queue.js';
import { openSpool, type ReplayedRecord, type Spool, type SpoolReplay } from '../../src/events/spool.js';
import { readSegment } from '../../src/events/spool-reader.js';
import { decodeAcks, decodeSegment, encodeAck, encodeRecord, type SpoolRecord } from '../../src/events/spool-record.js';
import { createSpooledQueue } from '../../src/events/spooled-queue.js';
import { tempDir } from '../support/temp-dir.js';

const logger = createLogger('silent');
const event = (uuid: string): Buffer => Buffer.from(JSON.stringify({ event: 'e', uuid, properties: { n: 1 } }));
/** A record's bytes as written. */
const recordBytes = (record: SpoolRecord): Buffer => Buffer.concat(encodeRecord(record).parts);
/** A decoded record as written: without what its events hold in memory. */
const asWritten = ({ held: _held, ...record }: SpoolRecord): SpoolRecord => record;
const limits = { maxEvents: 1000, maxBytes: 1024 * 1024 };

const nothing: SpoolReplay = { next: () => Promise.resolve(null), unreadBytes: () => 0 };
const queueOn = (spool: Spool, replay: SpoolReplay = nothing, bounds = limits) =>
  createSpooledQueue({ memory: createMemoryQueue(bounds), limits: bounds, spool, replay, logger, dropped: () => undefined });

async function open(dir: string, maxBytes = 1024 * 1024) {
  const { spool, replay } = await openSpool({ dir, maxBytes, logger, syncWindowMs: 1 });
  return { spool, queue: queueOn(spool), replay };
}

/** Every record `replay` gives. */
async function drain(replay: SpoolReplay): Promise<ReplayedRecord[]> {
  const all: ReplayedRecord[] = [];
  for (let part = await replay.next(); part !== null; part = await replay.next()) all.push(...part);
  return all;
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const uuidsOf = (events: readonly Buffer[]): string[] => events.map((e) => (JSON.parse(String(e)) as { uuid: string }).uuid);

describe('spool record format', () => {
  const a = { token: 'phc_a', events: [event('1'), event('2')] };
  const b = { token: 'phc_b', events: [event('3')] };
  const whole = Buffer.concat([recordBytes(a), recordBytes(b)]);
  const flipped = Buffer.from(whole);
  flipped[whole.length - 3] = (flipped[whole.length - 3] as number) ^ 0xff;
  it.each([
    ['whole records', whole, 2, null],
    ['a torn last record (cut mid-payload)', whole.subarray(0, whole.length - 5), 1, 'torn'],
    ['a torn last header', whole.subarray(0, recordBytes(a).length + 3), 1, 'torn'],
    ['a last record failing its checksum', flipped, 1, 'checksum'],
    ['an absurd length', Buffer.concat([recordBytes(a), Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0])]), 1, 'shape'],
    ['nothing', Buffer.alloc(0), 0, null],
  ] as const)('%s', (_name, bytes, records, damage) => {
    const decoded = decodeSegment(bytes);
    expect(decoded.records.length).toBe(records);
    expect(decoded.damage).toBe(damage);
    if (records > 0) expect(asWritten(decoded.records[0]!)).toEqual(a);
  });
  it("keeps a historical_migration request's flag, and reads a record without it as live", () => {
    const historical = { token: 'phc_a', events: [event('h1')], historical: true };
    expect(decodeSegment(Buffer.concat([recordBytes(historical), recordBytes(b)])).records.map(asWritten)).toEqual([historical, b]);
    expect(recordBytes(b).toString('utf8')).not.toContain('"h"');
  });
  it('replays each event byte for byte as written, in memory of its own record alone', () => {
    const sent = ['{ "event" : "a", "uuid": "1", "properties": {"x": "\\u00e9 ]}\\" [{", "n": 1.0} }', '{"event":"b","properties":{"s":"😀"}}'];
    const first = { token: 'phc_a', events: sent.map((e) => Buffer.from(e)) };
    const decoded = decodeSegment(Buffer.concat([recordBytes(first), recordBytes(b)])).records;
    expect(decoded.map((r) => r.events.map(String))).toEqual([sent, [String(b.events[0])]]);
    // Each record's events are views of a copy of its payload, not of the part read from disk (which holds both).
    const [one, two] = decoded;
    expect(one!.events[0]!.buffer).toBe(one!.events[1]!.buffer);
    expect(one!.events[0]!.buffer).not.toBe(two!.events[0]!.buffer);
    expect(one!.held).toBe(recordBytes(first).length - 8);
    expect(one!.events[0]!.buffer.byteLength).toBe(one!.held);
  });
  it.each([
    ['an event without a name', '{"t":"phc_a","e":[{"uuid":"1"}]}'],
    ['an event with an empty name', '{"t":"phc_a","e":[{"event":""}]}'],
    ['an event that is not JSON', '{"t":"phc_a","e":[{"event":"a",}]}'],
    ['an event that is not an object', '{"t":"phc_a","e":[{"event":"a"},1]}'],
    ['no events', '{"t":"phc_a","e":[]}'],
    ['no token', '{"e":[{"event":"a"}]}'],
    ['an envelope that is not JSON', '{"t":"phc_a","e":[{"event":"a"}],}'],
  ])('reads a record with %s as damage (shape)', (_what, payload) => {
    const bytes = Buffer.from(payload);
    const header = Buffer.alloc(8);
    header.writeUInt32BE(bytes.length, 0);
    header.writeUInt32BE(crc32(bytes), 4);
    expect(decodeSegment(Buffer.concat([recordBytes(b), header, bytes]))).toMatchObject({ damage: 'shape', records: [expect.objectContaining({ token: 'phc_b' })] });
  });
  it('ack entries: whole ones count, a torn or corrupt one is ignored', () => {
    const bad = encodeAck(9);
    bad[7] = (bad[7] as number) ^ 1;
    expect([...decodeAcks(Buffer.concat([encodeAck(0), encodeAck(5), bad, encodeAck(7).subarray(0, 5)]))]).toEqual([0, 5]);
  });
});

describe('reading a segment a part at a time', () => {
  const records = [1, 3, 40, 2, 1].map((events, r) => ({ token: 'phc_a', events: Array.from({ length: events }, (_, i) => event(`r${r}e${i}`)) }));
  const whole = Buffer.concat(records.map(recordBytes));
  const largest = Math.max(...records.map((r) => encodeRecord(r).length));
  it.each([
    ['parts of 1 byte (every record read alone, whole)', 1, whole, records.length, null],
    ['parts smaller than the largest record', largest - 1, whole, records.length, null],
    ['parts ending mid-record', 300, whole, records.length, null],
    ['one part for the whole segment', 1 << 20, whole, records.length, null],
    ['a torn tail, small parts', 100, whole.subarray(0, whole.length - 5), records.length - 1, 'torn'],
    ['a torn tail, one part', 1 << 20, whole.subarray(0, whole.length - 5), records.length - 1, 'torn'],
  ] as const)('%s', async (_name, chunkBytes, bytes, count, damage) => {
    const path = join(tempDir('segment-'), '0000000001.seg');
    writeFileSync(path, bytes);
    const got: unknown[] = [];
    let last = null as string | null;
    let index = 0;
    for await (const part of readSegment(path, chunkBytes)) {
      expect(part.first).toBe(index);
      index += part.records.length;
      got.push(...part.records.map(asWritten));
      last = part.damage;
    }
    expect(got).toEqual(records.slice(0, count));
    expect(last).toBe(damage);
  });
});

describe('replaying a spool larger than the memory queue', () => {
  it('holds at most the queue bound plus one part, and delivers every event once, in order, beside new appends', async () => {
    const dir = tempDir('spool-');
    const first = await openSpool({ dir, maxBytes: 4 << 20, logger, syncWindowMs: 1, segmentBytes: 64 * 1024 });
    const written: string[] = [];
    const writes: Array<Promise<unknown> | null> = [];
    for (let r = 0; r < 1500; r += 1) {
      const events = [event(`old-${r}-a`), event(`old-${r}-b`)];
      written.push(...uuidsOf(events));
      writes.push(first.spool.append({ token: 'phc_a', events }));
    }
    expect((await Promise.all(writes)).every((ref) => ref !== null)).toBe(true);
    await first.spool.close();
    const onDisk = readdirSync(dir).reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
    expect(onDisk).toBeGreaterThan(150 * 1024);

    const chunk = 4096;
    const bounds = { maxEvents: 100, maxBytes: 8 * 1024 };
    const second = await openSpool({ dir, maxBytes: onDisk + 4096, logger, syncWindowMs: 1, segmentBytes: 64 * 1024, replayChunkBytes: chunk });
    // The previous run's segments count against the bound before a byte of them is read.
    expect(second.spool.bytes()).toBe(onDisk);
    expect(second.replay.unreadBytes()).toBe(onDisk);
    const queue = queueOn(second.spool, second.replay, bounds);
    // The spool's bound counts those segments: a request past the room left is refused.
    expect(await queue.append({ token: 'phc_a', events: [Buffer.from(JSON.stringify({ event: 'e', uuid: 'too-big', properties: { pad: 'x'.repeat(5000) } }))] })).toBe(false);
    const delivered: string[] = [];
    const appended: string[] = [];
    let peak = 0;
    // Bounded, so that lost events fail the assertions below instead of hanging the test.
    for (let step = 0; step < 200_000 && (delivered.length < written.length + appended.length || appended.length < 20); step += 1) {
      peak = Math.max(peak, queue.depth().bytes);
      if (appended.length < 20 && delivered.length >= appended.length * 100) {
        const uuid = `new-${appended.length}`;
        if (await queue.append({ token: 'phc_a', events: [event(uuid)] })) appended.push(uuid);
      }
      const batch = queue.take(7, 1 << 20);
      if (batch === null) {
        await tick();
        continue;
      }
      delivered.push(...uuidsOf(batch.events));
      queue.ack(batch);
    }
    expect(peak).toBeLessThanOrEqual(bounds.maxBytes + chunk);
    expect(delivered.length).toBe(new Set(delivered).size);
    expect(delivered.filter((u) => u.startsWith('old-'))).toEqual(written);
    expect(delivered.filter((u) => u.startsWith('new-')).sort()).toEqual([...appended].sort());
    expect(second.replay.unreadBytes()).toBe(0);
    await second.spool.close();
    const third = await openSpool({ dir, maxBytes: onDisk, logger, syncWindowMs: 1 });
    expect(await drain(third.replay)).toEqual([]);
    await third.spool.close();
  });
});

describe('events spool', () => {
  it('replays what was not acked after partial acks, with uuids unchanged', async () => {
    const dir = tempDir('spool-');
    const first = await open(dir);
    expect(await first.queue.append({ token: 'phc_a', events: [event('a1'), event('a2'), event('a3')] })).toBe(true);
    expect(await first.queue.append({ token: 'phc_b', events: [event('b1')] })).toBe(true);
    expect(await first.queue.append({ token: 'phc_a', events: [event('a4')] })).toBe(true);
    // Forward a's first record only partly (a1, a2), then the whole b record: a's first record stays unacked.
    const partial = first.queue.take(2, 1 << 20);
    expect(partial && uuidsOf(partial.events)).toEqual(['a1', 'a2']);
    first.queue.ack(partial!);
    const b = first.queue.take(10, 1 << 20);
    expect(b && uuidsOf(b.events)).toEqual(['b1']);
    first.queue.ack(b!);
    await first.spool.close();
    const second = await open(dir);
    expect((await drain(second.replay)).map((r) => [r.token, uuidsOf(r.events)])).toEqual([
      ['phc_a', ['a1', 'a2', 'a3']],
      ['phc_a', ['a4']],
    ]);
    await second.spool.close();
    const third = await openSpool({ dir, maxBytes: 1 << 20, logger, syncWindowMs: 1 });
    const queue = queueOn(third.spool, third.replay);
    while (queue.waiting() < 4) await tick();
    const all = queue.take(10, 1 << 20);
    expect(all && uuidsOf(all.events)).toEqual(['a1', 'a2', 'a3', 'a4']);
    expect(queue.depth().events).toBe(4);
    queue.ack(all!);
    await third.spool.close();
    const fourth = await open(dir);
    expect(await drain(fourth.replay)).toEqual([]);
    await fourth.spool.close();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('replays historical_migration events in their own lane, flag kept', async () => {
    const dir = tempDir('spool-');
    const first = await open(dir);
    expect(await first.queue.append({ token: 'phc_a', events: [event('l1')] })).toBe(true);
    expect(await first.queue.append({ token: 'phc_a', events: [event('h1')], historical: true })).toBe(true);
    await first.spool.close();
    const second = await openSpool({ dir, maxBytes: 1 << 20, logger, syncWindowMs: 1 });
    const queue = queueOn(second.spool, second.replay);
    while (queue.waiting() < 2) await tick();
    const live = queue.take(10, 1 << 20)!;
    const historical = queue.take(10, 1 << 20)!;
    expect([live.historical, uuidsOf(live.events)]).toEqual([false, ['l1']]);
    expect([historical.historical, uuidsOf(historical.events)]).toEqual([true, ['h1']]);
    queue.ack(live);
    queue.ack(historical);
    await second.spool.close();
  });

  it('skips a torn last record at start-up and keeps the records before it', async () => {
    const dir = tempDir('spool-');
    const first = await open(dir);
    expect(await first.queue.append({ token: 'phc_a', events: [event('x1')] })).toBe(true);
    expect(await first.queue.append({ token: 'phc_a', events: [event('x2')] })).toBe(true);
    await first.spool.close();
    const segment = readdirSync(dir).find((n) => n.endsWith('.seg'))!;
    const size = statSync(join(dir, segment)).size;
    truncateSync(join(dir, segment), size - 4);
    appendFileSync(join(dir, segment), Buffer.from([1, 2]));
    const second = await open(dir);
    expect((await drain(second.replay)).map((r) => uuidsOf(r.events))).toEqual([['x1']]);
    expect(second.spool.damaged()).toBe(1);
    expect(await second.queue.append({ token: 'phc_a', events: [event('x3')] })).toBe(true);
    await second.spool.close();
    const third = await open(dir);
    expect((await drain(third.replay)).map((r) => uuidsOf(r.events))).toEqual([['x1'], ['x3']]);
    await third.spool.close();
  });

  it('writes files 0600, refuses past its bound, and deletes segments once all is acked', async () => {
    const dir = tempDir('spool-');
    const { spool } = await openSpool({ dir, maxBytes: 400, logger, syncWindowMs: 1, segmentBytes: 150 });
    const queue = queueOn(spool);
    let accepted = 0;
    for (let i = 0; i < 20; i += 1) if (await queue.append({ token: 'phc_a', events: [event(`u${i}`)] })) accepted += 1;
    expect(accepted).toBeGreaterThan(1);
    expect(accepted).toBeLessThan(20);
    expect(spool.bytes()).toBeLessThanOrEqual(400);
    for (const name of readdirSync(dir)) expect(statSync(join(dir, name)).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const batch = queue.take(1000, 1 << 20);
    queue.ack(batch!);
    expect(await queue.append({ token: 'phc_a', events: [event('after')] })).toBe(true);
    await spool.close();
    const segments = readdirSync(dir).filter((n) => n.endsWith('.seg'));
    expect(segments.length).toBe(1);
    expect(decodeSegment(readFileSync(join(dir, segments[0]!))).records.map((r) => uuidsOf(r.events))).toEqual([['after']]);
  });

  it('gives the replayed backlog the room acks free before new requests', async () => {
    const dir = tempDir('spool-');
    const first = await open(dir);
    const eight = (tag: string): Buffer[] => Array.from({ length: 8 }, (_, i) => event(`${tag}${i}`));
    expect(await first.queue.append({ token: 'phc_a', events: eight('a') })).toBe(true);
    expect(await first.queue.append({ token: 'phc_a', events: eight('b') })).toBe(true);
    await first.spool.close();
    const second = await openSpool({ dir, maxBytes: 1 << 20, logger, syncWindowMs: 1 });
    const queue = queueOn(second.spool, second.replay, { maxEvents: 10, maxBytes: 1 << 20 });
    while (queue.waiting() < 8) await tick();
    // a's 8 events are queued, b's 8 wait for room: a new request must not take it.
    expect(await queue.append({ token: 'phc_a', events: [event('new1'), event('new2')] })).toBe(false);
    const a = queue.take(10, 1 << 20);
    queue.ack(a!);
    expect(await queue.append({ token: 'phc_a', events: [event('new1'), event('new2')] })).toBe(true);
    expect(uuidsOf(queue.take(10, 1 << 20)!.events)).toEqual([...uuidsOf(eight('b')), 'new1', 'new2']);
    await second.spool.close();
  });

  it('keeps a segment it cannot read for the next start, and replays the others', async () => {
    const dir = tempDir('spool-');
    const first = await open(dir);
    expect(await first.queue.append({ token: 'phc_a', events: [event('k1')] })).toBe(true);
    await first.spool.close();
    // A segment numbered before it that reads fail on (a directory: EISDIR).
    mkdirSync(join(dir, '0000000000.seg'));
    const onDisk = readdirSync(dir).reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
    const second = await open(dir);
    expect((await drain(second.replay)).map((r) => uuidsOf(r.events))).toEqual([['k1']]);
    // Still counted against the bound (k1's segment too: not acked).
    expect(second.spool.bytes()).toBe(onDisk);
    await second.spool.close();
    expect(readdirSync(dir)).toContain('0000000000.seg');
  });

  it('ignores files that are not its own and never crashes on a garbage segment', async () => {
    const dir = tempDir('spool-');
    writeFileSync(join(dir, '0000000003.seg'), 'garbage that is no record');
    writeFileSync(join(dir, 'notes.txt'), 'x');
    const { replay, spool } = await open(dir);
    expect(await drain(replay)).toEqual([]);
    expect(spool.damaged()).toBe(1);
    await spool.close();
  });
});
