/**
 * The fleet's published snapshot of a project, as it lives in Redis: a small JSON "head" (per variant: SHA-256
 * and size of the body, the size it has stored, upstream's ETag, the served ETag after a quota period,
 * fetched-at; for the project: the 402 body while quota limited, whether the plain variant is wanted, the
 * leader's last poll outcome, the fleet's size as the leader counted it, whether upstream is a relay) and, in
 * separate keys, each variant's body, Brotli-compressed (JSON shrinks 5–30×, and every follower reads it on each
 * change). Version 1 heads (raw bodies, no fleet size), written by older leaders during a rolling upgrade, are
 * still read. Also the messages of the snapshot and poll channels. Pure.
 *
 * Head and bodies are sealed (seal.ts) under their Redis key, so only a sidecar holding the fleet's secret can
 * publish them. Everything parsed here is still checked as untrusted: sizes are bounded, every field is checked
 * for type and range, ETags must be valid header values; anything else is refused with a one-line reason.
 */
import { createHash } from 'node:crypto';
import { sealContext, sealHeaderBytes } from '../seal.js';
import type { ProjectSnapshot, VariantName, VariantSnapshot } from '../store/snapshot.js';
import type { PollOutcome, PollStatus } from '../upstream/poller.js';

/** The seal context of a project's head: its Redis key (which names the fleet, upstream and project). */
export const headContext = (headKey: string): string => sealContext('snapshot-head', headKey);
/** The seal context of a variant's body: its Redis key. */
export const bodyContext = (bodyKey: string): string => sealContext('snapshot-body', bodyKey);

/** How a body is stored in Redis: Brotli (this version), or raw (version 1 heads). */
export type BodyEncoding = 'br' | 'identity';

/** One variant as the head describes it. */
export interface HeadVariant {
  /** SHA-256 and size of the body as served (decompressed). */
  readonly sha256: string;
  readonly bytes: number;
  /** Bytes of the value in Redis (sealed, compressed): what each follower reads on a change. */
  readonly stored: number;
  readonly encoding: BodyEncoding;
  readonly upstreamEtag: string | null;
  readonly servedEtag: string | null;
  readonly fetchedAt: number;
}

/** The leader's last poll, so followers show upstream's health as the leader sees it. */
export interface HeadPoll {
  readonly outcome: PollOutcome | null;
  readonly error: string | null;
  readonly failures: number;
  readonly at: number | null;
  readonly lastSuccessAt: number | null;
}

/** The head's record of the leader's poll state (none yet: nulls). */
export function headPollOf(poll: PollStatus | null): HeadPoll {
  return {
    outcome: poll?.lastOutcome ?? null,
    error: poll?.lastError ?? null,
    failures: poll?.consecutiveFailures ?? 0,
    at: poll?.lastPollAt ?? null,
    lastSuccessAt: poll?.lastSuccessAt ?? null,
  };
}

/** The leader's poll as a follower shows it at `now` (times from another clock are capped at now). */
export function pollStatusOf(poll: HeadPoll, now: number): PollStatus {
  const at = (t: number | null): number | null => (t === null ? null : Math.min(t, now));
  return { lastPollAt: at(poll.at), lastSuccessAt: at(poll.lastSuccessAt), lastOutcome: poll.outcome, lastError: poll.error, consecutiveFailures: poll.failures, nextPollAt: null, plain: null };
}

/** A project's published snapshot, without the bodies. */
export interface SnapshotHead {
  readonly generation: number;
  readonly leader: string;
  readonly quotaBody: Buffer | null;
  readonly plainWanted: boolean;
  readonly poll: HeadPoll;
  /** Sidecars subscribed to the fleet's channels when the leader last counted (null: not counted). */
  readonly fleetSize: number | null;
  /** The leader's last upstream answer came from a flag-sidecar relay. */
  readonly relay: boolean;
  readonly cohorts: HeadVariant | null;
  readonly plain: HeadVariant | null;
}

/** What a leader publishes besides the project: its poll, lease, fleet count and the stored size of each body. */
export interface HeadInput {
  readonly poll: HeadPoll;
  readonly generation: number;
  readonly leader: string;
  readonly fleetSize: number | null;
  readonly relay: boolean;
  /** Bytes of each variant's value in Redis. */
  readonly stored: Readonly<Partial<Record<VariantName, number>>>;
}

/** Largest 402 body published (a bigger one is published as upstream's default). */
export const maxQuotaBodyBytes = 16 * 1024;
/** Largest generation accepted (exact in Redis's Lua numbers, far above any real count of leader changes). */
export const maxGeneration = 1e12;
/** Largest head accepted from Redis. */
export const maxHeadBytes = 64 * 1024;
/** Largest fleet size accepted. */
export const maxFleetSize = 10_000_000;
const outcomes: readonly PollOutcome[] = ['updated', 'not_modified', 'quota_limited', 'refused', 'failed', 'invalid'];
const maxErrorChars = 300;

/** SHA-256 (hex) of a body. */
export type BodyDigest = (body: Buffer) => string;

/** A body digest computed once per Buffer (bodies are immutable and kept by the store). */
export function createBodyDigest(): BodyDigest {
  const digests = new WeakMap<Buffer, string>();
  return (body) => {
    let digest = digests.get(body);
    if (digest === undefined) {
      digest = createHash('sha256').update(body).digest('hex');
      digests.set(body, digest);
    }
    return digest;
  };
}

function describe(variant: VariantSnapshot | null, stored: number | undefined, digest: BodyDigest): HeadVariant | null {
  if (variant === null) return null;
  const { upstreamEtag, servedEtag, fetchedAt } = variant;
  return { sha256: digest(variant.body), bytes: variant.body.length, stored: stored ?? 0, encoding: 'br', upstreamEtag, servedEtag, fetchedAt };
}

/** The head of `project` as published by leader `input.leader` under `input.generation`. */
export function headOf(project: ProjectSnapshot, input: HeadInput, digest: BodyDigest): SnapshotHead {
  const { poll, generation, leader, fleetSize, relay, stored } = input;
  const quotaBody = project.quotaBody === null || project.quotaBody.length <= maxQuotaBodyBytes ? project.quotaBody : null;
  const error = poll.error === null ? null : poll.error.slice(0, maxErrorChars);
  return {
    generation, leader, quotaBody, plainWanted: project.plainWanted, poll: { ...poll, error },
    fleetSize: fleetSize === null ? null : Math.min(fleetSize, maxFleetSize), relay,
    cohorts: describe(project.cohorts, stored.cohorts, digest), plain: describe(project.plain, stored.plain, digest),
  };
}

/** The head as stored in Redis (JSON; the 402 body in base64). */
export function encodeHead(head: SnapshotHead): string {
  return JSON.stringify({ ...head, v: 2, quotaBody: head.quotaBody === null ? null : head.quotaBody.toString('base64') });
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isTime = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
const isCount = (value: unknown, max: number): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= max;
/** A header-safe ETag: visible ASCII and inner spaces, at most 512 characters. */
const isEtag = (value: unknown): value is string => typeof value === 'string' && value.length <= 512 && /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value);
const isOptionalEtag = (value: unknown): value is string | null => value === null || isEtag(value);

function parseVariant(value: unknown, maxBodyBytes: number, name: VariantName, version: number): HeadVariant | null | string {
  if (value === null) return null;
  if (!isRecord(value)) return `${name} is not an object`;
  const { sha256, bytes, upstreamEtag, servedEtag, fetchedAt } = value;
  if (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sha256)) return `${name}.sha256 is not a SHA-256`;
  if (!isCount(bytes, maxBodyBytes)) return `${name}.bytes is not a size within FLAG_SIDECAR_UPSTREAM_MAX_BODY`;
  if (!isOptionalEtag(upstreamEtag) || !isOptionalEtag(servedEtag)) return `${name} has an ETag that is not a header value`;
  if (!isTime(fetchedAt)) return `${name}.fetchedAt is not a time`;
  // Version 1 stored the raw body, sealed.
  if (version === 1) return { sha256, bytes, stored: bytes + sealHeaderBytes, encoding: 'identity', upstreamEtag, servedEtag, fetchedAt };
  const { stored, encoding } = value;
  if (encoding !== 'br') return `${name}.encoding is not br`;
  if (!isCount(stored, maxBodyBytes + sealHeaderBytes)) return `${name}.stored is not a size within FLAG_SIDECAR_UPSTREAM_MAX_BODY`;
  return { sha256, bytes, stored, encoding, upstreamEtag, servedEtag, fetchedAt };
}

function parsePoll(value: unknown): HeadPoll | string {
  if (!isRecord(value)) return 'poll is not an object';
  const { outcome, error, failures, at, lastSuccessAt } = value;
  if (outcome !== null && !outcomes.includes(outcome as PollOutcome)) return 'poll.outcome is not an outcome';
  if (error !== null && (typeof error !== 'string' || error.length > maxErrorChars)) return 'poll.error is not a short string';
  if (!isCount(failures, 1_000_000)) return 'poll.failures is not a count';
  if ((at !== null && !isTime(at)) || (lastSuccessAt !== null && !isTime(lastSuccessAt))) return 'poll times are not times';
  return { outcome: outcome as PollOutcome | null, error: error as string | null, failures, at: at as number | null, lastSuccessAt: lastSuccessAt as number | null };
}

/** A head read from Redis, or why it is refused. */
export type HeadResult = { readonly ok: true; readonly head: SnapshotHead } | { readonly ok: false; readonly error: string };

/** Parse and check a head read from Redis; bodies announced above `maxBodyBytes` are refused. */
export function parseHead(raw: Buffer, maxBodyBytes: number): HeadResult {
  const fail = (error: string): HeadResult => ({ ok: false, error });
  if (raw.length > maxHeadBytes) return fail(`head is larger than ${maxHeadBytes} bytes`);
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    return fail('head is not JSON');
  }
  if (!isRecord(value) || (value.v !== 1 && value.v !== 2)) return fail('head is not a version 1 or 2 object');
  const version = value.v;
  const { generation, leader, quotaBody, plainWanted } = value;
  if (!isCount(generation, maxGeneration)) return fail('generation is not a count up to 10^12');
  if (typeof leader !== 'string' || !/^[\x21-\x7e]{1,256}$/.test(leader)) return fail('leader is not an instance id');
  if (typeof plainWanted !== 'boolean') return fail('plainWanted is not a boolean');
  let quota: Buffer | null = null;
  if (quotaBody !== null) {
    if (typeof quotaBody !== 'string' || quotaBody.length > Math.ceil(maxQuotaBodyBytes / 3) * 4 || !/^[A-Za-z0-9+/]*={0,2}$/.test(quotaBody)) {
      return fail('quotaBody is not a bounded base64 string');
    }
    quota = Buffer.from(quotaBody, 'base64');
  }
  const poll = parsePoll(value.poll);
  if (typeof poll === 'string') return fail(poll);
  const fleetSize = version === 1 ? null : value.fleetSize;
  const relay = version === 1 ? false : value.relay;
  if (fleetSize !== null && !isCount(fleetSize, maxFleetSize)) return fail('fleetSize is not a count up to 10^7');
  if (typeof relay !== 'boolean') return fail('relay is not a boolean');
  const cohorts = parseVariant(value.cohorts, maxBodyBytes, 'cohorts', version);
  if (typeof cohorts === 'string') return fail(cohorts);
  if (cohorts === null) return fail('cohorts is missing');
  const plain = parseVariant(value.plain, maxBodyBytes, 'plain', version);
  if (typeof plain === 'string') return fail(plain);
  return { ok: true, head: { generation, leader, quotaBody: quota, plainWanted, poll, fleetSize, relay, cohorts, plain } };
}

/** A message of the snapshot channel: a new snapshot of a project, or its lease released. */
export type SnapshotNotice = { readonly kind: 'snapshot'; readonly project: number; readonly generation: number } | { readonly kind: 'released'; readonly project: number };

/** A message of the poll channel: a follower asks the project's leader to poll now (and keep the plain variant). */
export interface PollRequest {
  readonly project: number;
  readonly plain: boolean;
}

/** Encode a snapshot-channel message. */
export const encodeNotice = (notice: SnapshotNotice): string => JSON.stringify(notice);
/** Encode a poll-channel message. */
export const encodePollRequest = (request: PollRequest): string => JSON.stringify(request);

function parseSmall(raw: Buffer): Record<string, unknown> | null {
  if (raw.length > 512) return null;
  try {
    const value: unknown = JSON.parse(raw.toString('utf8'));
    return isRecord(value) && isCount(value.project, Number.MAX_SAFE_INTEGER) ? value : null;
  } catch {
    return null;
  }
}

/** A snapshot-channel message, or null when it is not one. */
export function parseNotice(raw: Buffer): SnapshotNotice | null {
  const value = parseSmall(raw);
  if (value === null) return null;
  const project = value.project as number;
  if (value.kind === 'released') return { kind: 'released', project };
  if (value.kind === 'snapshot' && isCount(value.generation, maxGeneration)) return { kind: 'snapshot', project, generation: value.generation };
  return null;
}

/** A poll-channel message, or null when it is not one. */
export function parsePollRequest(raw: Buffer): PollRequest | null {
  const value = parseSmall(raw);
  if (value === null || typeof value.plain !== 'boolean') return null;
  return { project: value.project as number, plain: value.plain };
}
