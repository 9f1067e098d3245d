/**
 * Immutable snapshots. A variant snapshot holds one local_evaluation body exactly as upstream sent it (served
 * verbatim, never re-serialized), a summary of its definitions and its ETag; the response headers of the 200 and
 * the 304 are built once here, so serving does no per-request serialization. A project snapshot groups the two
 * variants upstream serves (with and without `send_cohorts`).
 *
 * The parsed body is not kept: at 1,000 flags its tree is ~1 MiB of heap that serving never reads once the
 * evaluator has compiled it. It is handed to the compiler once (takeParsedDefinitions, store/compiled.ts) and
 * dropped; the variant keeps what the rest of the sidecar reads (flag ids, keys, versions; counts).
 */
import { createHash } from 'node:crypto';
import type { Definitions } from '../upstream/payload.js';

/** What is kept of one flag definition: what write-sync, the flag-ids route and /status read. */
export interface FlagSummary {
  readonly id: number | null;
  readonly key: string;
  readonly active: boolean;
  readonly deleted: boolean;
  /** `version` when it is a number, else null. */
  readonly version: number | null;
}

/** What a variant keeps of its definitions (not the parsed body). */
export interface DefinitionsSummary {
  readonly flags: readonly FlagSummary[];
  readonly cohortCount: number;
}

/** The summary of validated definitions. */
export function summarizeDefinitions(definitions: Definitions): DefinitionsSummary {
  return {
    flags: definitions.flags.map((f) => {
      const version = f.raw.version;
      return { id: f.id, key: f.key, active: f.active, deleted: f.deleted, version: typeof version === 'number' ? version : null };
    }),
    cohortCount: Object.keys(definitions.cohorts).length,
  };
}

/**
 * Parsed bodies not yet compiled, by body: set when a variant is made from freshly validated definitions, taken
 * (and so dropped) by the compiler. Weak: a body no longer served takes its entry with it.
 */
const parsedByBody = new WeakMap<Buffer, unknown>();

/** The parsed value of `body` if it was not taken yet (then it is dropped here); undefined otherwise. */
export function takeParsedDefinitions(body: Buffer): unknown {
  const parsed = parsedByBody.get(body);
  parsedByBody.delete(body);
  return parsed;
}

/** Where a snapshot's data came from. */
export type SnapshotSource = 'upstream' | 'disk' | 'bootstrap';

/** `cohorts`: the `?send_cohorts` body; `plain`: the body without cohorts. */
export type VariantName = 'cohorts' | 'plain';

/** One local_evaluation body and everything needed to serve it. */
export interface VariantSnapshot {
  readonly body: Buffer;
  /** ETag header value served: `servedEtag` when set, else upstream's verbatim, else computed from the body. */
  readonly etag: string;
  /**
   * The ETag served instead of upstream's after the project left a quota-limited (402) period, so that every
   * SDK's next conditional request gets the full body once (see quotaRecoveryEtag); null otherwise.
   */
  readonly servedEtag: string | null;
  /** The ETag without `W/` and quotes, for If-None-Match comparison. */
  readonly etagValue: string;
  /** Upstream's own ETag, sent back as If-None-Match when polling; null when upstream sent none. */
  readonly upstreamEtag: string | null;
  readonly definitions: DefinitionsSummary;
  /** Epoch ms when the data was fetched from upstream (or written, for a hand-made file). */
  readonly fetchedAt: number;
  readonly source: SnapshotSource;
  /** Headers of a 200 (without Age, which depends on the request time). */
  readonly headers200: Readonly<Record<string, string>>;
  /** Headers of a 304. */
  readonly headers304: Readonly<Record<string, string>>;
}

/** Everything the sidecar holds for one project; replaced whole on every change. */
export interface ProjectSnapshot {
  readonly projectId: number;
  readonly token: string | null;
  readonly cohorts: VariantSnapshot | null;
  readonly plain: VariantSnapshot | null;
  /** Someone asked for the plain variant: the poller keeps it fresh too. */
  readonly plainWanted: boolean;
  /** Upstream's 402 body while the project is quota limited; local_evaluation answers it. */
  readonly quotaBody: Buffer | null;
}

/** `W/"abc"`, `"abc"` or `abc` → `abc`, as upstream's extract_etag_from_header does. */
export function normalizeEtag(value: string): string {
  let v = value.trim();
  if (v.startsWith('W/')) v = v.slice(2);
  if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1);
  return v;
}

/** The ETag the sidecar makes when upstream sent none: `W/"<16 hex of sha256(body)>"`. */
export function computeEtag(body: Uint8Array): string {
  return `W/"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`;
}

/** True when an If-None-Match header (single value, list, or `*`) matches the normalized ETag. */
export function etagMatches(ifNoneMatch: string, etagValue: string): boolean {
  if (ifNoneMatch.trim() === '*') return true;
  if (!ifNoneMatch.includes(',')) return normalizeEtag(ifNoneMatch) === etagValue;
  return ifNoneMatch.split(',').some((candidate) => normalizeEtag(candidate) === etagValue);
}

/** Fields needed to build a variant snapshot. */
export interface VariantInput {
  readonly body: Buffer;
  /** Freshly validated definitions of `body`, or the summary of another variant of the same body. */
  readonly definitions: Definitions | DefinitionsSummary;
  readonly upstreamEtag: string | null;
  readonly fetchedAt: number;
  readonly source: SnapshotSource;
  /** Served instead of upstream's ETag (after a 402 period); absent or null: upstream's. */
  readonly servedEtag?: string | null;
}

/** Build a variant snapshot; the served ETag is `servedEtag`, else upstream's, else computed from the body. */
export function createVariant(input: VariantInput): VariantSnapshot {
  const servedEtag = input.servedEtag ?? null;
  const etag = servedEtag ?? input.upstreamEtag ?? computeEtag(input.body);
  const common = {
    etag,
    'cache-control': 'private, must-revalidate',
    'x-flag-sidecar-source': input.source,
  };
  const given = input.definitions;
  let definitions: DefinitionsSummary;
  if ('parsed' in given) {
    definitions = summarizeDefinitions(given);
    parsedByBody.set(input.body, given.parsed);
  } else definitions = given;
  return Object.freeze({
    body: input.body,
    definitions,
    upstreamEtag: input.upstreamEtag,
    fetchedAt: input.fetchedAt,
    source: input.source,
    servedEtag,
    etag,
    etagValue: normalizeEtag(etag),
    headers200: Object.freeze({
      'content-type': 'application/json',
      'content-length': String(input.body.length),
      ...common,
    }),
    headers304: Object.freeze(common),
  });
}

/**
 * A new ETag for the same data, served once a project leaves a quota-limited period: posthog-node drops its flags
 * on a 402 but keeps its ETag, so a 304 to its next conditional request would leave it without flags until the
 * definitions change. `W/"<16 hex of sha256(upstream ETag or body hash, time)>"`: different from every ETag
 * served before (upstream's included), fixed for the variant from then on.
 */
export function quotaRecoveryEtag(variant: Pick<VariantSnapshot, 'upstreamEtag' | 'body'>, at: number): string {
  const base = variant.upstreamEtag ?? computeEtag(variant.body);
  return `W/"${createHash('sha256').update(`${base}\n${at}`).digest('hex').slice(0, 16)}"`;
}

/** A project with no data yet. */
export function emptyProject(projectId: number, token: string | null): ProjectSnapshot {
  return Object.freeze({ projectId, token, cohorts: null, plain: null, plainWanted: false, quotaBody: null });
}

/** A copy of `project` with some fields replaced. */
export function withChanges(project: ProjectSnapshot, changes: Partial<Omit<ProjectSnapshot, 'projectId'>>): ProjectSnapshot {
  return Object.freeze({ ...project, ...changes });
}
