/** What the SHA-1 tests compare with: node:crypto's digest, and SHA-1's padding done byte by byte. */
import { hash } from 'node:crypto';

/** The first 60 bits of node:crypto's SHA-1 of `bytes`, as the bucketing hash reads them (`high * 2^28 + low`). */
export const reference = (bytes: Buffer): number => {
  const digest = hash('sha1', bytes, 'buffer');
  return digest.readUInt32BE(0) * 0x10000000 + ((digest.readUInt32BE(4) >>> 4) & 0x0fffffff);
};

/** `bytes` padded as SHA-1 pads them, as big-endian words. */
export function padded(bytes: Buffer): Int32Array {
  const words = ((bytes.length + 9 + 63) >> 6) * 16;
  const block = Buffer.alloc(words * 4);
  bytes.copy(block);
  block[bytes.length] = 0x80;
  block.writeUInt32BE(bytes.length * 8, words * 4 - 4);
  const out = new Int32Array(words);
  for (let i = 0; i < words; i++) out[i] = block.readInt32BE(i * 4);
  return out;
}
