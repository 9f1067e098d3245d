/**
 * The pieces of WebAssembly's binary format that the hand-assembled SHA-1 modules use (sha1-wasm.ts, sha1-simd.ts):
 * LEB128 immediates, the opcodes by name, sections, a double's bytes. Pure functions of their arguments.
 */

/** Signed LEB128 of a 32-bit integer (i32.const's immediate). */
export function sleb(value: number): number[] {
  const out: number[] = [];
  let v = value | 0;
  for (;;) {
    const byte = v & 0x7f;
    v >>= 7;
    if ((v === 0 && (byte & 0x40) === 0) || (v === -1 && (byte & 0x40) !== 0)) {
      out.push(byte);
      return out;
    }
    out.push(byte | 0x80);
  }
}

/** Unsigned LEB128 (sizes, indexes). */
export function uleb(value: number): number[] {
  const out: number[] = [];
  let v = value >>> 0;
  do {
    const byte = v & 0x7f;
    v >>>= 7;
    out.push(v === 0 ? byte : byte | 0x80);
  } while (v !== 0);
  return out;
}

export const op = {
  block: 0x02,
  if: 0x04,
  else: 0x05,
  loop: 0x03,
  br: 0x0c,
  brIf: 0x0d,
  end: 0x0b,
  call: 0x10,
  select: 0x1b,
  store: 0x36,
  i32GeU: 0x4f,
  i32GtU: 0x4b,
  i32GtS: 0x4a,
  i32LtS: 0x48,
  i32Eqz: 0x45,
  f64Store: 0x39,
  i32Sub: 0x6b,
  i32Shl: 0x74,
  i32ShrS: 0x75,
  get: 0x20,
  set: 0x21,
  tee: 0x22,
  load: 0x28,
  i32Const: 0x41,
  f64Const: 0x44,
  i32LtU: 0x49,
  i32Add: 0x6a,
  i32Mul: 0x6c,
  i32And: 0x71,
  i32Or: 0x72,
  i32Xor: 0x73,
  i32ShrU: 0x76,
  i32Rotl: 0x77,
  f64Add: 0xa0,
  f64Mul: 0xa2,
  f64ConvertI32U: 0xb8,
} as const;

/** The vector instructions used (after the 0xfd prefix; the numbers are LEB128-encoded). */
export const simd = {
  load: 0x00,
  store: 0x0b,
  const: 0x0c,
  shuffle: 0x0d,
  i32x4Splat: 0x11,
  i32x4ReplaceLane: 0x1c,
  i32x4Eq: 0x37,
  and: 0x4e,
  or: 0x50,
  xor: 0x51,
  bitselect: 0x52,
  i32x4Shl: 0xab,
  i32x4ShrU: 0xad,
  i32x4Add: 0xae,
  f64x2Add: 0xf0,
  f64x2Mul: 0xf2,
  f64x2Div: 0xf3,
  f64x2Splat: 0x14,
  f64x2ConvertLowI32x4U: 0xff,
} as const;

/** A section: its id, its size, its content. */
export const section = (id: number, content: number[]): number[] => [id].concat(uleb(content.length), content); // concat: no spread of a long array at start


/** A double's bytes, little-endian (instantiate only runs on little-endian hosts). */
export const f64Bytes = (value: number): number[] => [...new Uint8Array(new Float64Array([value]).buffer)];

