/**
 * The events spool: accepted requests appended to segment files under `<FLAG_SIDECAR_SNAPSHOT_DIR>/events-spool`
 * (mode 0600, directory 0700), written and fsync'ed in groups (one fdatasync per `syncWindowMs` window for every
 * request appended in it), bounded by `maxBytes` of segment files. A record done with (forwarded, or refused by
 * upstream for good) gets an entry in its segment's ack file (no fsync: a lost ack only replays the record once
 * more); a segment every record of which is acked, and that is no longer written to, is deleted with its ack file,
 * so the directory holds at most `maxBytes` of segments plus their ack files. `openSpool` finds what a previous
 * run left (counted against the bound at once) and returns a reader of it: `replay.next()` reads the records not
 * acked a part at a time (`readSegment`), so replaying holds one part in memory, not the spool; a torn or damaged
 * tail (kill -9 mid-write, a bad disk) is skipped with a log line, never fatal. Appends go to a new segment. A
 * segment that cannot be read is logged and kept for the next run. A write that fails (a full disk) leaves
 * nothing of its records behind: the segment is cut back to its size before the write, so a restart never replays
 * a request that was answered 503 (the SDK sends it again), or, when even that fails, its records are acked; appends
 * then move to a new segment. A record's place is given once it is on disk.
 */
import { constants } from 'node:fs';
import { access, mkdir, open, readdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import { createSpoolReplay, type ReplayRecord } from './spool-reader.js';
import { encodeAck, encodeRecord, type EncodedRecord, type SpoolRecord } from './spool-record.js';

/** Where a record is: its segment's number and its index in that segment. */
export interface SpoolRef {
  readonly segment: number;
  readonly index: number;
}

/** A record a previous run left unacked. */
export type ReplayedRecord = ReplayRecord;

/** Dependencies of openSpool. */
export interface SpoolDeps {
  readonly dir: string;
  readonly maxBytes: number;
  readonly logger: Logger;
  /** How long an append waits for others to share its fsync. */
  readonly syncWindowMs?: number;
  /** Size past which appends go to a new segment (default: maxBytes / 16 within 1 MiB..64 MiB). */
  readonly segmentBytes?: number;
  /** Bytes read at a time when replaying (default 1 MiB; a larger record is read whole). */
  readonly replayChunkBytes?: number;
}

/** What a previous run left, read a part at a time. */
export interface SpoolReplay {
  /** The next records not acked, oldest first (one part's worth); null once all is read or the spool is closed. One call at a time. */
  next(): Promise<ReplayedRecord[] | null>;
  /** Bytes of segment files not read yet. */
  unreadBytes(): number;
}

interface Segment {
  readonly n: number;
  size: number;
  next: number;
  pending: number;
  active: boolean;
  /** Every record of it was read (always, for segments of this run). */
  read: boolean;
}

interface Write {
  readonly record: EncodedRecord;
  /** With the record's place once it is on disk, null when the write failed. */
  readonly done: (ref: SpoolRef | null) => void;
}

const segmentName = (n: number): string => `${String(n).padStart(10, '0')}.seg`;
const ackName = (n: number): string => `${String(n).padStart(10, '0')}.ack`;
const namePattern = /^(\d{10})\.(seg|ack)$/;

/** Open (create) the spool in `deps.dir`; resolves with it and the reader of what a previous run left. Rejects only when the directory cannot be created, read or written. */
export async function openSpool(deps: SpoolDeps) {
  const { dir, logger } = deps;
  const syncWindowMs = deps.syncWindowMs ?? 5;
  const segmentBytes = deps.segmentBytes ?? Math.min(64 * 1024 * 1024, Math.max(1024 * 1024, Math.floor(deps.maxBytes / 16)));
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await access(dir, constants.R_OK | constants.W_OK);
  const segments = new Map<number, Segment>();
  let totalBytes = 0;
  let damaged = 0;
  const names = await readdir(dir);
  const numbers = new Set<number>();
  for (const name of names) {
    const match = namePattern.exec(name);
    if (match) numbers.add(Number(match[1]));
  }
  const unread: Segment[] = [];
  for (const n of [...numbers].sort((a, b) => a - b)) {
    const size = await stat(join(dir, segmentName(n))).then((s) => s.size, () => null);
    if (size === null || size === 0) {
      if (size === 0) await unlink(join(dir, segmentName(n))).catch(() => undefined);
      await unlink(join(dir, ackName(n))).catch(() => undefined);
      continue;
    }
    const segment: Segment = { n, size, next: 0, pending: 0, active: false, read: false };
    segments.set(n, segment);
    unread.push(segment);
    totalBytes += size;
  }
  const newSegment = (n: number): Segment => {
    const segment: Segment = { n, size: 0, next: 0, pending: 0, active: true, read: true };
    segments.set(n, segment);
    return segment;
  };
  let active = newSegment(Math.max(0, ...numbers) + 1);
  const queued: Write[] = [];
  let timer: NodeJS.Timeout | null = null;
  let flushing: Promise<void> | null = null;
  let handle: { segment: Segment; file: FileHandle } | null = null;
  let ackChain: Promise<void> = Promise.resolve();

  const chain = (step: () => Promise<unknown>): void => {
    ackChain = ackChain.then(step).then(
      () => undefined,
      (error: Error) => logger.warn({ err: error.message }, 'events spool: cannot update an ack file or remove a segment'),
    );
  };
  /** Delete a segment no longer written to once every record of it is acked. */
  const retireIfDone = (segment: Segment): void => {
    if (segment.active || !segment.read || segment.pending > 0 || handle?.segment === segment || !segments.has(segment.n)) return;
    segments.delete(segment.n);
    totalBytes -= segment.size;
    chain(async () => {
      await unlink(join(dir, segmentName(segment.n))).catch(() => undefined);
      await unlink(join(dir, ackName(segment.n))).catch(() => undefined);
    });
  };
  const rotate = (): void => {
    active.active = false;
    const previous = active;
    active = newSegment(active.n + 1);
    retireIfDone(previous);
  };

  /**
   * Write `group` at the end of `segment` and fsync it. On failure the segment is cut back to its size before
   * (`undone`: the group's bytes are free again), or, when that fails too, the group's records are acked and stay
   * counted in the segment (`kept`). Either way appends move to a new segment.
   */
  async function writeGroup(segment: Segment, group: readonly EncodedRecord[]): Promise<'written' | 'undone' | 'kept'> {
    try {
      if (handle?.segment !== segment) {
        await closeHandle();
        handle = { segment, file: await open(join(dir, segmentName(segment.n)), 'a', 0o600) };
      }
      const length = group.reduce((sum, r) => sum + r.length, 0);
      // A short write (the file size limit, a full disk) is reported as a count, not an error.
      const { bytesWritten } = await handle.file.writev(group.flatMap((r) => r.parts));
      if (bytesWritten !== length) throw new Error(`wrote ${bytesWritten} of ${length} bytes`);
      await handle.file.datasync();
      return 'written';
    } catch (error) {
      logger.error({ err: (error as Error).message, segment: segmentName(segment.n) }, 'events spool: cannot write; the requests are answered 503 and nothing of them is kept');
      const file = handle?.segment === segment ? handle.file : null;
      const undone = file !== null && (await file.truncate(segment.size).then(() => file.datasync()).then(() => true, () => false));
      if (!undone) {
        // What the failed write left may hold whole records: acked, a restart skips them.
        logger.error({ segment: segmentName(segment.n) }, 'events spool: cannot cut a failed write back either; its records are marked done and appends move to a new segment');
        for (let i = 0; i < group.length; i++) chainAck(segment.n, segment.next + i);
        segment.next += group.length;
        segment.size += group.reduce((sum, r) => sum + r.length, 0);
      }
      // A new file may be writable where this one is not (its size limit).
      if (segment === active) rotate();
      await closeHandle();
      return undone ? 'undone' : 'kept';
    }
  }

  async function closeHandle(): Promise<void> {
    const current = handle;
    handle = null;
    if (current === null) return;
    await current.file.close().catch(() => undefined);
    retireIfDone(current.segment);
  }

  async function flush(): Promise<void> {
    timer = null;
    while (queued.length > 0) {
      const writes = queued.splice(0);
      let start = 0;
      while (start < writes.length) {
        if (active.size > 0 && active.size + (writes[start] as Write).record.length > segmentBytes) rotate();
        const segment = active;
        let end = start;
        let size = segment.size;
        while (end < writes.length && (end === start || size + (writes[end] as Write).record.length <= segmentBytes)) size += (writes[end++] as Write).record.length;
        const group = writes.slice(start, end);
        const outcome = await writeGroup(segment, group.map((w) => w.record));
        for (const w of group) {
          if (outcome === 'written') {
            w.done({ segment: segment.n, index: segment.next });
            segment.next += 1;
            segment.pending += 1;
            segment.size += w.record.length;
          } else {
            if (outcome === 'undone') totalBytes -= w.record.length;
            w.done(null);
          }
        }
        start = end;
      }
    }
    if (handle !== null && !handle.segment.active) await closeHandle();
  }

  const schedule = (): void => {
    if (timer !== null || flushing !== null) return;
    timer = setTimeout(() => {
      flushing = flush().finally(() => {
        flushing = null;
        if (queued.length > 0) schedule();
      });
    }, syncWindowMs);
  };

  const spool = {
    /**
     * Reserve room for `record` and append it: null when the spool is full (nothing kept), else a promise of its
     * place once it is on disk (fsync'ed), or of null when the write failed (nothing of it will be replayed).
     */
    append(record: SpoolRecord): Promise<SpoolRef | null> | null {
      const encoded = encodeRecord(record);
      if (totalBytes + encoded.length > deps.maxBytes) return null;
      totalBytes += encoded.length;
      const written = new Promise<SpoolRef | null>((resolve) => queued.push({ record: encoded, done: resolve }));
      schedule();
      return written;
    },
    /** Mark a record done; its segment is deleted once all of it is. */
    ack(ref: SpoolRef): void {
      const segment = segments.get(ref.segment);
      if (!segment) return;
      segment.pending -= 1;
      if (segment.pending <= 0 && !segment.active && segment.read) {
        retireIfDone(segment);
        return;
      }
      chainAck(segment.n, ref.index);
    },
    /** Bytes of segment files (acked records count until their segment is deleted). */
    bytes: (): number => totalBytes,
    /** Segments found damaged at open. */
    damaged: (): number => damaged,
    /** Write what is queued and the pending ack entries, then close the segment file (and stop replaying). */
    async close(): Promise<void> {
      await replay.close();
      if (timer !== null) clearTimeout(timer);
      await flushing;
      // The finished flush may have scheduled another: this one writes what is left instead.
      if (timer !== null) clearTimeout(timer);
      await flush();
      await closeHandle();
      await ackChain;
    },
  };

  /** Add a record's entry to its segment's ack file, after those before it. */
  function chainAck(n: number, index: number): void {
    const entry = encodeAck(index);
    chain(() => (segments.has(n) ? appendAck(n, entry) : Promise.resolve()));
  }

  async function appendAck(n: number, entry: Buffer): Promise<void> {
    const file = await open(join(dir, ackName(n)), 'a', 0o600);
    try {
      await file.write(entry);
    } finally {
      await file.close();
    }
  }

  const replay = createSpoolReplay({
    unread,
    segmentPath: (n) => join(dir, segmentName(n)),
    ackPath: (n) => join(dir, ackName(n)),
    chunkBytes: deps.replayChunkBytes ?? 1024 * 1024,
    logger,
    damaged: () => void (damaged += 1),
    done: (segment) => {
      segment.read = true;
      retireIfDone(segment);
    },
  });
  const reader: SpoolReplay = replay;
  return { spool, replay: reader };
}

/** An open spool. */
export type Spool = Awaited<ReturnType<typeof openSpool>>['spool'];
