/**
 * The SHA-1 compression of sha1-block.ts as a small WebAssembly function, assembled here at load (about 2.5 KB of
 * bytecode, no file, no build step): the bucketing hash is the largest single cost of a `/flags` answer, and
 * WebAssembly has what the JavaScript version spends instructions emulating: a rotate instruction (`i32.rotl`, where
 * JavaScript writes `(x << n) | (x >>> 32 - n)`), 32-bit locals with no tagging or overflow checks, and no
 * interrupt checks inside the 80 steps. The message is read from the module's own memory, where sha1.ts writes it
 * through an Int32Array view (words as numbers: the same values on either side on a little-endian host). Where
 * WebAssembly is unavailable (`node --jitless`) or the host is big-endian, `wasmSha1` is null and sha1.ts uses
 * sha1-block.ts.
 */

import { f64Bytes, op, section, sleb, uleb } from './wasm-encode.js';

/** Where sha1.ts's four tail memos are in the module's memory: after the message (4 blocks), per slot 4 offsets × 64 words. */
const tailMemoAt = 4 * 64;
const tailStrideBytes = 64 * 4;
const tailSlotBytes = 4 * tailStrideBytes;

/**
 * The compression and its buffers: `compress(words)` hashes `message[0…words)` (whole 16-word blocks);
 * `splice(headLength, slot, tailLength, w0, w1, w2, w3)` completes the message whose head is its first four words
 * then `message[4…]`, with the tail in
 * `tails[slot]` (sha1.ts's layout: 4 offsets, 64 words apart) and hashes it.
 */
export interface WasmSha1 {
  /** The module's memory (sha1-simd.ts's module imports it). */
  readonly memory: object;
  readonly message: Int32Array;
  readonly tails: readonly Int32Array[];
  readonly compress: (words: number) => number;
  readonly splice: (headLength: number, slot: number, tailLength: number, w0: number, w1: number, w2: number, w3: number) => number;
}

/** The function's body: parameter 0 the number of words; locals as named below. */
function compressBody(): number[] {
  // Locals: 0 words (param), 1–5 h0–h4, 6–10 the working variables, 11–26 the schedule w0–w15, 27 the block's
  // byte offset.
  const h = [1, 2, 3, 4, 5];
  const work = [6, 7, 8, 9, 10];
  const w = (i: number): number => 11 + (i & 15);
  const at = 27;
  const code: number[] = [];
  const get = (local: number): void => void code.push(op.get, local);
  const set = (local: number): void => void code.push(op.set, local);
  const i32 = (value: number): void => void code.push(op.i32Const, ...sleb(value));
  const initial = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0];
  for (let i = 0; i < 5; i++) {
    i32(initial[i] as number);
    set(h[i] as number);
  }
  i32(0);
  set(at);
  code.push(op.loop, 0x40);
  for (let i = 0; i < 16; i++) {
    get(at);
    code.push(op.load, 2, ...uleb(i * 4)); // align 4, offset i·4
    set(w(i));
  }
  for (let i = 0; i < 5; i++) {
    get(h[i] as number);
    set(work[i] as number);
  }
  // Step t: e = rotl(a, 5) + f(b, c, d) + e + K + W[t]; b = rotl(b, 30); then the names shift (a, b, c, d, e) ←
  // (e, a, b, c, d), as sha1-block.ts renames its variables.
  let [a, b, c, d, e] = work as [number, number, number, number, number];
  for (let t = 0; t < 80; t++) {
    if (t >= 16) {
      // W[t] = rotl(W[t-3] ^ W[t-8] ^ W[t-14] ^ W[t-16], 1), in the slot of W[t-16].
      get(w(t - 3));
      get(w(t - 8));
      code.push(op.i32Xor);
      get(w(t - 14));
      code.push(op.i32Xor);
      get(w(t - 16));
      code.push(op.i32Xor);
      i32(1);
      code.push(op.i32Rotl);
      set(w(t));
    }
    get(a);
    i32(5);
    code.push(op.i32Rotl);
    if (t < 20) {
      // Ch: d ^ (b & (c ^ d))
      get(d);
      get(b);
      get(c);
      get(d);
      code.push(op.i32Xor, op.i32And, op.i32Xor);
    } else if (t >= 40 && t < 60) {
      // Maj: (b & c) | (d & (b | c))
      get(b);
      get(c);
      code.push(op.i32And);
      get(d);
      get(b);
      get(c);
      code.push(op.i32Or, op.i32And, op.i32Or);
    } else {
      get(b);
      get(c);
      code.push(op.i32Xor);
      get(d);
      code.push(op.i32Xor);
    }
    code.push(op.i32Add);
    get(e);
    code.push(op.i32Add);
    i32(t < 20 ? 0x5a827999 : t < 40 ? 0x6ed9eba1 : t < 60 ? 0x8f1bbcdc : 0xca62c1d6);
    code.push(op.i32Add);
    get(w(t));
    code.push(op.i32Add);
    set(e);
    get(b);
    i32(30);
    code.push(op.i32Rotl);
    set(b);
    [a, b, c, d, e] = [e, a, b, c, d];
  }
  // After 80 steps (a multiple of 5) every name is back on its own local.
  for (let i = 0; i < 5; i++) {
    get(h[i] as number);
    get(work[i] as number);
    code.push(op.i32Add);
    set(h[i] as number);
  }
  get(at);
  i32(64);
  code.push(op.i32Add);
  code.push(op.tee, at);
  get(0);
  i32(4);
  code.push(op.i32Mul, op.i32LtU, op.brIf, 0, op.end);
  // (h0 >>> 0) · 2^28 + ((h1 >>> 4) & 0x0fffffff), in doubles as sha1-block.ts computes it.
  get(h[0] as number);
  code.push(op.f64ConvertI32U, op.f64Const, ...f64Bytes(0x10000000), op.f64Mul);
  get(h[1] as number);
  i32(4);
  code.push(op.i32ShrU);
  i32(0x0fffffff);
  code.push(op.i32And, op.f64ConvertI32U, op.f64Add, op.end);
  // 27 i32 locals besides the parameter.
  return [1, 27, 0x7f].concat(code);
}

/** Whether typed arrays are little-endian here, as WebAssembly's memory always is (not on s390x). */
const littleEndian = (): boolean => new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Where sha1-simd.ts's four messages are in the memory, word j of lane k at `(4j + k) · 4` bytes from here. */
export const laneMessageAt = tailMemoAt + 4 * tailSlotBytes;

/**
 * The message of a hash whose head's words are at its start (sha1.ts writes them), its tail taken from the tail
 * memo of `slot`, then its compression: sha1.ts's splice (see there), done here because each word costs a few
 * instructions in WebAssembly where a typed-array access in JavaScript costs ~15 (its map, length and base are
 * loaded again at each, as the buffer could be detached). Parameters: 0 the head's length in bytes, 1 the slot,
 * 2 the tail's length in bytes, 3–6 the head's first four words (zero past its end).
 * `lane`: the same splice into lane `param 7` of the four interleaved messages at laneMessageAt (sha1-simd.ts),
 * returning the lane's number of words instead of hashing.
 */
export function spliceBody(lane: boolean): number[] {
  // Locals after the parameters: whole head words, the tail's byte address at the head's offset, the length, the
  // message's words, j, where the tail ends (in words), and for a lane the byte address of its word 0.
  const first = lane ? 8 : 7;
  const [headLength, slot, tailLength, whole, tail, length, words, j, tailEnd, base] = [0, 1, 2, first, first + 1, first + 2, first + 3, first + 4, first + 5, first + 6];
  const shift = lane ? 4 : 2; // a word's byte offset is its index shifted by this
  const code: number[] = [];
  const get = (local: number): void => void code.push(op.get, local);
  const set = (local: number): void => void code.push(op.set, local);
  const i32 = (value: number): void => void code.push(op.i32Const, ...sleb(value));
  /** The byte address of the message word whose index is in `local`. */
  const address = (local: number): void => {
    get(local);
    i32(shift);
    code.push(op.i32Shl);
    if (lane) {
      get(base);
      code.push(op.i32Add);
    }
  };
  if (lane) {
    i32(laneMessageAt);
    get(7);
    i32(2);
    code.push(op.i32Shl, op.i32Add);
    set(base);
  }
  // The head's first four words (parameters 3–6) into the message; sha1.ts wrote any further ones.
  for (let i = 0; i < 4; i++) {
    if (lane) get(base);
    else i32(0);
    get(3 + i);
    code.push(op.store, 2, ...uleb(i << shift));
  }
  get(headLength);
  i32(2);
  code.push(op.i32ShrS);
  set(whole);
  i32(tailMemoAt);
  get(slot);
  i32(tailSlotBytes);
  code.push(op.i32Mul, op.i32Add);
  get(headLength);
  i32(3);
  code.push(op.i32And);
  i32(tailStrideBytes);
  code.push(op.i32Mul, op.i32Add);
  set(tail);
  get(headLength);
  get(tailLength);
  code.push(op.i32Add);
  set(length);
  get(length);
  i32(9 + 63);
  code.push(op.i32Add);
  i32(6);
  code.push(op.i32ShrS);
  i32(4);
  code.push(op.i32Shl);
  set(words);
  // message[whole] = (a partial head word, else 0) | tail[0]
  address(whole);
  address(whole);
  code.push(op.load, 2, 0);
  i32(0);
  get(headLength);
  i32(3);
  code.push(op.i32And, op.select);
  get(tail);
  code.push(op.load, 2, 0, op.i32Or, op.store, 2, 0);
  // tailEnd = whole + (((headLength & 3) + tailLength + 4) >> 2)
  get(whole);
  get(headLength);
  i32(3);
  code.push(op.i32And);
  get(tailLength);
  code.push(op.i32Add);
  i32(4);
  code.push(op.i32Add);
  i32(2);
  code.push(op.i32ShrS, op.i32Add);
  set(tailEnd);
  get(whole);
  i32(1);
  code.push(op.i32Add);
  set(j);
  // for (; j < tailEnd; j++) message[j] = tail[j - whole]
  code.push(op.block, 0x40, op.loop, 0x40);
  get(j);
  get(tailEnd);
  code.push(op.i32GeU, op.brIf, 1);
  address(j);
  get(tail);
  get(j);
  get(whole);
  code.push(op.i32Sub);
  i32(2);
  code.push(op.i32Shl, op.i32Add, op.load, 2, 0, op.store, 2, 0);
  get(j);
  i32(1);
  code.push(op.i32Add);
  set(j);
  code.push(op.br, 0, op.end, op.end);
  // for (; j < words - 1; j++) message[j] = 0
  code.push(op.block, 0x40, op.loop, 0x40);
  get(j);
  get(words);
  i32(1);
  code.push(op.i32Sub, op.i32GeU, op.brIf, 1);
  address(j);
  i32(0);
  code.push(op.store, 2, 0);
  get(j);
  i32(1);
  code.push(op.i32Add);
  set(j);
  code.push(op.br, 0, op.end, op.end);
  // message[words - 1] = length · 8
  get(words);
  i32(1);
  code.push(op.i32Sub);
  set(j);
  address(j);
  get(length);
  i32(3);
  code.push(op.i32Shl, op.store, 2, 0);
  get(words);
  if (!lane) code.push(op.call, 0);
  code.push(op.end);
  // i32 locals besides the parameters.
  return [1, lane ? 7 : 6, 0x7f].concat(code);
}

/** The module: one memory (one page, exported as "m"), compress (i32) → f64 as "c", splice (i32 ×7) → f64 as "s". */
function moduleBytes(): Uint8Array {
  const compress = compressBody();
  const splice = spliceBody(false);
  // concat, not spreads: spreading the long bodies cost a few million instructions at start.
  return Uint8Array.from(
    [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00].concat(
      section(1, [2, 0x60, 1, 0x7f, 1, 0x7c, 0x60, 7, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7c]), // types: (i32) → f64, (i32 ×7) → f64
      section(3, [2, 0, 1]), // function 0 of type 0, function 1 of type 1
      section(5, [1, 0x00, 1]), // memory 0: one page, no maximum
      section(7, [3, 1, 0x6d, 0x02, 0, 1, 0x63, 0x00, 0, 1, 0x73, 0x00, 1]), // exports "m", "c", "s"
      section(10, [2].concat(uleb(compress.length), compress, uleb(splice.length), splice)),
    ),
  );
}

/** What is used of the WebAssembly global (node's types do not declare it without the DOM library). */
export interface WebAssemblyApi {
  readonly Module: new (bytes: Uint8Array) => object;
  readonly Instance: new (module: object, imports?: Record<string, Record<string, unknown>>) => { readonly exports: Record<string, unknown> };
}

/** Why the WebAssembly compression is not in use (the start log says so), or null when it is. */
export let wasmSha1Unavailable: string | null = null;

function instantiate(): WasmSha1 | null {
  const wasm = (globalThis as { WebAssembly?: WebAssemblyApi }).WebAssembly;
  // The message is written as numbers through an Int32Array and read by i32.load: the same words only where both
  // are little-endian.
  if (wasm === undefined) {
    wasmSha1Unavailable = 'no WebAssembly in this process (node --jitless?)';
    return null;
  }
  if (!littleEndian()) {
    wasmSha1Unavailable = 'a big-endian host';
    return null;
  }
  try {
    const instance = new wasm.Instance(new wasm.Module(moduleBytes()));
    const memory = instance.exports.m as { readonly buffer: ArrayBuffer };
    return {
      memory,
      message: new Int32Array(memory.buffer, 0, 4 * 16),
      tails: [0, 1, 2, 3].map((slot) => new Int32Array(memory.buffer, tailMemoAt + slot * tailSlotBytes, tailSlotBytes / 4)),
      compress: instance.exports.c as (words: number) => number,
      splice: instance.exports.s as WasmSha1['splice'],
    };
  } catch (error) {
    // An address space too small for WebAssembly's reservation (`ulimit -v`), say: the JavaScript compression
    // gives the same hashes, only slower.
    wasmSha1Unavailable = `WebAssembly failed: ${(error as Error).message}`;
    return null;
  }
}

/** The compression in WebAssembly, or null where it is unavailable. */
export const wasmSha1: WasmSha1 | null = instantiate();
