/**
 * Four SHA-1 hashes at once: the compression of sha1-wasm.ts in WebAssembly SIMD, one message per 32-bit lane of
 * `i32x4` vectors, for the bucketing hashes of several flags with the same bucketing value and salt (hash.ts
 * flagHashesOf). The 80 steps cost about 1.4 scalar compressions in vector instructions (no vector
 * rotate: a shift left, a shift right and an or; Ch and Maj are one `v128.bitselect` each), for four hashes.
 *
 * The module imports sha1-wasm.ts's memory, so a lane's message is spliced from the same tail memos as a single
 * hash (sha1-wasm.ts spliceBody, writing word j of lane k at laneMessageAt + (4j + k) · 4). Lanes may differ in
 * length: the compression runs as many blocks as the longest, and keeps each lane's state after its own last
 * block. Null (with the reason in `wasmSha1x4Unavailable`) where sha1-wasm.ts's module is unavailable or this
 * WebAssembly lacks SIMD: hash.ts then hashes one flag at a time.
 */
import { laneMessageAt, spliceBody, wasmSha1, type WebAssemblyApi } from './sha1-wasm.js';
import { f64Bytes, op, section, simd, sleb, uleb } from './wasm-encode.js';

/** The four results, as doubles (`h0 · 2^28 + (h1 >>> 4)`, as sha1-block.ts gives them): after the messages. */
const resultsAt = laneMessageAt + 4 * 64 * 4;

const v128 = 0x7b;
const i32Type = 0x7f;
const f64Type = 0x7c;

/** `value` in all four i32 lanes, as a v128.const's 16 bytes. */
const i32x4Bytes = (value: number): number[] => {
  const bytes = [value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff, value >>> 24];
  return bytes.concat(bytes, bytes, bytes);
};

/**
 * The four compressions: parameters 0–3 each lane's number of message words (whole blocks, 0: an unused lane),
 * 4 a divisor; writes the four results, each divided by it (as one division of doubles), at resultsAt.
 */
function compress4Body(): number[] {
  // Parameter 4 the divisor; locals: 5 the block's first word, 6 the most words of a lane; vectors 7–11 h0–h4,
  // 12–16 the working variables, 17–32 the schedule w0–w15, 33–34 the results' h0 and h1, 35 the lanes' word counts.
  const divisor = 4;
  const [at, most] = [5, 6];
  const h = [7, 8, 9, 10, 11];
  const work = [12, 13, 14, 15, 16];
  const w = (i: number): number => 17 + (i & 15);
  const [r0, r1, counts] = [33, 34, 35];
  const code: number[] = [];
  const get = (local: number): void => void code.push(op.get, local);
  const set = (local: number): void => void code.push(op.set, local);
  const i32 = (value: number): void => void code.push(op.i32Const, ...sleb(value));
  /** One vector instruction: the prefix, the opcode (one byte below 0x80, else two), its immediates. */
  const vec = (instruction: number, immediates?: readonly number[]): void => {
    if (instruction < 0x80) code.push(0xfd, instruction);
    else code.push(0xfd, (instruction & 0x7f) | 0x80, instruction >> 7);
    if (immediates !== undefined) for (const byte of immediates) code.push(byte);
  };
  const constants = new Map<number, number[]>();
  const splat = (value: number): void => {
    let bytes = constants.get(value);
    if (bytes === undefined) constants.set(value, (bytes = i32x4Bytes(value)));
    vec(simd.const, bytes);
  };
  /** rotl(local, n) on the stack. */
  const rotl = (local: number, n: number): void => {
    get(local);
    i32(n);
    vec(simd.i32x4Shl);
    get(local);
    i32(32 - n);
    vec(simd.i32x4ShrU);
    vec(simd.or);
  };
  get(0);
  vec(simd.i32x4Splat);
  for (let lane = 1; lane < 4; lane++) {
    get(lane);
    vec(simd.i32x4ReplaceLane, [lane]);
  }
  set(counts);
  // most = max(words0…words3), unsigned
  get(0);
  set(most);
  for (let lane = 1; lane < 4; lane++) {
    get(lane);
    get(most);
    get(lane);
    get(most);
    code.push(op.i32GtU, op.select);
    set(most);
  }
  const initial = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0];
  for (let i = 0; i < 5; i++) {
    splat(initial[i] as number);
    set(h[i] as number);
  }
  i32(0);
  set(at);
  code.push(op.loop, 0x40);
  for (let i = 0; i < 16; i++) {
    get(at);
    i32(4);
    code.push(op.i32Shl);
    vec(simd.load, [4, ...uleb(laneMessageAt + i * 16)]); // align 16, offset: word i of the block, all lanes
    set(w(i));
  }
  for (let i = 0; i < 5; i++) {
    get(h[i] as number);
    set(work[i] as number);
  }
  // The steps of sha1-wasm.ts's compressBody, on vectors.
  let [a, b, c, d, e] = work as [number, number, number, number, number];
  for (let t = 0; t < 80; t++) {
    if (t >= 16) {
      get(w(t - 3));
      get(w(t - 8));
      vec(simd.xor);
      get(w(t - 14));
      vec(simd.xor);
      get(w(t - 16));
      vec(simd.xor);
      set(w(t));
      rotl(w(t), 1);
      set(w(t));
    }
    rotl(a, 5);
    if (t < 20) {
      // Ch: where b, c, else d
      get(c);
      get(d);
      get(b);
      vec(simd.bitselect);
    } else if (t >= 40 && t < 60) {
      // Maj: where b and c differ, d, else b
      get(d);
      get(b);
      get(b);
      get(c);
      vec(simd.xor);
      vec(simd.bitselect);
    } else {
      get(b);
      get(c);
      vec(simd.xor);
      get(d);
      vec(simd.xor);
    }
    vec(simd.i32x4Add);
    get(e);
    vec(simd.i32x4Add);
    splat(t < 20 ? 0x5a827999 : t < 40 ? 0x6ed9eba1 : t < 60 ? 0x8f1bbcdc : 0xca62c1d6);
    vec(simd.i32x4Add);
    get(w(t));
    vec(simd.i32x4Add);
    set(e);
    rotl(b, 30);
    set(b);
    [a, b, c, d, e] = [e, a, b, c, d];
  }
  for (let i = 0; i < 5; i++) {
    get(h[i] as number);
    get(work[i] as number);
    vec(simd.i32x4Add);
    set(h[i] as number);
  }
  get(at);
  i32(16);
  code.push(op.i32Add);
  set(at);
  // A lane whose message ends with this block keeps h0 and h1 as they are now.
  for (const [result, state] of [
    [r0, h[0]],
    [r1, h[1]],
  ] as const) {
    get(state as number);
    get(result);
    get(counts);
    get(at);
    vec(simd.i32x4Splat);
    vec(simd.i32x4Eq);
    vec(simd.bitselect);
    set(result);
  }
  get(at);
  get(most);
  code.push(op.i32LtU, op.brIf, 0, op.end);
  // Per pair of lanes: h0 · 2^28 + ((h1 >>> 4) & 0x0fffffff) in doubles, as sha1-block.ts computes it.
  const high = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15]; // lanes 2 and 3 to lanes 0 and 1
  for (let pair = 0; pair < 2; pair++) {
    i32(resultsAt);
    get(r0);
    if (pair === 1) {
      get(r0);
      vec(simd.shuffle, high);
    }
    vec(simd.f64x2ConvertLowI32x4U);
    vec(simd.const, [...f64Bytes(0x10000000), ...f64Bytes(0x10000000)]);
    vec(simd.f64x2Mul);
    get(r1);
    if (pair === 1) {
      get(r1);
      vec(simd.shuffle, high);
    }
    i32(4);
    vec(simd.i32x4ShrU);
    splat(0x0fffffff);
    vec(simd.and);
    vec(simd.f64x2ConvertLowI32x4U);
    vec(simd.f64x2Add);
    get(divisor);
    vec(simd.f64x2Splat);
    vec(simd.f64x2Div);
    vec(simd.store, [4, ...uleb(pair * 16)]);
  }
  code.push(op.end);
  return [2, 2, i32Type, 29, v128].concat(code);
}

/**
 * The whole batch in one call from JavaScript: parameters 0 the tail's memo slot, 1 the tail's length, then per
 * lane 5: the head's length (negative: no message) and its first four words; 22 the divisor (compress4Body). A lane whose message would be
 * longer than `maxBytes` is left out; its result is NaN, as is that of a lane with no message.
 */
function batchBody(maxBytes: number): number[] {
  const n = [23, 24, 25, 26]; // locals after the divisor (parameter 22): each lane's number of words
  const code: number[] = [];
  const get = (local: number): void => void code.push(op.get, local);
  const i32 = (value: number): void => void code.push(op.i32Const, ...sleb(value));
  for (let lane = 0; lane < 4; lane++) {
    const length = 2 + 5 * lane;
    // if (length < 0 || length + tailLength > maxBytes) 0 else splice(…)
    get(length);
    i32(0);
    code.push(op.i32LtS);
    get(length);
    get(1);
    code.push(op.i32Add);
    i32(maxBytes);
    code.push(op.i32GtS, op.i32Or, op.if, i32Type);
    i32(0);
    code.push(op.else);
    get(length);
    get(0);
    get(1);
    for (let i = 1; i <= 4; i++) get(length + i);
    i32(lane);
    code.push(op.call, 0, op.end, op.set, n[lane] as number);
  }
  for (const local of n) get(local);
  get(22);
  code.push(op.call, 1);
  const nan = f64Bytes(NaN);
  for (let lane = 0; lane < 4; lane++) {
    get(n[lane] as number);
    code.push(op.i32Eqz, op.if, 0x40);
    i32(resultsAt + 8 * lane);
    code.push(op.f64Const, ...nan, op.f64Store, 3, 0, op.end);
  }
  code.push(op.end);
  return [1, 4, i32Type].concat(code);
}

/**
 * The module: sha1-wasm.ts's memory imported (module e, name m); function 0 the lane splice (i32 ×8) → i32, the
 * four compressions (i32 ×4, f64) → () exported as "x", the batch (i32 ×22, f64) → () as "b".
 */
function moduleBytes(): Uint8Array {
  const splice = spliceBody(true);
  const compress = compress4Body();
  const batch = batchBody(4 * 64 - 9); // sha1.ts's maxShortBytes: the lanes hold four blocks
  return Uint8Array.from(
    [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00].concat(
      section(1, [3, 0x60, 8, ...Array<number>(8).fill(i32Type), 1, i32Type, 0x60, 5, ...Array<number>(4).fill(i32Type), f64Type, 0, 0x60, 23, ...Array<number>(22).fill(i32Type), f64Type, 0]), // types
      section(2, [1, 1, 0x65, 1, 0x6d, 0x02, 0x00, 1]), // one import, e.m: a memory of at least one page
      section(3, [3, 0, 1, 2]),
      section(7, [2, 1, 0x78, 0x00, 1, 1, 0x62, 0x00, 2]), // exports "x", "b"
      section(10, [3].concat(uleb(splice.length), splice, uleb(compress.length), compress, uleb(batch.length), batch)),
    ),
  );
}

/**
 * The four-lane hash: `lanes` the interleaved messages (word j of lane k at 4j + k; sha1.ts writes a head's words
 * past its fourth there), `compress(n0, n1, n2, n3, divisor)` hashes the lanes as they are (n: a lane's words, 0 for
 * none) into `results`, each divided by `divisor`; `batch` splices each lane from its head and a tail memo (as
 * sha1-wasm.ts's splice completes the single message) and compresses them.
 */
export interface WasmSha1x4 {
  readonly lanes: Int32Array;
  readonly compress: (n0: number, n1: number, n2: number, n3: number, divisor: number) => void;
  /** `batch(slot, tailLength, …per lane: headLength (-1: none), w0, w1, w2, w3, divisor)`: splice and compress, NaN for a lane left out. */
  readonly batch: (slot: number, tailLength: number, ...lanes: number[]) => void;
  readonly results: Float64Array;
}

/**
 * The four-lane hash on `memory` (sha1-wasm.ts's module's), or why it cannot be had: a WebAssembly without SIMD
 * (a CPU without SSE4.1, or an engine built without it) refuses to compile the module.
 */
export function instantiateSha1x4(wasm: WebAssemblyApi, memory: object): WasmSha1x4 | string {
  try {
    const instance = new wasm.Instance(new wasm.Module(moduleBytes()), { e: { m: memory } });
    const buffer = (memory as { readonly buffer: ArrayBuffer }).buffer;
    return {
      lanes: new Int32Array(buffer, laneMessageAt, 4 * 64),
      compress: instance.exports.x as WasmSha1x4['compress'],
      batch: instance.exports.b as WasmSha1x4['batch'],
      results: new Float64Array(buffer, resultsAt, 4),
    };
  } catch (error) {
    return `WebAssembly SIMD failed: ${(error as Error).message}`;
  }
}

const made =
  wasmSha1 === null ? 'no WebAssembly hash' : instantiateSha1x4((globalThis as { WebAssembly?: WebAssemblyApi }).WebAssembly as WebAssemblyApi, wasmSha1.memory);

/** The four-lane hash, or null where it is unavailable (hash.ts then hashes one flag at a time). */
export const wasmSha1x4: WasmSha1x4 | null = typeof made === 'string' ? null : made;

/** Why the four-lane hash is not in use (the start log says so), or null when it is. */
export const wasmSha1x4Unavailable: string | null = typeof made === 'string' ? made : null;
