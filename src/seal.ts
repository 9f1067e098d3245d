/**
 * Seals for shared state: state this sidecar writes where others could write too (Redis, the snapshot volume)
 * carries an HMAC-SHA-256 that every sidecar of the fleet can verify and a writer without the secret cannot
 * produce. The key is derived with HKDF-SHA-256 from FLAG_SIDECAR_FLEET_SECRET, else from the upstream key (which
 * every sidecar of a fleet already holds). Pure apart from node:crypto.
 *
 * A sealed value is one text line `fsseal1 <64 hex digits>` and a newline, then the payload bytes unchanged, so
 * a sealed JSON file stays readable. The MAC covers a context (what the value is and where it lives: kind,
 * Redis key or file, project) and the payload, so that a sealed value cannot be replayed as another kind, under
 * another project or key. Verification compares in constant time.
 *
 * Reuse: `sealer.seal(payload, sealContext(kind, where…))` before writing; `sealer.open(read, sameContext)` after
 * reading — null means unverifiable (unsealed: written by an older version or by hand; or sealed with another
 * secret, or altered): ignore it and count it.
 */
import { createHmac, createSecretKey, hkdfSync, timingSafeEqual, type KeyObject } from 'node:crypto';

const magic = 'fsseal1 ';
/** Bytes before the payload of a sealed value: the magic, the hex MAC and a newline. */
export const sealHeaderBytes = magic.length + 64 + 1;

/** Where the sealing secret comes from. */
export type SealSource = 'fleet_secret' | 'upstream_key';

/** The context of a sealed value: its kind and where it lives, joined unambiguously. */
export const sealContext = (kind: string, ...where: ReadonlyArray<string | number>): string => [kind, ...where].join('\u0000');

/** Whether `bytes` has the shape of a sealed value (says nothing of whether it verifies). */
export const looksSealed = (bytes: Buffer): boolean =>
  bytes.length >= sealHeaderBytes && bytes.toString('latin1', 0, magic.length) === magic && bytes[sealHeaderBytes - 1] === 0x0a;

/** Why a value did not open: for the one log line an unverifiable value gets. */
export const unverifiableReason = (bytes: Buffer): string =>
  looksSealed(bytes) ? 'its seal does not verify (sealed with another secret, or altered)' : 'not sealed (written by an older version, by hand, or by another program)';

/** The payload of a sealed value without verifying it: only for input trusted as configuration (a bootstrap file). */
export const stripSeal = (bytes: Buffer): Buffer => (looksSealed(bytes) ? bytes.subarray(sealHeaderBytes) : bytes);

/** Seals and opens values with one derived key. */
export interface Sealer {
  readonly source: SealSource;
  /** `payload` sealed under `context`. */
  seal(payload: Buffer | string, context: string): Buffer;
  /** The payload of `sealed` if its MAC verifies under `context`, else null. Never throws. */
  open(sealed: Buffer, context: string): Buffer | null;
}

/** Create a sealer for `secret` (the fleet secret or the upstream key). */
export function createSealer(secret: string, source: SealSource): Sealer {
  const key: KeyObject = createSecretKey(Buffer.from(hkdfSync('sha256', secret, 'flag-sidecar seal', 'shared state v1', 32)));

  function tag(payload: Buffer, context: string): Buffer {
    const contextBytes = Buffer.from(context, 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(contextBytes.length);
    return createHmac('sha256', key).update(length).update(contextBytes).update(payload).digest();
  }

  return {
    source,
    seal(payload, context) {
      const bytes = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
      return Buffer.concat([Buffer.from(`${magic}${tag(bytes, context).toString('hex')}\n`, 'latin1'), bytes]);
    },
    open(sealed, context) {
      if (!looksSealed(sealed)) return null;
      const given = Buffer.from(sealed.toString('latin1', magic.length, sealHeaderBytes - 1), 'hex');
      if (given.length !== 32) return null;
      const payload = sealed.subarray(sealHeaderBytes);
      return timingSafeEqual(given, tag(payload, context)) ? payload : null;
    },
  };
}
