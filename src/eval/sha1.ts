/**
 * The first 60 bits of SHA-1 of a short string's UTF-8 bytes, in JavaScript: the bucketing hash's input
 * (`"{key}.{value}{salt}"`) is a few dozen bytes, where node:crypto's one-shot `hash` spends most of its time
 * crossing into C++ and allocating the digest (measured: 2–5× slower than this for 20–100 byte inputs). Bytes are
 * encoded as node:crypto encodes a string (UTF-8, an unpaired surrogate as U+FFFD), so the digest is the same
 * bit for bit (test/unit/eval-hash.test.ts checks it against node:crypto over random strings). Inputs of more
 * than `maxShortBytes` UTF-8 bytes give null: the caller hashes those with node:crypto.
 */

/** The longest input hashed here: four 64-byte blocks, less the 0x80 marker and the 8-byte length. */
export const maxShortBytes = 4 * 64 - 9;

// Scratch space, only ever used within one synchronous call (nothing survives it): the padded message and the
// 80-word schedule of one block.
const message = new Uint8Array(4 * 64);
const schedule = new Int32Array(80);

/** UTF-8 of `text` into `message`; its byte length, or -1 past maxShortBytes. */
function encode(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      if (n === maxShortBytes) return -1;
      message[n++] = c;
    } else if (c < 0x800) {
      if (n + 2 > maxShortBytes) return -1;
      message[n++] = 0xc0 | (c >> 6);
      message[n++] = 0x80 | (c & 0x3f);
    } else {
      const next = text.charCodeAt(i + 1);
      if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        if (n + 4 > maxShortBytes) return -1;
        c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
        message[n++] = 0xf0 | (c >> 18);
        message[n++] = 0x80 | ((c >> 12) & 0x3f);
        message[n++] = 0x80 | ((c >> 6) & 0x3f);
        message[n++] = 0x80 | (c & 0x3f);
        continue;
      }
      if (n + 3 > maxShortBytes) return -1;
      if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd; // an unpaired surrogate, as node encodes it
      message[n++] = 0xe0 | (c >> 12);
      message[n++] = 0x80 | ((c >> 6) & 0x3f);
      message[n++] = 0x80 | (c & 0x3f);
    }
  }
  return n;
}

/**
 * SHA-1(`text`)'s first 32 bits (`high`, unsigned) and the next 28 (`low`) as `high * 2^28 + low`, rounded once
 * to a double, or null when `text` is longer than maxShortBytes in UTF-8.
 */
export function sha1First60(text: string): number | null {
  const length = encode(text);
  if (length < 0) return null;
  // Whole 64-byte blocks holding the message, the 0x80 marker and the 64-bit length in bits.
  const total = ((length + 9 + 63) >> 6) * 64;
  message[length] = 0x80;
  message.fill(0, length + 1, total - 4);
  const bits = length * 8;
  message[total - 4] = bits >>> 24;
  message[total - 3] = (bits >>> 16) & 0xff;
  message[total - 2] = (bits >>> 8) & 0xff;
  message[total - 1] = bits & 0xff;
  let h0 = 0x67452301;
  let h1 = 0xefcdab89 | 0;
  let h2 = 0x98badcfe | 0;
  let h3 = 0x10325476;
  let h4 = 0xc3d2e1f0 | 0;
  const w = schedule;
  for (let offset = 0; offset < total; offset += 64) {
    for (let t = 0; t < 16; t++) {
      const j = offset + t * 4;
      w[t] = ((message[j] as number) << 24) | ((message[j + 1] as number) << 16) | ((message[j + 2] as number) << 8) | (message[j + 3] as number);
    }
    for (let t = 16; t < 80; t++) {
      const x = (w[t - 3] as number) ^ (w[t - 8] as number) ^ (w[t - 14] as number) ^ (w[t - 16] as number);
      w[t] = (x << 1) | (x >>> 31);
    }
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    let e = h4;
    // The four rounds of 20 steps, each its own loop (no branch per step).
    for (let t = 0; t < 20; t++) {
      const temp = (((a << 5) | (a >>> 27)) + ((b & c) | (~b & d)) + e + 0x5a827999 + (w[t] as number)) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = temp;
    }
    for (let t = 20; t < 40; t++) {
      const temp = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + 0x6ed9eba1 + (w[t] as number)) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = temp;
    }
    for (let t = 40; t < 60; t++) {
      const temp = (((a << 5) | (a >>> 27)) + ((b & c) | (b & d) | (c & d)) + e - 0x70e44324 + (w[t] as number)) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = temp;
    }
    for (let t = 60; t < 80; t++) {
      const temp = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e - 0x359d3e2a + (w[t] as number)) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = temp;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
  }
  return (h0 >>> 0) * 0x10000000 + ((h1 >>> 4) & 0x0fffffff);
}
