/**
 * The capped lz64 decoder against lz-string itself (the library old posthog-js compresses with): the same text on
 * every round trip, and the cap enforced while decoding (upstream's rust/common/compression/src/lz64.rs tests).
 */
import LZString from 'lz-string';
import { describe, expect, it } from 'vitest';
import { decodeLz64 } from '../../src/events/lz64.js';

const generous = 4 * 1024 * 1024;

describe('decodeLz64', () => {
  it.each([
    ['empty', ''],
    ['{}', '{}'],
    ['an event', '{"event":"$pageview","properties":{"$lib":"web"}}'],
    ['repetition', '{"event":"$pageview"},'.repeat(500)],
    ['non-ASCII', '{"event":"クリック","emoji":"🦔","accents":"ãéî"}'],
    ['100,000 times the same letter', 'a'.repeat(100_000)],
  ])('decodes %s as lz-string does', (_what, text) => {
    expect(decodeLz64(LZString.compressToBase64(text), generous)).toEqual({ kind: 'text', text });
  });

  it('decodes 300 generated payloads as lz-string does', () => {
    let seed = 0x5eed;
    const next = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648);
    const alphabet = ['a', 'b', '{', '}', '"', ':', ',', '0', '$pageview', 'properties', '🦔', 'é'];
    for (let i = 0; i < 300; i++) {
      let text = '';
      for (let n = 1 + (next() % 400); n > 0; n--) text += alphabet[next() % alphabet.length];
      const compressed = LZString.compressToBase64(text);
      expect(decodeLz64(compressed, generous), text).toEqual({ kind: 'text', text: LZString.decompressFromBase64(compressed) });
    }
  });

  it.each([
    ['a bomb (2 KB for 1 MB) is refused while small', LZString.compressToBase64('a'.repeat(1 << 20)), 4096, 'too_large'],
    ['exactly at the cap', LZString.compressToBase64('b'.repeat(4096)), 4096, 'text'],
    ['one unit over the cap', LZString.compressToBase64('b'.repeat(4097)), 4096, 'too_large'],
    ['a stream cut short', LZString.compressToBase64('{"event":"$pageview"}').slice(0, 14), generous, 'invalid'],
    ['one character', 'A', generous, 'invalid'],
    ['an unpaired surrogate', LZString.compressToBase64('x\ud800y'), generous, 'not_utf16'],
  ])('%s', (_what, input, cap, kind) => {
    expect(decodeLz64(input, cap).kind).toBe(kind);
  });

  it('skips characters outside its alphabet, as lz-string does', () => {
    expect(decodeLz64('!!!!', generous)).toEqual({ kind: 'text', text: '' });
    const compressed = LZString.compressToBase64('{"a":1}');
    expect(decodeLz64(`${compressed.slice(0, 3)}\n${compressed.slice(3)}`, generous)).toEqual({ kind: 'text', text: '{"a":1}' });
  });
});
