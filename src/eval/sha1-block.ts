/**
 * The SHA-1 compression of a padded message given as big-endian 32-bit words (sha1.ts builds it), written out:
 * the 80 steps unrolled, the message schedule in 16 local variables (word t ≥ 16 replaces word t − 16 as it is
 * computed), the five working variables renamed from step to step instead of moved (step t writes the variable
 * that step t − 1 called `d`, so after 80 steps each name is back in its place). TurboFan keeps it all in
 * registers and stack slots: no array access past the 16 loads of a block (measured under callgrind: 2.4× fewer
 * instructions per hash than the same steps as four loops over the block's words rolled in place).
 */

/** SHA-1 of `message`'s first `words` words (whole 16-word blocks, already padded): its first 60 bits as a double. */
export function sha1Compress(message: Int32Array, words: number): number {
  let h0 = 0x67452301;
  let h1 = 0xefcdab89 | 0;
  let h2 = 0x98badcfe | 0;
  let h3 = 0x10325476;
  let h4 = 0xc3d2e1f0 | 0;
  for (let block = 0; block < words; block += 16) {
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    let e = h4;
    let x = 0;
    let w0 = message[block + 0] as number;
    let w1 = message[block + 1] as number;
    let w2 = message[block + 2] as number;
    let w3 = message[block + 3] as number;
    let w4 = message[block + 4] as number;
    let w5 = message[block + 5] as number;
    let w6 = message[block + 6] as number;
    let w7 = message[block + 7] as number;
    let w8 = message[block + 8] as number;
    let w9 = message[block + 9] as number;
    let w10 = message[block + 10] as number;
    let w11 = message[block + 11] as number;
    let w12 = message[block + 12] as number;
    let w13 = message[block + 13] as number;
    let w14 = message[block + 14] as number;
    let w15 = message[block + 15] as number;
    e = ((((a << 5) | (a >>> 27)) + ((b & c) | (~b & d)) + e + 0x5a827999 + w0) | 0); b = (b << 30) | (b >>> 2);
    d = ((((e << 5) | (e >>> 27)) + ((a & b) | (~a & c)) + d + 0x5a827999 + w1) | 0); a = (a << 30) | (a >>> 2);
    c = ((((d << 5) | (d >>> 27)) + ((e & a) | (~e & b)) + c + 0x5a827999 + w2) | 0); e = (e << 30) | (e >>> 2);
    b = ((((c << 5) | (c >>> 27)) + ((d & e) | (~d & a)) + b + 0x5a827999 + w3) | 0); d = (d << 30) | (d >>> 2);
    a = ((((b << 5) | (b >>> 27)) + ((c & d) | (~c & e)) + a + 0x5a827999 + w4) | 0); c = (c << 30) | (c >>> 2);
    e = ((((a << 5) | (a >>> 27)) + ((b & c) | (~b & d)) + e + 0x5a827999 + w5) | 0); b = (b << 30) | (b >>> 2);
    d = ((((e << 5) | (e >>> 27)) + ((a & b) | (~a & c)) + d + 0x5a827999 + w6) | 0); a = (a << 30) | (a >>> 2);
    c = ((((d << 5) | (d >>> 27)) + ((e & a) | (~e & b)) + c + 0x5a827999 + w7) | 0); e = (e << 30) | (e >>> 2);
    b = ((((c << 5) | (c >>> 27)) + ((d & e) | (~d & a)) + b + 0x5a827999 + w8) | 0); d = (d << 30) | (d >>> 2);
    a = ((((b << 5) | (b >>> 27)) + ((c & d) | (~c & e)) + a + 0x5a827999 + w9) | 0); c = (c << 30) | (c >>> 2);
    e = ((((a << 5) | (a >>> 27)) + ((b & c) | (~b & d)) + e + 0x5a827999 + w10) | 0); b = (b << 30) | (b >>> 2);
    d = ((((e << 5) | (e >>> 27)) + ((a & b) | (~a & c)) + d + 0x5a827999 + w11) | 0); a = (a << 30) | (a >>> 2);
    c = ((((d << 5) | (d >>> 27)) + ((e & a) | (~e & b)) + c + 0x5a827999 + w12) | 0); e = (e << 30) | (e >>> 2);
    b = ((((c << 5) | (c >>> 27)) + ((d & e) | (~d & a)) + b + 0x5a827999 + w13) | 0); d = (d << 30) | (d >>> 2);
    a = ((((b << 5) | (b >>> 27)) + ((c & d) | (~c & e)) + a + 0x5a827999 + w14) | 0); c = (c << 30) | (c >>> 2);
    e = ((((a << 5) | (a >>> 27)) + ((b & c) | (~b & d)) + e + 0x5a827999 + w15) | 0); b = (b << 30) | (b >>> 2);
    x = w13 ^ w8 ^ w2 ^ w0; w0 = (x << 1) | (x >>> 31); d = ((((e << 5) | (e >>> 27)) + ((a & b) | (~a & c)) + d + 0x5a827999 + w0) | 0); a = (a << 30) | (a >>> 2);
    x = w14 ^ w9 ^ w3 ^ w1; w1 = (x << 1) | (x >>> 31); c = ((((d << 5) | (d >>> 27)) + ((e & a) | (~e & b)) + c + 0x5a827999 + w1) | 0); e = (e << 30) | (e >>> 2);
    x = w15 ^ w10 ^ w4 ^ w2; w2 = (x << 1) | (x >>> 31); b = ((((c << 5) | (c >>> 27)) + ((d & e) | (~d & a)) + b + 0x5a827999 + w2) | 0); d = (d << 30) | (d >>> 2);
    x = w0 ^ w11 ^ w5 ^ w3; w3 = (x << 1) | (x >>> 31); a = ((((b << 5) | (b >>> 27)) + ((c & d) | (~c & e)) + a + 0x5a827999 + w3) | 0); c = (c << 30) | (c >>> 2);
    x = w1 ^ w12 ^ w6 ^ w4; w4 = (x << 1) | (x >>> 31); e = ((((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + 0x6ed9eba1 + w4) | 0); b = (b << 30) | (b >>> 2);
    x = w2 ^ w13 ^ w7 ^ w5; w5 = (x << 1) | (x >>> 31); d = ((((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d + 0x6ed9eba1 + w5) | 0); a = (a << 30) | (a >>> 2);
    x = w3 ^ w14 ^ w8 ^ w6; w6 = (x << 1) | (x >>> 31); c = ((((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c + 0x6ed9eba1 + w6) | 0); e = (e << 30) | (e >>> 2);
    x = w4 ^ w15 ^ w9 ^ w7; w7 = (x << 1) | (x >>> 31); b = ((((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b + 0x6ed9eba1 + w7) | 0); d = (d << 30) | (d >>> 2);
    x = w5 ^ w0 ^ w10 ^ w8; w8 = (x << 1) | (x >>> 31); a = ((((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a + 0x6ed9eba1 + w8) | 0); c = (c << 30) | (c >>> 2);
    x = w6 ^ w1 ^ w11 ^ w9; w9 = (x << 1) | (x >>> 31); e = ((((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + 0x6ed9eba1 + w9) | 0); b = (b << 30) | (b >>> 2);
    x = w7 ^ w2 ^ w12 ^ w10; w10 = (x << 1) | (x >>> 31); d = ((((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d + 0x6ed9eba1 + w10) | 0); a = (a << 30) | (a >>> 2);
    x = w8 ^ w3 ^ w13 ^ w11; w11 = (x << 1) | (x >>> 31); c = ((((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c + 0x6ed9eba1 + w11) | 0); e = (e << 30) | (e >>> 2);
    x = w9 ^ w4 ^ w14 ^ w12; w12 = (x << 1) | (x >>> 31); b = ((((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b + 0x6ed9eba1 + w12) | 0); d = (d << 30) | (d >>> 2);
    x = w10 ^ w5 ^ w15 ^ w13; w13 = (x << 1) | (x >>> 31); a = ((((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a + 0x6ed9eba1 + w13) | 0); c = (c << 30) | (c >>> 2);
    x = w11 ^ w6 ^ w0 ^ w14; w14 = (x << 1) | (x >>> 31); e = ((((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + 0x6ed9eba1 + w14) | 0); b = (b << 30) | (b >>> 2);
    x = w12 ^ w7 ^ w1 ^ w15; w15 = (x << 1) | (x >>> 31); d = ((((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d + 0x6ed9eba1 + w15) | 0); a = (a << 30) | (a >>> 2);
    x = w13 ^ w8 ^ w2 ^ w0; w0 = (x << 1) | (x >>> 31); c = ((((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c + 0x6ed9eba1 + w0) | 0); e = (e << 30) | (e >>> 2);
    x = w14 ^ w9 ^ w3 ^ w1; w1 = (x << 1) | (x >>> 31); b = ((((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b + 0x6ed9eba1 + w1) | 0); d = (d << 30) | (d >>> 2);
    x = w15 ^ w10 ^ w4 ^ w2; w2 = (x << 1) | (x >>> 31); a = ((((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a + 0x6ed9eba1 + w2) | 0); c = (c << 30) | (c >>> 2);
    x = w0 ^ w11 ^ w5 ^ w3; w3 = (x << 1) | (x >>> 31); e = ((((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e + 0x6ed9eba1 + w3) | 0); b = (b << 30) | (b >>> 2);
    x = w1 ^ w12 ^ w6 ^ w4; w4 = (x << 1) | (x >>> 31); d = ((((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d + 0x6ed9eba1 + w4) | 0); a = (a << 30) | (a >>> 2);
    x = w2 ^ w13 ^ w7 ^ w5; w5 = (x << 1) | (x >>> 31); c = ((((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c + 0x6ed9eba1 + w5) | 0); e = (e << 30) | (e >>> 2);
    x = w3 ^ w14 ^ w8 ^ w6; w6 = (x << 1) | (x >>> 31); b = ((((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b + 0x6ed9eba1 + w6) | 0); d = (d << 30) | (d >>> 2);
    x = w4 ^ w15 ^ w9 ^ w7; w7 = (x << 1) | (x >>> 31); a = ((((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a + 0x6ed9eba1 + w7) | 0); c = (c << 30) | (c >>> 2);
    x = w5 ^ w0 ^ w10 ^ w8; w8 = (x << 1) | (x >>> 31); e = ((((a << 5) | (a >>> 27)) + ((b & c) | (b & d) | (c & d)) + e - 0x70e44324 + w8) | 0); b = (b << 30) | (b >>> 2);
    x = w6 ^ w1 ^ w11 ^ w9; w9 = (x << 1) | (x >>> 31); d = ((((e << 5) | (e >>> 27)) + ((a & b) | (a & c) | (b & c)) + d - 0x70e44324 + w9) | 0); a = (a << 30) | (a >>> 2);
    x = w7 ^ w2 ^ w12 ^ w10; w10 = (x << 1) | (x >>> 31); c = ((((d << 5) | (d >>> 27)) + ((e & a) | (e & b) | (a & b)) + c - 0x70e44324 + w10) | 0); e = (e << 30) | (e >>> 2);
    x = w8 ^ w3 ^ w13 ^ w11; w11 = (x << 1) | (x >>> 31); b = ((((c << 5) | (c >>> 27)) + ((d & e) | (d & a) | (e & a)) + b - 0x70e44324 + w11) | 0); d = (d << 30) | (d >>> 2);
    x = w9 ^ w4 ^ w14 ^ w12; w12 = (x << 1) | (x >>> 31); a = ((((b << 5) | (b >>> 27)) + ((c & d) | (c & e) | (d & e)) + a - 0x70e44324 + w12) | 0); c = (c << 30) | (c >>> 2);
    x = w10 ^ w5 ^ w15 ^ w13; w13 = (x << 1) | (x >>> 31); e = ((((a << 5) | (a >>> 27)) + ((b & c) | (b & d) | (c & d)) + e - 0x70e44324 + w13) | 0); b = (b << 30) | (b >>> 2);
    x = w11 ^ w6 ^ w0 ^ w14; w14 = (x << 1) | (x >>> 31); d = ((((e << 5) | (e >>> 27)) + ((a & b) | (a & c) | (b & c)) + d - 0x70e44324 + w14) | 0); a = (a << 30) | (a >>> 2);
    x = w12 ^ w7 ^ w1 ^ w15; w15 = (x << 1) | (x >>> 31); c = ((((d << 5) | (d >>> 27)) + ((e & a) | (e & b) | (a & b)) + c - 0x70e44324 + w15) | 0); e = (e << 30) | (e >>> 2);
    x = w13 ^ w8 ^ w2 ^ w0; w0 = (x << 1) | (x >>> 31); b = ((((c << 5) | (c >>> 27)) + ((d & e) | (d & a) | (e & a)) + b - 0x70e44324 + w0) | 0); d = (d << 30) | (d >>> 2);
    x = w14 ^ w9 ^ w3 ^ w1; w1 = (x << 1) | (x >>> 31); a = ((((b << 5) | (b >>> 27)) + ((c & d) | (c & e) | (d & e)) + a - 0x70e44324 + w1) | 0); c = (c << 30) | (c >>> 2);
    x = w15 ^ w10 ^ w4 ^ w2; w2 = (x << 1) | (x >>> 31); e = ((((a << 5) | (a >>> 27)) + ((b & c) | (b & d) | (c & d)) + e - 0x70e44324 + w2) | 0); b = (b << 30) | (b >>> 2);
    x = w0 ^ w11 ^ w5 ^ w3; w3 = (x << 1) | (x >>> 31); d = ((((e << 5) | (e >>> 27)) + ((a & b) | (a & c) | (b & c)) + d - 0x70e44324 + w3) | 0); a = (a << 30) | (a >>> 2);
    x = w1 ^ w12 ^ w6 ^ w4; w4 = (x << 1) | (x >>> 31); c = ((((d << 5) | (d >>> 27)) + ((e & a) | (e & b) | (a & b)) + c - 0x70e44324 + w4) | 0); e = (e << 30) | (e >>> 2);
    x = w2 ^ w13 ^ w7 ^ w5; w5 = (x << 1) | (x >>> 31); b = ((((c << 5) | (c >>> 27)) + ((d & e) | (d & a) | (e & a)) + b - 0x70e44324 + w5) | 0); d = (d << 30) | (d >>> 2);
    x = w3 ^ w14 ^ w8 ^ w6; w6 = (x << 1) | (x >>> 31); a = ((((b << 5) | (b >>> 27)) + ((c & d) | (c & e) | (d & e)) + a - 0x70e44324 + w6) | 0); c = (c << 30) | (c >>> 2);
    x = w4 ^ w15 ^ w9 ^ w7; w7 = (x << 1) | (x >>> 31); e = ((((a << 5) | (a >>> 27)) + ((b & c) | (b & d) | (c & d)) + e - 0x70e44324 + w7) | 0); b = (b << 30) | (b >>> 2);
    x = w5 ^ w0 ^ w10 ^ w8; w8 = (x << 1) | (x >>> 31); d = ((((e << 5) | (e >>> 27)) + ((a & b) | (a & c) | (b & c)) + d - 0x70e44324 + w8) | 0); a = (a << 30) | (a >>> 2);
    x = w6 ^ w1 ^ w11 ^ w9; w9 = (x << 1) | (x >>> 31); c = ((((d << 5) | (d >>> 27)) + ((e & a) | (e & b) | (a & b)) + c - 0x70e44324 + w9) | 0); e = (e << 30) | (e >>> 2);
    x = w7 ^ w2 ^ w12 ^ w10; w10 = (x << 1) | (x >>> 31); b = ((((c << 5) | (c >>> 27)) + ((d & e) | (d & a) | (e & a)) + b - 0x70e44324 + w10) | 0); d = (d << 30) | (d >>> 2);
    x = w8 ^ w3 ^ w13 ^ w11; w11 = (x << 1) | (x >>> 31); a = ((((b << 5) | (b >>> 27)) + ((c & d) | (c & e) | (d & e)) + a - 0x70e44324 + w11) | 0); c = (c << 30) | (c >>> 2);
    x = w9 ^ w4 ^ w14 ^ w12; w12 = (x << 1) | (x >>> 31); e = ((((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e - 0x359d3e2a + w12) | 0); b = (b << 30) | (b >>> 2);
    x = w10 ^ w5 ^ w15 ^ w13; w13 = (x << 1) | (x >>> 31); d = ((((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d - 0x359d3e2a + w13) | 0); a = (a << 30) | (a >>> 2);
    x = w11 ^ w6 ^ w0 ^ w14; w14 = (x << 1) | (x >>> 31); c = ((((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c - 0x359d3e2a + w14) | 0); e = (e << 30) | (e >>> 2);
    x = w12 ^ w7 ^ w1 ^ w15; w15 = (x << 1) | (x >>> 31); b = ((((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b - 0x359d3e2a + w15) | 0); d = (d << 30) | (d >>> 2);
    x = w13 ^ w8 ^ w2 ^ w0; w0 = (x << 1) | (x >>> 31); a = ((((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a - 0x359d3e2a + w0) | 0); c = (c << 30) | (c >>> 2);
    x = w14 ^ w9 ^ w3 ^ w1; w1 = (x << 1) | (x >>> 31); e = ((((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e - 0x359d3e2a + w1) | 0); b = (b << 30) | (b >>> 2);
    x = w15 ^ w10 ^ w4 ^ w2; w2 = (x << 1) | (x >>> 31); d = ((((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d - 0x359d3e2a + w2) | 0); a = (a << 30) | (a >>> 2);
    x = w0 ^ w11 ^ w5 ^ w3; w3 = (x << 1) | (x >>> 31); c = ((((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c - 0x359d3e2a + w3) | 0); e = (e << 30) | (e >>> 2);
    x = w1 ^ w12 ^ w6 ^ w4; w4 = (x << 1) | (x >>> 31); b = ((((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b - 0x359d3e2a + w4) | 0); d = (d << 30) | (d >>> 2);
    x = w2 ^ w13 ^ w7 ^ w5; w5 = (x << 1) | (x >>> 31); a = ((((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a - 0x359d3e2a + w5) | 0); c = (c << 30) | (c >>> 2);
    x = w3 ^ w14 ^ w8 ^ w6; w6 = (x << 1) | (x >>> 31); e = ((((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e - 0x359d3e2a + w6) | 0); b = (b << 30) | (b >>> 2);
    x = w4 ^ w15 ^ w9 ^ w7; w7 = (x << 1) | (x >>> 31); d = ((((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d - 0x359d3e2a + w7) | 0); a = (a << 30) | (a >>> 2);
    x = w5 ^ w0 ^ w10 ^ w8; w8 = (x << 1) | (x >>> 31); c = ((((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c - 0x359d3e2a + w8) | 0); e = (e << 30) | (e >>> 2);
    x = w6 ^ w1 ^ w11 ^ w9; w9 = (x << 1) | (x >>> 31); b = ((((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b - 0x359d3e2a + w9) | 0); d = (d << 30) | (d >>> 2);
    x = w7 ^ w2 ^ w12 ^ w10; w10 = (x << 1) | (x >>> 31); a = ((((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a - 0x359d3e2a + w10) | 0); c = (c << 30) | (c >>> 2);
    x = w8 ^ w3 ^ w13 ^ w11; w11 = (x << 1) | (x >>> 31); e = ((((a << 5) | (a >>> 27)) + (b ^ c ^ d) + e - 0x359d3e2a + w11) | 0); b = (b << 30) | (b >>> 2);
    x = w9 ^ w4 ^ w14 ^ w12; w12 = (x << 1) | (x >>> 31); d = ((((e << 5) | (e >>> 27)) + (a ^ b ^ c) + d - 0x359d3e2a + w12) | 0); a = (a << 30) | (a >>> 2);
    x = w10 ^ w5 ^ w15 ^ w13; w13 = (x << 1) | (x >>> 31); c = ((((d << 5) | (d >>> 27)) + (e ^ a ^ b) + c - 0x359d3e2a + w13) | 0); e = (e << 30) | (e >>> 2);
    x = w11 ^ w6 ^ w0 ^ w14; w14 = (x << 1) | (x >>> 31); b = ((((c << 5) | (c >>> 27)) + (d ^ e ^ a) + b - 0x359d3e2a + w14) | 0); d = (d << 30) | (d >>> 2);
    x = w12 ^ w7 ^ w1 ^ w15; w15 = (x << 1) | (x >>> 31); a = ((((b << 5) | (b >>> 27)) + (c ^ d ^ e) + a - 0x359d3e2a + w15) | 0); c = (c << 30) | (c >>> 2);
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
  }
  // The first 32 bits (unsigned) and the next 28: `high * 2^28` is exact, adding `low` rounds once.
  return (h0 >>> 0) * 0x10000000 + ((h1 >>> 4) & 0x0fffffff);
}
