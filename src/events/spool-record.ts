/**
 * The events spool's on-disk formats. A segment is a sequence of records, each
 * `[u32 BE payload length][u32 BE CRC-32 of the payload][payload]`, the payload being one accepted request as
 * `{"t":"<token>","e":[<event>, ...]}`, with `"h":true` when it was a `historical_migration` batch (records
 * written before that field existed read as live events). An ack file is a sequence of 8-byte entries
 * `[u32 BE record index][u32 BE CRC-32 of those 4 bytes]`. Pure: decoding never throws; it stops at the first
 * record that is cut short (a torn write), fails its checksum or does not have the expected shape, and says so.
 */
import { crc32 } from 'node:zlib';

/** One request's events as spooled. */
export interface SpoolRecord {
  readonly token: string;
  /** Each event's JSON text. */
  readonly events: readonly string[];
  /** The request's `historical_migration` flag (absent: false). */
  readonly historical?: boolean;
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

/**
 * A record's bytes, written straight into one buffer: a request's events are up to tens of MB, and building the
 * payload as a string first would hold it several times over (the joined text, its bytes, the framed copy).
 */
export function encodeRecord(record: SpoolRecord): Buffer {
  const flag = record.historical === true ? ',"h":true' : '';
  const head = `{"t":${JSON.stringify(record.token)}${flag},"e":[`;
  let length = Buffer.byteLength(head) + 2 + Math.max(0, record.events.length - 1);
  for (const event of record.events) length += Buffer.byteLength(event);
  const bytes = Buffer.allocUnsafe(recordHeaderBytes + length);
  let at = recordHeaderBytes + bytes.write(head, recordHeaderBytes);
  record.events.forEach((event, i) => {
    if (i > 0) bytes[at++] = 0x2c;
    at += bytes.write(event, at);
  });
  bytes.write(']}', at);
  bytes.writeUInt32BE(length, 0);
  bytes.writeUInt32BE(crc32(bytes.subarray(recordHeaderBytes)), 4);
  return bytes;
}

/** What decoding a segment found: its whole records, and why it stopped early (null when it read to the end). */
export interface DecodedSegment {
  readonly records: readonly SpoolRecord[];
  /** Bytes of the whole records. */
  readonly validBytes: number;
  readonly damage: null | 'torn' | 'checksum' | 'shape';
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function parsePayload(payload: Buffer): SpoolRecord | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload.toString('utf8'));
  } catch {
    return null;
  }
  if (!isRecord(parsed) || typeof parsed.t !== 'string' || parsed.t === '' || parsed.t.length > 200 || !Array.isArray(parsed.e) || parsed.e.length === 0) return null;
  if (!parsed.e.every((event) => isRecord(event) && typeof event.event === 'string' && event.event !== '')) return null;
  const events = parsed.e.map((event) => JSON.stringify(event));
  return parsed.h === true ? { token: parsed.t, events, historical: true } : { token: parsed.t, events };
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
