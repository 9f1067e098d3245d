/**
 * The bucketing hash of PostHog's SDKs (`getFeatureFlagHash` of `@posthog/core` 1.67.3): SHA-1 of
 * `"{key}{separator}{value}{salt}"` (UTF-8), its first 15 hex digits as an integer, divided by 0xFFFFFFFFFFFFFFF — a
 * float in [0, 1]. Computed synchronously (the SDK awaits WebCrypto): in JavaScript for the usual short inputs
 * (sha1.ts), else with a one-shot node:crypto SHA-1, read straight from the digest bytes. Either way the 60-bit integer
 * is formed as one correctly rounded double, exactly as the SDK's `parseInt(hex, 16)` rounds it.
 */
import { hash } from 'node:crypto';
import { messageHeads, sha1First60, sha1First60Of, sha1First60Of4, type MessageHeads } from './sha1.js';

/** 0xFFFFFFFFFFFFFFF as a double (it rounds to 2^60, as in the SDK). */
const longScale = 0xfffffffffffffff;

/** The first 60 bits of SHA-1(`text`) scaled to [0, 1], with node:crypto (inputs too long for sha1.ts). */
function longSha1(text: string): number {
  const digest = hash('sha1', text, 'buffer');
  // 32 + 28 bits: `high * 2^28` is exact; adding `low` rounds once, to the nearest double of the 60-bit value.
  const high = digest.readUInt32BE(0);
  const low = (digest.readUInt32BE(4) >>> 4) & 0x0fffffff;
  return (high * 0x10000000 + low) / longScale;
}

/** The first 60 bits of SHA-1(`text`) scaled to [0, 1]. */
const scaledSha1 = (text: string): number => {
  const short = sha1First60(text);
  return short !== null ? short / longScale : longSha1(text);
};

/** The flag keys' parts of their hash inputs (`"{key}."`), encoded once for flagHashOf: compile.ts keeps them. */
export const flagHashHeads = (keys: readonly string[]): MessageHeads => messageHeads(keys.map((key) => `${key}.`));

/**
 * flagHash of `key`, whose head is at `at` of `heads` (flagHashHeads' words): the same number, without encoding
 * the key again. (The parts are encoded one by one, which gives the whole's UTF-8 as the head ends with `.` and
 * the salts start with no surrogate.)
 */
export function flagHashOf(key: string, heads: Int32Array, at: number, bucketingValue: string, salt: '' | 'variant' = ''): number {
  const short = sha1First60Of(heads, at, bucketingValue, salt);
  return short !== null ? short / longScale : longSha1(`${key}.${bucketingValue}${salt}`);
}

/**
 * flagHashOf of the flags whose heads are at `at` and at each of `others` (at most three; sha1.ts sha1First60Of4),
 * for one bucketing value and salt, computed at once: into `out` in that order, NaN for a flag whose input is too
 * long (flagHashOf hashes those with node:crypto). False, `out` untouched, where they cannot be hashed at once.
 */
export function flagHashesOf(heads: Int32Array, at: number, others: readonly number[], bucketingValue: string, salt: '' | 'variant', out: number[]): boolean {
  return sha1First60Of4(heads, at, others, bucketingValue, salt, longScale, out);
}

/** The hash of flag `key` for a bucketing value (distinct id, device id or group key), with an optional salt. */
export const flagHash = (key: string, bucketingValue: string, salt = ''): number =>
  salt === '' || salt === 'variant' ? flagHashOf(key, flagHashHeads([key]).words, 0, bucketingValue, salt) : scaledSha1(`${key}.${bucketingValue}${salt}`);

/** `"holdout-"`: it ends in ASCII, so the parts' UTF-8 is the whole's. */
const holdoutHead = messageHeads(['holdout-']).words;

/** The holdout hash: the same for every flag and holdout (`"holdout-{value}"`). */
export function holdoutHash(bucketingValue: string): number {
  const short = sha1First60Of(holdoutHead, 0, bucketingValue, '');
  return short !== null ? short / longScale : longSha1(`holdout-${bucketingValue}`);
}
