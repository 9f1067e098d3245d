/**
 * The JavaScript SHA-1 of the bucketing hash against node:crypto: the same 60 bits for every input it accepts
 * (random strings of every UTF-16 shape, lengths across the block boundaries), and null past its limit.
 */
import { hash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maxShortBytes, sha1First60 } from '../../src/eval/sha1.js';

const reference = (text: string): number => {
  const digest = hash('sha1', text, 'buffer');
  return digest.readUInt32BE(0) * 0x10000000 + ((digest.readUInt32BE(4) >>> 4) & 0x0fffffff);
};

describe('sha1First60', () => {
  it('equals node:crypto on random strings (lone surrogates, astral characters, every length up to the limit)', () => {
    const unit = fc.oneof(
      fc.integer({ min: 0x20, max: 0x7e }),
      fc.integer({ min: 0, max: 0x7ff }),
      fc.integer({ min: 0, max: 0xffff }),
      fc.integer({ min: 0xd800, max: 0xdfff }),
    );
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 120 }),
      fc.array(unit, { maxLength: 130 }).map((units) => String.fromCharCode(...units)),
    );
    fc.assert(
      fc.property(text, (t) => {
        const ours = sha1First60(t);
        if (Buffer.byteLength(t) > maxShortBytes) expect(ours).toBeNull();
        else expect(ours).toBe(reference(t));
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
});
