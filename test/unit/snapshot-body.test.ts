import { brotliCompressSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodeBody, encodeBody } from '../../src/fleet/snapshot-body.js';

const body = Buffer.from(JSON.stringify({ flags: Array.from({ length: 200 }, (_, i) => ({ key: `flag-${i}`, active: true, filters: { groups: [] } })) }));

describe('snapshot body in Redis', () => {
  it('round-trips compressed, several times smaller', async () => {
    const stored = await encodeBody(body);
    expect(stored.length * 5).toBeLessThan(body.length);
    expect(await decodeBody(stored, 'br', body.length)).toEqual(body);
  });

  it('reads a raw body of a version 1 head as it is', async () => {
    expect(await decodeBody(body, 'identity', body.length)).toBe(body);
  });

  it('refuses bytes that are not Brotli', async () => {
    expect(await decodeBody(body, 'br', 1 << 20)).toBe('is not valid Brotli');
  });

  it('refuses a body that decompresses past the bound, without allocating it', async () => {
    const bomb = brotliCompressSync(Buffer.alloc(64 << 20));
    expect(bomb.length).toBeLessThan(1 << 10);
    expect(await decodeBody(bomb, 'br', 1 << 20)).toBe('decompresses past FLAG_SIDECAR_UPSTREAM_MAX_BODY');
    expect(await decodeBody(await encodeBody(body), 'br', body.length - 1)).toBe('decompresses past FLAG_SIDECAR_UPSTREAM_MAX_BODY');
  });
});
