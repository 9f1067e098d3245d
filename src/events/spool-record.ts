/**
 * The events spool's on-disk formats. A segment is a sequence of records, each
 * `[u32 BE payload length][u32 BE CRC-32 of the payload][payload]`, the payload being one accepted request as
 * `{"t":"<token>","e":[<event>, ...]}`, with `"h":true` when it was a `historical_migration` batch (records
 * written before that field existed read as live events). An ack file is a sequence of 8-byte entries
 * `[u32 BE record index][u32 BE CRC-32 of those 4 bytes]`. Pure: decoding never throws; it stops at the first
 * record that is cut short (a torn write), fails its checksum or does not have the expected shape, and says so.
 */
import { crc32 } from 'node:zlib';
import { eventBounds } from './event-bounds.js';
import { eventSlices, ownCopy, skeletonOf } from './event-split.js';

/** One request's events as spooled. */
export interface SpoolRecord {
  readonly token: string;
  /** Each event's JSON text. */
  readonly events: readonly Buffer[];
  /** The request's `historical_migration` flag (absent: false). */
  readonly historical?: boolean;
  /** Bytes the events keep in memory (a decoded record: its payload, which they are slices of). */
  readonly held?: number;
}

/** Bytes before a record's payload. */
export const recordHeaderBytes = 8;
/**
 * Largest payload a record may claim: a request's events are at most its decoded text (100 MB, upstream's decoded
 * limit, capture-payload.ts) and the queue's bound; the record's envelope adds little.
 */
export const maxRecordPayloadBytes = 128 * 1024 * 1024;
/** Bytes of one ack entry. */
export const ackEntryBytes = 8;

/** A record's bytes as parts to write in turn, and their total. */
export interface EncodedRecord {
  readonly parts: readonly Buffer[];
  readonly length: number;
}

const comma = Buffer.from(',');
const tail = Buffer.from(']}');

/**
 * A record's bytes as the parts that make it: its header, envelope and the events themselves (never copied: a
 * request's events are up to tens of MB, and a joined copy would hold them twice while the record is written).
 */
export function encodeRecord(record: SpoolRecord): EncodedRecord {
  const flag = record.historical === true ? ',"h":true' : '';
  const head = Buffer.from(`{"t":${JSON.stringify(record.token)}${flag},"e":[`);
  const parts: Buffer[] = [Buffer.allocUnsafe(recordHeaderBytes), head];
  let crc = crc32(head);
  let length = head.length;
  record.events.forEach((event, i) => {
    if (i > 0) {
      parts.push(comma);
      crc = crc32(comma, crc);
      length += 1;
    }
    parts.push(event);
    crc = crc32(event, crc);
    length += event.length;
  });
  parts.push(tail);
  crc = crc32(tail, crc);
  length += tail.length;
  const header = parts[0] as Buffer;
  header.writeUInt32BE(length, 0);
  header.writeUInt32BE(crc, 4);
  return { parts, length: recordHeaderBytes + length };
}

/** What decoding a segment found: its whole records, and why it stopped early (null when it read to the end). */
export interface DecodedSegment {
  readonly records: readonly SpoolRecord[];
  /** Bytes of the whole records. */
  readonly validBytes: number;
  readonly damage: null | 'torn' | 'checksum' | 'shape';
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const eventsKey = Buffer.from('e');
/** Deeper than any event upstream's capture takes (serde's limit, intake.ts), so no accepted event is refused. */
const maxRecordDepth = 130;

const parsed = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
};

/**
 * A record's payload, its events kept as the bytes written (slices of a copy of the payload, which is all they
 * hold): each event and the envelope around them are parsed apart, so a record of a 19 MB batch never becomes one
 * tree of it in memory.
 */
function parsePayload(payload: Buffer): SpoolRecord | null {
  const bounds = eventBounds(payload, maxRecordDepth, eventsKey);
  if ('tooDeepAt' in bounds || bounds.root || bounds.ranges.length === 0) return null;
  const { ranges } = bounds;
  const envelope = parsed(skeletonOf(payload, ranges));
  if (!isRecord(envelope) || typeof envelope.t !== 'string' || envelope.t === '' || envelope.t.length > 200) return null;
  if (!Array.isArray(envelope.e) || envelope.e.length !== ranges.length / 2) return null;
  for (let i = 0; i < ranges.length; i += 2) {
    const event = parsed(payload.toString('utf8', ranges[i], ranges[i + 1]));
    if (!isRecord(event) || typeof event.event !== 'string' || event.event === '') return null;
  }
  const events = eventSlices(ownCopy(payload), ranges);
  const held = payload.length;
  return envelope.h === true ? { token: envelope.t, events, historical: true, held } : { token: envelope.t, events, held };
}

/** What decoding part of a segment found; `wanted` is how many bytes from `validBytes` the next record needs when the part ends inside it. */
export interface DecodedChunk extends DecodedSegment {
  readonly wanted: number;
}

/**
 * Decode the whole records at the start of `bytes`, part of a segment read from a record's start. When `final`
 * (the part reaches the segment's end), a record cut short is damage ('torn'); otherwise decoding stops before it
 * and `wanted` says how many bytes it needs.
 */
export function decodeRecords(bytes: Buffer, final: boolean): DecodedChunk {
  const records: SpoolRecord[] = [];
  let offset = 0;
  const stop = (damage: DecodedSegment['damage'], wanted = 0): DecodedChunk => ({ records, validBytes: offset, damage, wanted });
  while (offset < bytes.length) {
    if (bytes.length - offset < recordHeaderBytes) return final ? stop('torn') : stop(null, recordHeaderBytes);
    const length = bytes.readUInt32BE(offset);
    if (length > maxRecordPayloadBytes) return stop('shape');
    const end = offset + recordHeaderBytes + length;
    if (end > bytes.length) return final ? stop('torn') : stop(null, recordHeaderBytes + length);
    const payload = bytes.subarray(offset + recordHeaderBytes, end);
    if (crc32(payload) !== bytes.readUInt32BE(offset + 4)) return stop('checksum');
    const record = parsePayload(payload);
    if (record === null) return stop('shape');
    records.push(record);
    offset = end;
  }
  return stop(null);
}

/** Decode a whole segment's bytes. */
export function decodeSegment(bytes: Buffer): DecodedSegment {
  const { records, validBytes, damage } = decodeRecords(bytes, true);
  return { records, validBytes, damage };
}

/** An ack entry's bytes. */
export function encodeAck(index: number): Buffer {
  const entry = Buffer.alloc(ackEntryBytes);
  entry.writeUInt32BE(index, 0);
  entry.writeUInt32BE(crc32(entry.subarray(0, 4)), 4);
  return entry;
}

/** The record indexes an ack file marks done; entries cut short or failing their checksum are ignored. */
export function decodeAcks(bytes: Buffer): Set<number> {
  const acked = new Set<number>();
  for (let offset = 0; offset + ackEntryBytes <= bytes.length; offset += ackEntryBytes) {
    const index = bytes.subarray(offset, offset + 4);
    if (crc32(index) === bytes.readUInt32BE(offset + 4)) acked.add(index.readUInt32BE(0));
  }
  return acked;
}
