/**
 * A JSON body cut at its events' byte ranges (event-bounds.ts), so that each event and the text around them can be
 * parsed apart (memory holds one event's tree at a time, never the body's) and each event kept as the bytes sent,
 * without a copy. Pure.
 */

/** Each event's bytes: views of `payload` (they keep all of it alive; see ownCopy). */
export function eventSlices(payload: Buffer, ranges: readonly number[]): Buffer[] {
  const events: Buffer[] = [];
  for (let i = 0; i < ranges.length; i += 2) events.push(payload.subarray(ranges[i], ranges[i + 1]));
  return events;
}

/**
 * The payload's text with each event replaced by `{}`: the envelope around the events. The payload is valid JSON
 * exactly when this and every event are, since each range is a whole value of one array.
 */
export function skeletonOf(payload: Buffer, ranges: readonly number[]): string {
  let skeleton = '';
  let from = 0;
  for (let i = 0; i < ranges.length; i += 2) {
    skeleton += `${payload.toString('utf8', from, ranges[i])}{}`;
    from = ranges[i + 1] as number;
  }
  return skeleton + payload.toString('utf8', from);
}

/**
 * A copy of `bytes` in memory of its own: a view of a larger buffer (a spool part read from disk) would keep all of
 * that alive for as long as an event sliced from it is queued. Never from Node's shared pool, for the same reason.
 */
export function ownCopy(bytes: Buffer): Buffer {
  const copy = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(copy);
  return copy;
}
