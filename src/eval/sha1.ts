/**
 * The first 60 bits of SHA-1 of a short string's UTF-8 bytes, in JavaScript: the bucketing hash's input
 * (`"{key}.{value}{salt}"`) is a few dozen bytes, where node:crypto's one-shot `hash` spends most of its time
 * crossing into C++ and allocating the digest (measured: 2–5× slower than this for 20–100 byte inputs). Bytes are
 * encoded as node:crypto encodes a string (UTF-8, an unpaired surrogate as U+FFFD), so the digest is the same
 * bit for bit (test/unit/eval-sha1.test.ts checks it against node:crypto for every length and block boundary).
 * Inputs of more than `maxShortBytes` UTF-8 bytes give null: the caller hashes those with node:crypto.
 *
 * The message is a head encoded once (`messageHeads`: a flag's `"{key}."`, kept with the compiled flags) and a
 * tail (the bucketing value and salt, the same for every flag of a request): the tail's encoding is remembered
 * for the last value given per salt, as big-endian words at each of the four byte offsets it can start at, so
 * hashing one flag splices words and runs the compression (sha1-block.ts), no per-byte work.
 */
import { sha1Compress } from './sha1-block.js';
import { wasmSha1x4 } from './sha1-simd.js';
import { wasmSha1 } from './sha1-wasm.js';

/** The longest input hashed here: four 64-byte blocks, less the 0x80 marker and the 8-byte length. */
export const maxShortBytes = 4 * 64 - 9;

/**
 * Message heads, one after another in one array (a snapshot's flag keys take one object, not one each): each is
 * its UTF-8 byte length, then its bytes as big-endian words (the last one zero-padded); `at[i]`: where the head of
 * the i-th text starts.
 */
export interface MessageHeads {
  readonly words: Int32Array;
  readonly at: readonly number[];
}

// Scratch space and the tail memos, only ever read for the string they were computed from (a pure cache: nothing
// of one call changes another's result): the UTF-8 bytes being encoded, three zero bytes ahead of them; the
// padded message as words; per slot (0 and 1: no salt, 2 and 3: a salt), the tail's text, salt, byte length and
// words at offsets 0–3 (`tailStride` words each). Two slots per salt: a request's person flags bucket by the
// distinct id and its group flags by a group key, in any order, and one slot re-encoded the tail at each switch.
const bytes = new Uint8Array(3 + 4 * 64 + 4);
// The message and the tails live in the WebAssembly module's memory when it hashes (sha1-wasm.ts).
const message = wasmSha1 !== null ? wasmSha1.message : new Int32Array(4 * 16);
const wasmSplice = wasmSha1 !== null ? wasmSha1.splice : null;
const tailStride = 64;
const tailText = ['', '', '', ''];
const tailSalt = ['', '', '', ''];
const tailLengths = new Int32Array(4);
/** Per salt kind (0: none, 1: a salt), the slot of its pair last used: a new tail replaces the other one. */
const lastUsed = new Int32Array([0, 2]);
const tailWords = wasmSha1 !== null ? wasmSha1.tails : ([0, 1, 2, 3].map(() => new Int32Array(4 * tailStride)) as readonly Int32Array[]);
// Every slot starts as the empty tail without a salt, encoded: the marker alone.
for (const words of tailWords) for (let a = 0; a < 4; a++) words[a * tailStride] = 0x80 << (24 - 8 * a);

/** UTF-8 of `text` into `bytes` from `at`; the position after it, or -1 past `limit`. */
function encode(text: string, at: number, limit: number): number {
  let n = at;
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      if (n === limit) return -1;
      bytes[n++] = c;
    } else if (c < 0x800) {
      if (n + 2 > limit) return -1;
      bytes[n++] = 0xc0 | (c >> 6);
      bytes[n++] = 0x80 | (c & 0x3f);
    } else {
      const next = text.charCodeAt(i + 1);
      if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        if (n + 4 > limit) return -1;
        c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
        bytes[n++] = 0xf0 | (c >> 18);
        bytes[n++] = 0x80 | ((c >> 12) & 0x3f);
        bytes[n++] = 0x80 | ((c >> 6) & 0x3f);
        bytes[n++] = 0x80 | (c & 0x3f);
        continue;
      }
      if (n + 3 > limit) return -1;
      if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd; // an unpaired surrogate, as node encodes it
      bytes[n++] = 0xe0 | (c >> 12);
      bytes[n++] = 0x80 | ((c >> 6) & 0x3f);
      bytes[n++] = 0x80 | (c & 0x3f);
    }
  }
  return n;
}

const wordAt = (i: number): number =>
  ((bytes[i] as number) << 24) | ((bytes[i + 1] as number) << 16) | ((bytes[i + 2] as number) << 8) | (bytes[i + 3] as number);

/**
 * `texts` encoded as the starts of messages (see MessageHeads). Of a text past maxShortBytes only a length past it
 * is kept (any message starting with it gives null).
 */
export function messageHeads(texts: readonly string[]): MessageHeads {
  const words: number[] = [];
  const at = texts.map((text) => {
    const start = words.length;
    const end = encode(text, 3, 3 + maxShortBytes);
    if (end < 0) {
      words.push(maxShortBytes + 1);
      return start;
    }
    bytes.fill(0, end, end + 4);
    words.push(end - 3);
    for (let i = 3; i < end; i += 4) words.push(wordAt(i));
    return start;
  });
  // Four words after the last head: sha1First60Of4 reads a head's first four words whatever its length.
  words.push(0, 0, 0, 0);
  return { words: Int32Array.from(words), at };
}

/** The memo slot holding `value + salt`'s tail, encoded now if none does; -1 when it is too long. */
function tailSlot(value: string, salt: string): number {
  const pair = salt === '' ? 0 : 2;
  // On a hit the memo keeps the caller's string: an equal one from an earlier request (its body parsed anew) is
  // compared character by character, the same object at once (~40 instructions a hash over HTTP).
  if (tailText[pair] === value && tailSalt[pair] === salt) {
    tailText[pair] = value;
    return (lastUsed[pair >> 1] = pair);
  }
  if (tailText[pair + 1] === value && tailSalt[pair + 1] === salt) {
    tailText[pair + 1] = value;
    return (lastUsed[pair >> 1] = pair + 1);
  }
  let end = encode(value, 3, 3 + maxShortBytes);
  if (end >= 0 && salt !== '') end = encode(salt, end, 3 + maxShortBytes);
  if (end < 0) return -1;
  bytes[end] = 0x80;
  bytes.fill(0, end + 1, end + 8);
  const slot = lastUsed[pair >> 1] === pair ? pair + 1 : pair;
  const words = tailWords[slot] as Int32Array;
  // At offset a the first word holds a zero bytes then the tail: read from a bytes before it (the leading zeros).
  const count = (end - 3 + 1 + 3 + 3) >> 2;
  for (let a = 0; a < 4; a++) for (let j = 0; j < count; j++) words[a * tailStride + j] = wordAt(3 - a + 4 * j);
  tailText[slot] = value;
  tailSalt[slot] = salt;
  tailLengths[slot] = end - 3;
  lastUsed[pair >> 1] = slot;
  return slot;
}

/**
 * SHA-1 of the bytes of the head at `at` of `heads` (MessageHeads' words), then `value`'s UTF-8, then `salt`'s: its first 32 bits (unsigned) and the next 28 as
 * `high * 2^28 + low`, rounded once to a double, or null when the whole is longer than maxShortBytes. Each part is
 * encoded on its own, so this is the hash of the three strings joined unless a surrogate pair is split between
 * two of them (then two U+FFFD): never when the head ends and the salt starts with anything but a surrogate.
 */
export function sha1First60Of(heads: Int32Array, at: number, value: string, salt: string): number | null {
  const headLength = heads[at] as number;
  if (headLength > maxShortBytes) return null;
  const slot = tailSlot(value, salt);
  if (slot < 0) return null;
  const tailLength = tailLengths[slot] as number;
  const length = headLength + tailLength;
  if (length > maxShortBytes) return null;
  const w = message;
  if (wasmSplice !== null) {
    // The head's words (its partial last one included), the rest in WebAssembly. The first four go as arguments:
    // four loads of one array in a row are checked once, where a copy loop checks both arrays at each word.
    const headWords = (headLength + 3) >> 2;
    const first = at + 1;
    for (let j = 4; j < headWords; j++) w[j] = heads[first + j] as number;
    return wasmSplice(
      headLength,
      slot,
      tailLength,
      headWords > 0 ? (heads[first] as number) : 0,
      headWords > 1 ? (heads[first + 1] as number) : 0,
      headWords > 2 ? (heads[first + 2] as number) : 0,
      headWords > 3 ? (heads[first + 3] as number) : 0,
    );
  }
  const tail = tailWords[slot] as Int32Array;
  const words = ((length + 9 + 63) >> 6) * 16;
  // The head's whole words, then its partial last word (if any) merged with the tail's first, then the tail.
  const whole = headLength >> 2;
  for (let j = 0; j < whole; j++) w[j] = heads[at + 1 + j] as number;
  const offset = (headLength & 3) * tailStride;
  const first = offset === 0 ? 0 : (heads[at + 1 + whole] as number);
  w[whole] = first | (tail[offset] as number);
  const tailEnd = whole + (((headLength & 3) + tailLength + 4) >> 2);
  let j = whole + 1;
  for (; j < tailEnd; j++) w[j] = tail[offset + j - whole] as number;
  for (; j < words - 1; j++) w[j] = 0;
  w[words - 1] = length * 8;
  return sha1Compress(w, words);
}

/**
 * The words past the fourth of the head at `at` into lane `lane` of the four-lane messages (sha1-simd.ts takes the
 * first four as arguments); its length in bytes.
 */
function laneHead(lanes: Int32Array, heads: Int32Array, at: number, lane: number): number {
  const headLength = heads[at] as number;
  const headWords = headLength > maxShortBytes ? 0 : (headLength + 3) >> 2;
  for (let j = 4; j < headWords; j++) lanes[4 * j + lane] = heads[at + 1 + j] as number;
  return headLength;
}

/**
 * sha1First60Of for the heads at `at` and at each of `others` (at most three) of `heads`, all with `value` and
 * `salt`, hashed at once (sha1-simd.ts), each divided by `divisor` (one division of doubles, as `hash / divisor`
 * gives): into `out` in that order, NaN for a message sha1First60Of gives null for. False, `out` untouched, where
 * the four-lane hash is unavailable or the tail alone is too long: hash one at a time.
 */
export function sha1First60Of4(heads: Int32Array, at: number, others: readonly number[], value: string, salt: string, divisor: number, out: number[]): boolean {
  const x4 = wasmSha1x4;
  if (x4 === null) return false;
  const slot = tailSlot(value, salt);
  if (slot < 0) return false;
  const lanes = x4.lanes;
  const count = others.length;
  // A missing lane reads the head at 0 of its words (each head is followed by at least four words: messageHeads).
  const at1 = count > 0 ? (others[0] as number) : 0;
  const at2 = count > 1 ? (others[1] as number) : 0;
  const at3 = count > 2 ? (others[2] as number) : 0;
  x4.batch(
    slot,
    tailLengths[slot] as number,
    laneHead(lanes, heads, at, 0),
    heads[at + 1] as number,
    heads[at + 2] as number,
    heads[at + 3] as number,
    heads[at + 4] as number,
    count > 0 ? laneHead(lanes, heads, at1, 1) : -1,
    heads[at1 + 1] as number,
    heads[at1 + 2] as number,
    heads[at1 + 3] as number,
    heads[at1 + 4] as number,
    count > 1 ? laneHead(lanes, heads, at2, 2) : -1,
    heads[at2 + 1] as number,
    heads[at2 + 2] as number,
    heads[at2 + 3] as number,
    heads[at2 + 4] as number,
    count > 2 ? laneHead(lanes, heads, at3, 3) : -1,
    heads[at3 + 1] as number,
    heads[at3 + 2] as number,
    heads[at3 + 3] as number,
    heads[at3 + 4] as number,
    divisor,
  );
  const results = x4.results;
  out[0] = results[0] as number;
  if (count > 0) out[1] = results[1] as number;
  if (count > 1) out[2] = results[2] as number;
  if (count > 2) out[3] = results[3] as number;
  return true;
}

const noHead = new Int32Array([0]);

/**
 * SHA-1(`text`)'s first 60 bits as sha1First60Of gives them, or null when `text` is longer than maxShortBytes in
 * UTF-8.
 */
export const sha1First60 = (text: string): number | null => sha1First60Of(noHead, 0, text, '');
