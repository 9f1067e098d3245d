/**
 * lz-string's `compressToBase64` format ("lz64", what old posthog-js sends with `compression=lz64`), decoded with a
 * cap on the output checked at every emit, as upstream's capture does (rust/common/compression/src/lz64.rs,
 * `decompress_lz64_capped`): LZW rebuilds its dictionary while it decodes, so a few kilobytes of input can stand
 * for gigabytes, and a decoder that measures only its result would have built them first. The dictionary holds
 * ranges into the output, not copies, so memory stays a small multiple of the cap. Pure; never throws.
 */

/** lz-string's base64 alphabet; a character's index is its 6-bit value (`=` is 64, read for its low bits only). */
const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=';
const valueOf = new Int8Array(128).fill(-1);
for (let i = 0; i < alphabet.length; i++) valueOf[alphabet.charCodeAt(i)] = i;

/** The stream's codes: a literal 8-bit unit, a literal 16-bit unit, the end. */
const u8Code = 0;
const u16Code = 1;
const closeCode = 2;
/** Wider codes only come from corrupt input (the dictionary the cap bounds stays far smaller). */
const maxCodeBits = 31;

/** What decoding found: the text, an output past the cap, or a stream that is not lz-string's. */
export type Lz64Result =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'too_large' }
  | { readonly kind: 'invalid' }
  | { readonly kind: 'not_utf16' };

/** A growable buffer of UTF-16 code units that refuses to pass `limit` units. */
class Units {
  data = new Uint16Array(1024);
  length = 0;
  constructor(private readonly limit: number) {}
  /** False (nothing added) when `count` more units would pass the limit. */
  reserve(count: number): boolean {
    const needed = this.length + count;
    if (needed > this.limit) return false;
    if (needed > this.data.length) {
      const grown = new Uint16Array(Math.min(Math.max(needed, this.data.length * 2), Math.max(this.limit, needed)));
      grown.set(this.data.subarray(0, this.length));
      this.data = grown;
    }
    return true;
  }
  push(unit: number): boolean {
    if (!this.reserve(1)) return false;
    this.data[this.length++] = unit;
    return true;
  }
  copy(start: number, count: number): boolean {
    if (!this.reserve(count)) return false;
    this.data.copyWithin(this.length, start, start + count);
    this.length += count;
    return true;
  }
}

/** True when the units hold an unpaired surrogate (text UTF-8 cannot carry). */
function hasLoneSurrogate(units: Uint16Array, length: number): boolean {
  for (let i = 0; i < length; i++) {
    const unit = units[i] as number;
    if (unit < 0xd800 || unit > 0xdfff) continue;
    const next = i + 1 < length ? (units[i + 1] as number) : 0;
    if (unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) i += 1;
    else return true;
  }
  return false;
}

function textOf(units: Uint16Array, length: number): string {
  let text = '';
  for (let i = 0; i < length; i += 8192) text += String.fromCharCode(...units.subarray(i, Math.min(i + 8192, length)));
  return text;
}

/**
 * Decode `input` (lz-string's base64 text; characters outside its alphabet are skipped, as lz-string does) into
 * at most `maxUnits` UTF-16 code units. A stream cut short is `invalid`; text with an unpaired surrogate is
 * `not_utf16` (upstream's UTF-16 to UTF-8 conversion fails on it).
 */
export function decodeLz64(input: string, maxUnits: number): Lz64Result {
  let index = 0;
  const nextValue = (): number => {
    while (index < input.length) {
      const code = input.charCodeAt(index++);
      const value = code < 128 ? (valueOf[code] as number) : -1;
      if (value >= 0) return value;
    }
    return -1;
  };
  let value = nextValue();
  if (value < 0) return { kind: 'text', text: '' };
  let position = 32;
  let exhausted = false;
  /** The next `bits` bits, lowest first; -1 when the input ends first (the bit after the last is needed too). */
  const read = (bits: number): number => {
    let result = 0;
    for (let i = 0, power = 1; i < bits; i++, power *= 2) {
      if (exhausted) return -1;
      if ((value & position) !== 0) result += power;
      position >>= 1;
      if (position === 0) {
        position = 32;
        value = nextValue();
        if (value < 0) {
          exhausted = true;
          return -1;
        }
      }
    }
    return result;
  };
  const literal = (code: number): number => read(code === u8Code ? 8 : 16);

  const first = read(2);
  if (first === closeCode) return { kind: 'text', text: '' };
  if (first !== u8Code && first !== u16Code) return { kind: 'invalid' };
  const firstUnit = literal(first);
  if (firstUnit < 0) return { kind: 'invalid' };
  const out = new Units(maxUnits);
  if (!out.push(firstUnit)) return { kind: 'too_large' };
  // Entry i is the output range [starts[i], starts[i] + lengths[i]); 0–2 are the reserved codes, never read.
  const starts: number[] = [0, 0, 0, 0];
  const lengths: number[] = [0, 0, 0, 1];
  let wStart = 0;
  let wLength = 1;
  let bits = 3;
  let enlargeIn = 4;
  for (;;) {
    if (bits > maxCodeBits) return { kind: 'invalid' };
    let code = read(bits);
    if (code < 0) return { kind: 'invalid' };
    let unit = -1;
    if (code === u8Code || code === u16Code) {
      unit = literal(code);
      if (unit < 0) return { kind: 'invalid' };
      starts.push(out.length);
      lengths.push(1);
      code = starts.length - 1;
      enlargeIn -= 1;
    } else if (code === closeCode) {
      if (hasLoneSurrogate(out.data, out.length)) return { kind: 'not_utf16' };
      return { kind: 'text', text: textOf(out.data, out.length) };
    }
    if (enlargeIn === 0) {
      enlargeIn = 2 ** bits;
      bits += 1;
    }
    let entryStart: number;
    let entryLength: number;
    if (unit >= 0) {
      if (!out.push(unit)) return { kind: 'too_large' };
      entryStart = out.length - 1;
      entryLength = 1;
    } else if (code < starts.length) {
      entryLength = lengths[code] as number;
      if (!out.copy(starts[code] as number, entryLength)) return { kind: 'too_large' };
      entryStart = out.length - entryLength;
    } else if (code === starts.length) {
      // LZW's code being defined now: w followed by w's first unit.
      if (!out.copy(wStart, wLength) || !out.push(out.data[wStart] as number)) return { kind: 'too_large' };
      entryLength = wLength + 1;
      entryStart = out.length - entryLength;
    } else return { kind: 'invalid' };
    // w plus the entry's first unit: contiguous, since the entry was emitted right after w.
    starts.push(wStart);
    lengths.push(wLength + 1);
    enlargeIn -= 1;
    wStart = entryStart;
    wLength = entryLength;
    if (enlargeIn === 0) {
      enlargeIn = 2 ** bits;
      bits += 1;
    }
  }
}
