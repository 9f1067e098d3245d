/**
 * Reads a spool segment file a bounded part at a time: `readSegment` yields the whole records of each part of
 * about `chunkBytes` (a record larger than that is read alone, whole), so replaying a spool holds one part in
 * memory, never a segment or the whole spool. It stops at the first damaged record (cut short at the file's end,
 * failing its checksum, or of the wrong shape), yielding the damage with the records before it. Rejects when the
 * file cannot be opened or read; the handle is closed however the reading ends (`return()` included).
 * `createSpoolReplay` reads a previous run's segments in turn with it, skipping records their ack file marks done.
 */
import { basename } from 'node:path';
import { open, readFile } from 'node:fs/promises';
import type { Logger } from '../logger.js';
import { decodeAcks, decodeRecords, type DecodedSegment, type SpoolRecord } from './spool-record.js';

/** One part of a segment. */
export interface SegmentPart {
  /** Index in the segment of `records[0]`. */
  readonly first: number;
  readonly records: readonly SpoolRecord[];
  /** Set on the last part when the segment ends in a damaged record; `skippedBytes` are not read. */
  readonly damage: DecodedSegment['damage'];
  readonly skippedBytes: number;
  /** Bytes of the segment not read yet after this part. */
  readonly unread: number;
}

/** The parts of the segment file at `path`, oldest records first. */
export async function* readSegment(path: string, chunkBytes: number): AsyncGenerator<SegmentPart, void, undefined> {
  const file = await open(path, 'r');
  try {
    const size = (await file.stat()).size;
    let position = 0;
    let first = 0;
    let want = chunkBytes;
    while (position < size) {
      const length = Math.min(Math.max(chunkBytes, want), size - position);
      const buffer = Buffer.allocUnsafe(length);
      let read = 0;
      while (read < length) {
        const { bytesRead } = await file.read(buffer, read, length - read, position + read);
        if (bytesRead === 0) break;
        read += bytesRead;
      }
      const final = position + read >= size || read < length;
      const decoded = decodeRecords(buffer.subarray(0, read), final);
      position += decoded.validBytes;
      const damaged = decoded.damage !== null;
      yield { first, records: decoded.records, damage: decoded.damage, skippedBytes: damaged ? size - position : 0, unread: damaged ? 0 : size - position };
      if (damaged) return;
      first += decoded.records.length;
      want = decoded.wanted;
    }
  } finally {
    await file.close();
  }
}

/** The spool's account of a segment a previous run left (see spool.ts). */
export interface ReplaySegment {
  readonly n: number;
  readonly size: number;
  /** Records read and not acked yet. */
  pending: number;
}

/** A record read for replay, with its place. */
export interface ReplayRecord extends SpoolRecord {
  readonly ref: { readonly segment: number; readonly index: number };
}

/** Dependencies of createSpoolReplay. */
export interface SpoolReplayDeps<S extends ReplaySegment> {
  /** The segments to read, oldest first. */
  readonly unread: S[];
  readonly segmentPath: (n: number) => string;
  readonly ackPath: (n: number) => string;
  readonly chunkBytes: number;
  readonly logger: Logger;
  readonly damaged: () => void;
  /** A segment was read to its end (or to its damage). A segment that cannot be read is logged and never done. */
  readonly done: (segment: S) => void;
}

/** The reader of a previous run's segments; `next` is called once at a time. */
export function createSpoolReplay<S extends ReplaySegment>(deps: SpoolReplayDeps<S>) {
  const { unread, logger } = deps;
  let current: { segment: S; parts: AsyncGenerator<SegmentPart, void, undefined>; acked: Set<number>; unread: number } | null = null;
  let closed = false;
  let busy: Promise<unknown> = Promise.resolve();

  async function read(): Promise<ReplayRecord[] | null> {
    for (;;) {
      if (closed) return null;
      if (current === null) {
        const segment = unread.shift();
        if (segment === undefined) return null;
        const acks = await readFile(deps.ackPath(segment.n)).catch(() => Buffer.alloc(0));
        current = { segment, parts: readSegment(deps.segmentPath(segment.n), deps.chunkBytes), acked: decodeAcks(acks), unread: segment.size };
      }
      const { segment, acked } = current;
      const name = basename(deps.segmentPath(segment.n));
      let step: IteratorResult<SegmentPart, void>;
      try {
        step = await current.parts.next();
      } catch (error) {
        logger.error({ err: (error as Error).message, segment: name }, 'events spool: cannot read a segment to replay; it is kept for the next start');
        current = null;
        continue;
      }
      if (step.done) {
        current = null;
        deps.done(segment);
        continue;
      }
      const part = step.value;
      current.unread = part.unread;
      if (part.damage !== null) {
        deps.damaged();
        logger.warn({ segment: name, damage: part.damage, skippedBytes: part.skippedBytes, records: part.first + part.records.length }, 'events spool: a segment ends in a damaged record (an interrupted write?); the records after it are skipped');
      }
      const records: ReplayRecord[] = [];
      part.records.forEach((record, i) => {
        const index = part.first + i;
        if (acked.has(index)) return;
        segment.pending += 1;
        records.push({ ...record, ref: { segment: segment.n, index } });
      });
      if (records.length > 0) return records;
    }
  }

  return {
    /** The next records not acked, oldest first (one part's worth); null once all is read or after close. */
    next(): Promise<ReplayRecord[] | null> {
      const result = read();
      busy = result.catch(() => undefined);
      return result;
    },
    /** Bytes of the segments not read yet. */
    unreadBytes: (): number => (current?.unread ?? 0) + unread.reduce((sum, s) => sum + s.size, 0),
    /** Stop reading (waiting for a read under way): later calls of next() resolve null. */
    async close(): Promise<void> {
      closed = true;
      await busy;
      await current?.parts.return();
      current = null;
    },
  };
}
