/**
 * The WebAssembly SHA-1 (sha1-wasm.ts) that sha1.ts uses wherever it can: available on this node, and the same 60
 * bits as the JavaScript compression it stands in for (sha1-block.ts, which `node --jitless` still uses) and as
 * node:crypto, for every number of blocks sha1.ts hashes, and through its splice for every head length modulo 4.
 * (eval-sha1.test.ts checks sha1.ts's whole path, which goes through this module, against node:crypto.)
 */
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { padded, reference } from '../support/sha1-reference.js';
import { sha1Compress } from '../../src/eval/sha1-block.js';
import { wasmSha1, wasmSha1Unavailable } from '../../src/eval/sha1-wasm.js';



describe('wasmSha1', () => {
  it('is available here (node with WebAssembly, a little-endian host)', () => {
    expect(wasmSha1).not.toBeNull();
    expect(wasmSha1Unavailable).toBeNull();
  });

  it('is absent without WebAssembly (node --jitless), where sha1.ts hashes in JavaScript as node:crypto does', () => {
    const lengths = [0, 1, 3, 4, 5, 55, 56, 63, 64, 119, 120, 200, 247];
    const script = `
      const { wasmSha1, wasmSha1Unavailable } = await import('./src/eval/sha1-wasm.ts');
      const { messageHeads, sha1First60Of } = await import('./src/eval/sha1.ts');
      const heads = messageHeads(['flag-key.', 'k.', 'abc']);
      const out = [];
      for (const n of ${JSON.stringify(lengths)}) for (const h of [0, 1, 2]) for (const salt of ['', 'variant']) out.push(sha1First60Of(heads.words, heads.at[h], 'v'.repeat(n), salt));
      console.log(JSON.stringify({ absent: wasmSha1 === null, reason: wasmSha1Unavailable, out }));`;
    const result = JSON.parse(execFileSync(process.execPath, ['--jitless', '--import', 'tsx', '--input-type=module', '-e', script], { cwd: process.cwd(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })) as { absent: boolean; reason: string | null; out: Array<number | null> };
    const expected: Array<number | null> = [];
    for (const n of lengths) {
      for (const head of ['flag-key.', 'k.', 'abc']) {
        for (const salt of ['', 'variant']) {
          const bytes = Buffer.from(`${head}${'v'.repeat(n)}${salt}`);
          expected.push(bytes.length > 4 * 64 - 9 ? null : reference(bytes));
        }
      }
    }
    expect(result.absent).toBe(true);
    expect(result.reason).toMatch(/no WebAssembly/);
    expect(result.out).toEqual(expected);
  });

  it('compresses as sha1-block.ts and node:crypto, one to four blocks', () => {
    const sha = wasmSha1 as NonNullable<typeof wasmSha1>;
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4 * 64 - 9 }), (array) => {
        const bytes = Buffer.from(array);
        const message = padded(bytes);
        sha.message.set(message);
        expect(sha.compress(message.length)).toBe(reference(bytes));
        expect(sha1Compress(message, message.length)).toBe(reference(bytes));
      }),
      { numRuns: 2000 },
    );
  });

  it('splices a head (four words given, the rest in the message) and a memo tail at every head length modulo 4, over stale words', () => {
    const sha = wasmSha1 as NonNullable<typeof wasmSha1>;
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 120 }), fc.uint8Array({ maxLength: 120 }), fc.integer({ min: 0, max: 3 }), (headArray, tailArray, slot) => {
        const head = Buffer.from(headArray);
        const tail = Buffer.from(tailArray);
        // Stale words everywhere first: the splice must write every word it hashes.
        sha.message.fill(-1);
        sha.tails[slot]?.fill(-1);
        // The head's words, its last one zero-padded (as sha1.ts gives them): the first four as arguments, zero past
        // the head, the rest in the message.
        const headWords = Buffer.alloc(Math.max(4, Math.ceil(head.length / 4)) * 4);
        head.copy(headWords);
        const firstWords = [0, 1, 2, 3].map((i) => headWords.readInt32BE(i * 4));
        for (let i = 4; i < headWords.length / 4; i++) sha.message[i] = headWords.readInt32BE(i * 4);
        // The tail and its 0x80 marker at each byte offset a (a leading zero bytes), as sha1.ts's tail memo.
        const marked = Buffer.concat([tail, Buffer.from([0x80])]);
        for (let a = 0; a < 4; a++) {
          const shifted = Buffer.alloc(Math.ceil((a + marked.length) / 4) * 4);
          marked.copy(shifted, a);
          for (let j = 0; j < shifted.length / 4; j++) (sha.tails[slot] as Int32Array)[a * 64 + j] = shifted.readInt32BE(j * 4);
        }
        const [w0, w1, w2, w3] = firstWords as [number, number, number, number];
        expect(sha.splice(head.length, slot, tail.length, w0, w1, w2, w3)).toBe(reference(Buffer.concat([head, tail])));
      }),
      { numRuns: 2000 },
    );
  });
});
