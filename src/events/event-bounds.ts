/**
 * Where each event of a capture body is, found in one pass over its JSON bytes that also bounds its nesting
 * (so a hostile body is refused before the parser sees it): the objects of a top-level array, of the top-level
 * object's `batch` array (the last `batch` key, as JSON.parse keeps the last; a spool record's is `e`), or the
 * top-level object itself.
 * Byte offsets: each range is exactly the text of the value the parser reads there, byte for byte what the SDK
 * sent. Malformed JSON is not judged here (the parser that follows does that); the bounds are meaningful only
 * for a body the parser accepts. Pure, linear, no recursion; strings are skipped with a native search.
 */
import { backslash, closeBrace, closeBracket, openBrace, openBracket, quote } from '../http/json-depth.js';

/**
 * The events' byte ranges, `[start, end)` as pairs: `ranges[2i]`, `ranges[2i + 1]`. `root`: the one range is the
 * top-level object itself (it has no `batch` array holding an object); otherwise the ranges are the objects of the
 * events array (none when it holds no object).
 */
export interface EventBounds {
  readonly ranges: readonly number[];
  readonly root: boolean;
}

/** Nesting past the bound: `at` is the offset of the `{` or `[` that opens one level too many. */
export interface TooDeep {
  readonly tooDeepAt: number;
}

const comma = 0x2c;
const colon = 0x3a;

const isSpace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** The index of the quote closing the string opened at `open`, or -1 when it is not closed. */
function closingQuote(bytes: Buffer, open: number): number {
  let at = open;
  for (;;) {
    at = bytes.indexOf(quote, at + 1);
    if (at < 0) return -1;
    let escapes = 0;
    while (bytes[at - 1 - escapes] === backslash) escapes += 1;
    if (escapes % 2 === 0) return at;
  }
}

/** True when the key between `open` and `close` (its quotes) reads `key` (ASCII), escapes included. */
function isKey(bytes: Buffer, open: number, close: number, key: Buffer): boolean {
  const length = close - open - 1;
  if (length === key.length) return bytes.compare(key, 0, key.length, open + 1, close) === 0;
  // Escaped, the key is longer, up to 6 bytes a letter (`\u0062`); anything else is another key.
  if (length < key.length || length > 6 * key.length || !bytes.subarray(open + 1, close).includes(backslash)) return false;
  try {
    return JSON.parse(bytes.toString('utf8', open, close + 1)) === key.toString('latin1');
  } catch {
    return false;
  }
}

const batchKey = Buffer.from('batch');

/**
 * The byte ranges of the events in `bytes`, or where objects and arrays first nest deeper than `maxDepth`; `key`
 * names the root object's events array.
 */
export function eventBounds(bytes: Buffer, maxDepth: number, key: Buffer = batchKey): EventBounds | TooDeep {
  let depth = 0;
  let root: 'array' | 'object' | null = null;
  let rootStart = -1;
  let rootEnd = -1;
  // In the root object: whether the next string is a key, whether the last key was `batch`, and whether the value
  // after it is due (so its first byte says whether it is an array).
  let keyNext = false;
  let lastKeyBatch = false;
  let batchValueDue = false;
  // Depth of the array whose objects are the events (1: the root array; 2: the root object's `batch`), 0 when none.
  let eventsDepth = 0;
  let ranges: number[] = [];
  let eventStart = -1;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i] as number;
    if (isSpace(c)) continue;
    if (batchValueDue) {
      batchValueDue = false;
      ranges = [];
      if (c === openBracket && depth === 1) {
        eventsDepth = 2;
        if (++depth > maxDepth) return { tooDeepAt: i };
        continue;
      }
    }
    if (c === quote) {
      const close = closingQuote(bytes, i);
      if (close < 0) break;
      if (keyNext && depth === 1) {
        keyNext = false;
        lastKeyBatch = isKey(bytes, i, close, key);
      }
      i = close;
    } else if (c === openBrace || c === openBracket) {
      if (depth === 0 && root === null) {
        root = c === openBrace ? 'object' : 'array';
        rootStart = i;
        if (root === 'array') eventsDepth = 1;
        keyNext = root === 'object';
      }
      if (c === openBrace && eventsDepth > 0 && depth === eventsDepth) eventStart = i;
      if (++depth > maxDepth) return { tooDeepAt: i };
    } else if (c === closeBrace || c === closeBracket) {
      if (depth === 0) continue;
      depth -= 1;
      if (c === closeBrace && eventsDepth > 0 && depth === eventsDepth && eventStart >= 0) {
        ranges.push(eventStart, i + 1);
        eventStart = -1;
      }
      if (c === closeBracket && depth === eventsDepth - 1) eventsDepth = 0;
      if (depth === 0 && rootEnd < 0) rootEnd = i + 1;
    } else if (depth === 1 && root === 'object') {
      if (c === comma) keyNext = true;
      else if (c === colon) batchValueDue = lastKeyBatch;
    }
  }
  if (root === 'object' && eventsDepth === 0 && ranges.length === 0) return { ranges: [rootStart, rootEnd], root: true };
  return { ranges, root: false };
}
