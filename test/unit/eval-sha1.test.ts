/**
 * The JavaScript SHA-1 of the bucketing hash against node:crypto: the same 60 bits for every input it accepts
 * (random strings of every UTF-16 shape, every length and every split into a head and a tail across the block
 * boundaries, multi-byte characters straddling them), and null past its limit; the tail memo never answers for
 * another value or salt.
 */
import { hash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maxShortBytes, messageHeads, sha1First60, sha1First60Of } from '../../src/eval/sha1.js';

const reference = (text: string | Buffer): number => {
  const digest = hash('sha1', text, 'buffer');
  return digest.readUInt32BE(0) * 0x10000000 + ((digest.readUInt32BE(4) >>> 4) & 0x0fffffff);
};
const expected = (text: string): number | null => (Buffer.byteLength(text) > maxShortBytes ? null : reference(text));
/** What sha1First60Of hashes: each part's UTF-8 in turn (a surrogate pair split between two parts is two U+FFFD). */
const expectedOf = (...parts: string[]): number | null => {
  const bytes = Buffer.concat(parts.map((part) => Buffer.from(part)));
  return bytes.length > maxShortBytes ? null : reference(bytes);
};

const unit = fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0, max: 0x7ff }), fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 0xd800, max: 0xdfff }));
const text = (maxLength: number): fc.Arbitrary<string> =>
  fc.oneof(fc.string({ unit: 'binary', maxLength }), fc.array(unit, { maxLength }).map((units) => String.fromCharCode(...units)));

/** sha1First60Of with `head` encoded beforehand, after another head in the same array (so not at offset 0). */
const hashOf = (head: string, value: string, salt: string): number | null => {
  const heads = messageHeads(['an earlier head', head]);
  return sha1First60Of(heads.words, heads.at[1] as number, value, salt);
};

/** Characters of 1, 2, 3 and 4 UTF-8 bytes, and unpaired surrogates (3 bytes: U+FFFD). */
const shapes = ['x', 'é', '€', '😀', '\ud800', '\udc00'];

describe('sha1First60', () => {
  it('equals node:crypto on random strings (lone surrogates, astral characters, every length up to the limit)', () => {
    fc.assert(
      fc.property(text(130), (t) => {
        expect(sha1First60(t)).toBe(expected(t));
      }),
      { numRuns: 20_000 },
    );
  });

  it('equals node:crypto at every ASCII length from 0 to the limit, and gives null one byte past it', () => {
    for (let n = 0; n <= maxShortBytes; n++) {
      const t = 'flag-key.'.concat('x'.repeat(n)).slice(0, n);
      expect(sha1First60(t), `length ${n}`).toBe(reference(t));
    }
    expect(sha1First60('x'.repeat(maxShortBytes + 1))).toBeNull();
    expect(sha1First60('é'.repeat(Math.ceil((maxShortBytes + 1) / 2)))).toBeNull();
  });

  it('equals node:crypto with each kind of character at every byte position (straddling each block boundary)', () => {
    for (const shape of shapes) {
      for (let n = 0; n <= maxShortBytes + 4; n++) {
        const t = `${'a'.repeat(n)}${shape}b`;
        expect(sha1First60(t), `${JSON.stringify(shape)} after ${n} bytes`).toBe(expected(t));
      }
    }
  });
});

describe('sha1First60Of (a head encoded once, a tail remembered per salt)', () => {
  it('equals node:crypto for every head length and every total length 0–247 and past it, with and without a salt', () => {
    // Every head in one array, as compile.ts keeps a snapshot's.
    const heads = messageHeads(Array.from({ length: maxShortBytes + 2 }, (_, h) => 'k'.repeat(h)));
    for (let h = 0; h <= maxShortBytes + 1; h++) {
      for (let v = 0; h + v <= maxShortBytes + 8; v++) {
        for (const salt of ['', 'variant']) {
          const value = 'v'.repeat(v);
          const ours = sha1First60Of(heads.words, heads.at[h] as number, value, salt);
          expect(ours, `head ${h}, value ${v}, salt ${salt}`).toBe(expected(`${'k'.repeat(h)}${value}${salt}`));
        }
      }
    }
  });

  it('equals node:crypto with multi-byte characters and unpaired surrogates on both sides of each split and at block boundaries', () => {
    for (const left of shapes) {
      for (const right of shapes) {
        for (let n = 0; n <= 70; n++) {
          for (const h of [0, 1, 2, 3, 54, 55, 60, 63, 64, 118, 119]) {
            const headText = `${'h'.repeat(h)}${left}`;
            const value = `${right}${'v'.repeat(n)}${left}`;
            expect(hashOf(headText, value, ''), `${h} ${n}`).toBe(expectedOf(headText, value));
            expect(hashOf(headText, value, 'variant'), `${h} ${n} salted`).toBe(expectedOf(headText, value, 'variant'));
          }
        }
      }
    }
  });

  it('equals node:crypto over random sequences of heads, values and salts (the memo hit and missed in every order)', () => {
    const call = fc.record({ head: text(40), value: fc.oneof(fc.constantFrom('user-1', 'user-2', '', 'é😀'), text(60)), salt: fc.constantFrom('', '', 'variant', 'x\ud800') });
    fc.assert(
      fc.property(fc.array(call, { minLength: 1, maxLength: 30 }), (calls) => {
        for (const { head, value, salt } of calls) expect(hashOf(head, value, salt)).toBe(expectedOf(head, value, salt));
      }),
      { numRuns: 2_000 },
    );
  });

  it('gives null for a head past the limit whatever the tail', () => {
    expect(hashOf('k'.repeat(maxShortBytes + 1), '', '')).toBeNull();
    expect(hashOf('€'.repeat(83), 'v', '')).toBeNull();
    expect(hashOf('k'.repeat(maxShortBytes), '', '')).toBe(expected('k'.repeat(maxShortBytes)));
  });
});
