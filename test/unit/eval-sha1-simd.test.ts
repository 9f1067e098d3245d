/**
 * The four-lane SHA-1 (sha1-simd.ts) and sha1.ts's batch over it: each lane the same 60 bits as node:crypto, for
 * lanes of different lengths and block counts in one call (heads of every shape: multi-byte characters, unpaired
 * surrogates, messages ending at each block boundary), over stale lane memory; unused and too-long lanes leave the
 * others alone; and where the module cannot be had (no WebAssembly, no SIMD) the reason is given and hashes are
 * computed one at a time, with the same answers.
 */
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { padded, reference } from '../support/sha1-reference.js';
import { instantiateSha1x4, wasmSha1x4, wasmSha1x4Unavailable } from '../../src/eval/sha1-simd.js';
import { maxShortBytes, messageHeads, sha1First60Of, sha1First60Of4 } from '../../src/eval/sha1.js';
import { wasmSha1, type WebAssemblyApi } from '../../src/eval/sha1-wasm.js';

/** What a lane gives for head, value and salt (each part's UTF-8 in turn): NaN past maxShortBytes. */
const expectedOf = (...parts: string[]): number => {
  const bytes = Buffer.concat(parts.map((part) => Buffer.from(part)));
  return bytes.length > maxShortBytes ? NaN : reference(bytes);
};


const unit = fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0, max: 0x7ff }), fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 0xd800, max: 0xdfff }));
const text = (maxLength: number): fc.Arbitrary<string> =>
  fc.oneof(fc.string({ unit: 'binary', maxLength }), fc.array(unit, { maxLength }).map((units) => String.fromCharCode(...units)));

/** sha1First60Of4 of `heads` (the first, then up to three others) in one array after an unrelated head. */
function batchOf(headTexts: readonly string[], value: string, salt: string): number[] {
  const heads = messageHeads(['an earlier head', ...headTexts]);
  const at = heads.at.slice(1);
  const out = [-1, -1, -1, -1];
  expect(sha1First60Of4(heads.words, at[0] as number, at.slice(1), value, salt, 1, out)).toBe(true);
  return out.slice(0, headTexts.length);
}

describe('wasmSha1x4', () => {
  it('is available here (node 20 and later have WebAssembly SIMD on x86-64 and arm64)', () => {
    expect(wasmSha1x4).not.toBeNull();
    expect(wasmSha1x4Unavailable).toBeNull();
  });

  it('compresses four messages of different lengths (one to four blocks each) as node:crypto, over stale lanes', () => {
    const x4 = wasmSha1x4 as NonNullable<typeof wasmSha1x4>;
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: maxShortBytes }), { minLength: 4, maxLength: 4 }), (arrays) => {
        x4.lanes.fill(-1);
        const counts = arrays.map((array, lane) => {
          const message = padded(Buffer.from(array));
          for (let j = 0; j < message.length; j++) x4.lanes[4 * j + lane] = message[j] as number;
          return message.length;
        });
        x4.compress(counts[0] as number, counts[1] as number, counts[2] as number, counts[3] as number, 1);
        expect([...x4.results]).toEqual(arrays.map((array) => reference(Buffer.from(array))));
      }),
      { numRuns: 1000 },
    );
  });

  it('leaves an unused lane (0 words) out without disturbing the others', () => {
    const x4 = wasmSha1x4 as NonNullable<typeof wasmSha1x4>;
    const bytes = [Buffer.from('a'), Buffer.alloc(0), Buffer.from('x'.repeat(120)), Buffer.alloc(0)];
    x4.lanes.fill(-1);
    const counts = bytes.map((b, lane) => {
      if (lane % 2 === 1) return 0;
      const message = padded(b);
      for (let j = 0; j < message.length; j++) x4.lanes[4 * j + lane] = message[j] as number;
      return message.length;
    });
    x4.compress(counts[0] as number, counts[1] as number, counts[2] as number, counts[3] as number, 1);
    expect(x4.results[0]).toBe(reference(bytes[0] as Buffer));
    expect(x4.results[2]).toBe(reference(bytes[2] as Buffer));
  });

  it('reports why it is unavailable where WebAssembly refuses the module (no SIMD)', () => {
    const noSimd: WebAssemblyApi = {
      Module: class {
        constructor() {
          throw new Error('Wasm SIMD unsupported');
        }
      },
      Instance: class {
        exports = {};
      },
    };
    expect(instantiateSha1x4(noSimd, (wasmSha1 as NonNullable<typeof wasmSha1>).memory)).toBe('WebAssembly SIMD failed: Wasm SIMD unsupported');
  });
});

describe('sha1First60Of4 (up to four heads, one value and salt)', () => {
  it('equals node:crypto in every lane for every head length modulo 4, with messages ending at each block boundary', () => {
    for (const total of [0, 1, 54, 55, 56, 63, 64, 65, 118, 119, 120, 183, 184, maxShortBytes, maxShortBytes + 1]) {
      for (let h = 0; h < 8; h++) {
        const headTexts = [h, h + 1, h + 2, h + 3].map((n) => 'k'.repeat(Math.min(n + 1, total)));
        for (const salt of ['', 'variant']) {
          const value = 'v'.repeat(Math.max(0, total - (headTexts[0] as string).length - salt.length));
          expect(batchOf(headTexts, value, salt), `total ${total}, head ${h}`).toEqual(headTexts.map((head) => expectedOf(head, value, salt)));
        }
      }
    }
  });

  it('equals node:crypto with multi-byte characters and unpaired surrogates in heads and values', () => {
    const shapes = ['x', 'é', '€', '😀', '\ud800', '\udc00'];
    for (const left of shapes) {
      for (const right of shapes) {
        for (const n of [0, 1, 20, 40, 50, 60, 100]) {
          const headTexts = [`${left}.`, `${'h'.repeat(n)}${left}.`, `${right}${left}`, `k${right}.`];
          const value = `${right}${'v'.repeat(n)}${left}`;
          expect(batchOf(headTexts, value, 'variant')).toEqual(headTexts.map((head) => expectedOf(head, value, 'variant')));
        }
      }
    }
  });

  it('equals node:crypto and sha1First60Of over random batches of one to four heads (lanes of different lengths, some too long)', () => {
    const batch = fc.record({
      heads: fc.array(fc.oneof(text(40), text(200)), { minLength: 1, maxLength: 4 }),
      value: fc.oneof(fc.constantFrom('user-1', '', 'é😀', '018f3c2a-7b1e-7c4d-9a2f-3b5e6d7c8f90'), text(60)),
      salt: fc.constantFrom('', 'variant'),
    });
    fc.assert(
      fc.property(fc.array(batch, { minLength: 1, maxLength: 10 }), (batches) => {
        for (const { heads: headTexts, value, salt } of batches) {
          const ours = batchOf(headTexts, value, salt);
          expect(ours).toEqual(headTexts.map((head) => expectedOf(head, value, salt)));
          const heads = messageHeads(headTexts);
          expect(ours).toEqual(heads.at.map((at) => sha1First60Of(heads.words, at, value, salt) ?? NaN));
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('declines (false, the output untouched) when the tail alone is too long', () => {
    const heads = messageHeads(['a.', 'b.']);
    const out = [7, 7, 7, 7];
    expect(sha1First60Of4(heads.words, heads.at[0] as number, [heads.at[1] as number], 'v'.repeat(maxShortBytes + 1), '', 1, out)).toBe(false);
    expect(out).toEqual([7, 7, 7, 7]);
  });

  it('is unavailable without WebAssembly (node --jitless), with a reason, and declines so that hashes are computed one at a time', () => {
    const script = `
      const { wasmSha1x4, wasmSha1x4Unavailable } = await import('./src/eval/sha1-simd.ts');
      const { messageHeads, sha1First60Of4 } = await import('./src/eval/sha1.ts');
      const heads = messageHeads(['a.', 'b.']);
      console.log(JSON.stringify({ absent: wasmSha1x4 === null, reason: wasmSha1x4Unavailable, batched: sha1First60Of4(heads.words, heads.at[0], [heads.at[1]], 'v', '', 1, [0, 0]) }));`;
    const result = JSON.parse(execFileSync(process.execPath, ['--jitless', '--import', 'tsx', '--input-type=module', '-e', script], { cwd: process.cwd(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })) as { absent: boolean; reason: string | null; batched: boolean };
    expect(result).toEqual({ absent: true, reason: 'no WebAssembly hash', batched: false });
  });
});
