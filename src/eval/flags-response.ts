/**
 * Evaluating a /flags request against compiled definitions, and the response bodies upstream's flags service
 * gives (`FlagDetails` in PostHog's `rust/feature-flags/src/api/types.rs`): v2 (`flags` map of
 * `{key, enabled, variant, reason, metadata}`) and the legacy shape (`featureFlags`, `featureFlagPayloads`) for `v` <
 * 2. Each flag's entry is looked up in its per-snapshot table (flag-fragments.ts), so answering does no per-flag
 * serialization; what changes per request (`requestId`, `evaluatedAt`) is appended as text.
 */
import { randomFillSync } from 'node:crypto';
import { lend, markLent, minLent } from './body-pool.js';
import type { CompiledDefinitions, CompiledFlag } from './compile.js';
import type { StaticCohort } from './cohorts.js';
import { clockHorizon, watchClock } from './dates.js';
import { createEvaluation, groupProperties, personProperties, type ReasonCode } from './evaluate.js';
import { legacyPayloadEntry, legacyValueEntry, reasonsEntry, v2Entry } from './flag-fragments.js';
import type { RemotePart } from './remote-part.js';

/** What a caller asks: one person (and groups) and, optionally, only some flags. */
export interface FlagsQuery {
  readonly distinctId: string;
  readonly personProperties: Readonly<Record<string, unknown>>;
  readonly groups: Readonly<Record<string, unknown>>;
  readonly groupProperties: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** `flag_keys_to_evaluate`; null: every flag. */
  readonly flagKeys: readonly string[] | null;
  /**
   * The caller's runtime, as upstream's flags service takes it (explicit, or guessed from its User-Agent): flags
   * for another runtime are left out; null (unknown) leaves out every flag limited to one runtime; 'all' keeps all.
   */
  readonly runtime: 'server' | 'client' | 'all' | null;
  /** `evaluation_contexts`: when given, flags limited to other contexts are left out. */
  readonly contexts: readonly string[] | null;
  /** Decide hash-independent experience-continuity flags as upstream does (EvalContext's `decideContinuity`). */
  readonly decideContinuity?: boolean;
  /** Static cohorts whose members are known (EvalContext's `staticCohorts`). */
  readonly staticCohorts?: ReadonlyMap<string, StaticCohort>;
  /**
   * List inactive flags (`flag_disabled`), as evaluation_reasons does (Django's view appends them as "disabled").
   * Absent: left out, as upstream's flags service evaluates only active flags, so its /flags and /decide answers
   * never name one (flag_matching.rs evaluate_flags_in_level: `!flag.deleted && flag.active`).
   */
  readonly listInactive?: boolean;
}

/** Whether upstream's flags service would evaluate `flag` for this query at all (its runtime and context filters). */
export function servesFlag(flag: CompiledFlag, query: Pick<FlagsQuery, 'runtime' | 'contexts'>): boolean {
  if (query.runtime !== 'all' && flag.runtime !== 'all' && flag.runtime !== query.runtime) return false;
  if (query.contexts === null || query.contexts.length === 0 || flag.contexts.length === 0) return true;
  return flag.contexts.some((tag) => (query.contexts as readonly string[]).includes(tag));
}

/** One flag decided locally. */
export interface Decided {
  readonly flag: CompiledFlag;
  readonly value: boolean | string;
  readonly reason: ReasonCode;
  readonly conditionIndex: number | null;
}

/** The local part of an answer: what was decided, and the keys only upstream can answer. */
export interface LocalAnswer {
  readonly decided: readonly Decided[];
  readonly undecided: readonly string[];
  /** Some decided flag was decided only after an unresolved condition (the SDK's answer, maybe not the server's). */
  readonly partial: boolean;
  /**
   * The last instant (ms since the epoch) at which the same query is sure to get the same flags from the same
   * definitions: Infinity unless some filter relative to now was checked (dates.ts clockHorizon).
   */
  readonly validUntil: number;
}

/**
 * Evaluate the flags a query asks for. A requested key the definitions do not hold is undecided; an inactive flag
 * is neither decided nor undecided (absent from the answer, as upstream's) unless the query lists inactive flags.
 */
export function evaluateQuery(defs: CompiledDefinitions, query: FlagsQuery, nowMs: number): LocalAnswer {
  // No flag limited to a runtime or contexts: every flag serves every query (servesFlag's answer), so none is checked.
  const filtered = defs.limited && (query.runtime !== 'all' || (query.contexts !== null && query.contexts.length > 0));
  watchClock();
  const evaluation = createEvaluation(
    defs,
    {
      distinctId: query.distinctId,
      groups: query.groups,
      personProperties: personProperties(query.distinctId, query.personProperties),
      groupProperties: groupProperties(query.groups, query.groupProperties),
      nowMs,
      decideContinuity: query.decideContinuity === true,
      staticCohorts: query.staticCohorts,
    },
    filtered ? (flag) => servesFlag(flag, query) : undefined,
  );
  const decided: Decided[] = [];
  const undecided: string[] = [];
  let partial = false;
  const listInactive = query.listInactive === true;
  // Indexed stores, not push: TurboFan left each push here a call to the builtin (~125 instructions a flag).
  const evaluate = (flag: CompiledFlag): void => {
    if (!flag.active && !listInactive) return;
    const outcome = evaluation.evaluate(flag);
    if (outcome.kind === 'value') {
      decided[decided.length] = { flag, value: outcome.value, reason: outcome.reason, conditionIndex: outcome.conditionIndex };
      partial ||= outcome.partial;
    } else undecided[undecided.length] = flag.key;
  };
  if (query.flagKeys === null) {
    // As the SDK: every definition, a later duplicate key standing for the earlier.
    const flags = defs.distinct;
    for (let i = 0; i < flags.length; i++) {
      const flag = flags[i] as CompiledFlag;
      if (!filtered || servesFlag(flag, query)) evaluate(flag);
    }
  } else {
    for (const key of new Set(query.flagKeys)) {
      const flag = defs.byKey.get(key);
      if (flag === undefined) undecided.push(key);
      else if (!filtered || servesFlag(flag, query)) evaluate(flag);
    }
  }
  return { decided, undecided, partial, validUntil: clockHorizon() };
}

/**
 * Entries of a body being assembled (each `,` and its text, as flag-fragments.ts keeps them), looked up once and
 * copied after the body's size is known. Bodies are assembled synchronously, one at a time, so one list serves all
 * (emptied after each body: an answer's entries are not kept past it).
 */
const pending: Buffer[] = [];
const noEntry = Buffer.alloc(0);
const comma = 0x2c;

/**
 * `Uint8Array.prototype.set`, called directly: `out.set` is a property load through Buffer's prototype, which V8
 * does not inline here (a LoadIC per entry, ~70 instructions a flag measured at 1,000 flags).
 */
const copyInto = Uint8Array.prototype.set;

/** The bytes `pending[from…to)` and upstream's fragments add to a list, comma-separated (see copyList). */
function listSize(from: number, to: number, remote: readonly string[]): number {
  let bytes = 0;
  for (let i = from; i < to; i++) bytes += (pending[i] as Buffer).length;
  if (to > from) bytes -= 1; // the first entry's comma is not written
  for (const text of remote) bytes += Buffer.byteLength(text) + (bytes === 0 ? 0 : 1);
  return bytes;
}

/** Copy `pending[from…to)` and upstream's fragments, comma-separated, into `out` at `at`; returns the end. */
function copyList(out: Buffer, at: number, from: number, to: number, remote: readonly string[]): number {
  const start = at;
  for (let i = from; i < to; i++) {
    const entry = pending[i] as Buffer;
    if (i === from) {
      copyInto.call(out, entry.subarray(1), at);
      at += entry.length - 1;
    } else {
      copyInto.call(out, entry, at);
      at += entry.length;
    }
  }
  for (const text of remote) {
    if (at > start) out[at++] = comma;
    at += out.write(text, at);
  }
  return at;
}

/** What identifies one answer, as upstream's flags service stamps every body (v2 and legacy alike). */
export interface AnswerStamp {
  /**
   * The request id; `null`: a fresh random UUID v4 (as node's randomUUID), written as hex straight into the body
   * (node's UUID string is a rope of 36 characters the body then flattened and copied: ~5k instructions a request
   * over HTTP with randomUUID's own work; see freshRequestId).
   */
  readonly requestId: string | null;
  /** When the flags were evaluated, in milliseconds since the epoch (upstream's `evaluatedAt`). */
  readonly evaluatedAt: number;
  /**
   * The project opted into slim `$feature_flag_called` events: v2 bodies say `"minimalFlagCalledEvents":true`
   * (else nothing, as upstream); legacy bodies never carry it, as upstream's.
   */
  readonly minimalFlagCalledEvents?: boolean;
}

/**
 * The `evaluatedAt` of an answer: upstream's own when every flag in it is upstream's (so the SDK's event carries
 * upstream's clock, as without the sidecar), else `nowMs`, the time the sidecar evaluated. Never fails.
 */
export function answerEvaluatedAt(local: readonly Decided[], remote: RemotePart, nowMs: number): number {
  return local.length === 0 && remote.details.length > 0 && remote.evaluatedAt !== null ? remote.evaluatedAt : Math.floor(nowMs);
}

/**
 * What follows the flag maps up to the request id (the map's closing brace first): errors, quota. With no quota the
 * same flat string every request.
 */
const tailHead = (errors: boolean, quotaLimited: readonly string[] | null): string =>
  quotaLimited ? `},"errorsWhileComputingFlags":${errors},"quotaLimited":${JSON.stringify(quotaLimited)},"requestId":` : errors ? headWithErrors : headWithoutErrors;
const headWithErrors = '},"errorsWhileComputingFlags":true,"requestId":';
const headWithoutErrors = '},"errorsWhileComputingFlags":false,"requestId":';

/** What follows the request id: `evaluatedAt` and the slim-events opt-in. */
const tailEnd = (stamp: AnswerStamp, minimal: boolean): string => `,"evaluatedAt":${stamp.evaluatedAt}${minimal ? ',"minimalFlagCalledEvents":true}' : '}'}`;

/**
 * The close of a body after its flag maps, as assemble takes it: `[close, null]` with a given request id in `close`,
 * else `[text before the id, text after it]` with a fresh id between.
 */
function closeOf(errors: boolean, quotaLimited: readonly string[] | null, stamp: AnswerStamp, minimal: boolean): readonly [string, string | null] {
  const head = tailHead(errors, quotaLimited);
  const end = tailEnd(stamp, minimal);
  if (stamp.requestId === null) {
    freshRequestId();
    return [head, end];
  }
  return [`${head}${JSON.stringify(stamp.requestId)}${end}`, null];
}

/**
 * A fresh request id written into `idText`: `"` + a UUID v4 in node's randomUUID format (lower-case hex, 8-4-4-4-12,
 * version nibble 4, variant 10xx) + `"`, from 16 bytes of node's CSPRNG. As node's randomUUID, the random bytes come
 * from a pool filled 128 ids at a time by randomFillSync; each byte is used once. Written apart from assemble (which
 * copies idText), so that assemble stays small enough for V8 to inline it into v2Body.
 */
function freshRequestId(): void {
  if (idPoolAt === idPool.length) {
    randomFillSync(idPool);
    idPoolAt = 0;
  }
  const p = idPoolAt;
  idPoolAt += 16;
  let at = 1;
  for (let i = 0; i < 16; i++) {
    let b = idPool[p + i] as number;
    if (i === 6) b = (b & 0x0f) | 0x40;
    else if (i === 8) b = (b & 0x3f) | 0x80;
    if (i === 4 || i === 6 || i === 8 || i === 10) at++; // the dash, written once below
    idText[at++] = hexDigit[b >> 4] as number;
    idText[at++] = hexDigit[b & 15] as number;
  }
}
const idPool = Buffer.allocUnsafeSlow(16 * 128);
let idPoolAt = idPool.length;
const hexDigit = Buffer.from('0123456789abcdef');
/** The last fresh id with its quotes (the quotes and dashes never change). */
const idText = Buffer.from('"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"');

const v2Open = Buffer.from('{"flags":{');
const legacyOpen = Buffer.from('{"featureFlags":{');
const legacyMiddle = Buffer.from('},"featureFlagPayloads":{');
const reasonsOpen = Buffer.from('{');
const reasonsClose = '}';

/**
 * `open`, the list of `pending[0…split)` and `first`, then (when `middle` is given) `middle` and the list of
 * `pending[split…count)` and `second`, then `close`: each entry's bytes copied once, into the answer's own buffer,
 * with no list of parts and no Buffer.concat (docs/benchmarks.md as of c3f48ec, issue 19: v2Body at 1,000 flags in process,
 * 883k instructions before, 597k with this and the two changes noted at copyInto and reasonSlot).
 */
function assemble(open: Buffer, split: number, first: readonly string[], middle: Buffer | null, count: number, second: readonly string[], close: string, after: string | null): Buffer {
  // The close (the stamp: a rope of ~120 characters) is written as it is, into room for its longest UTF-8 (3 bytes
  // a UTF-16 unit); asking its exact size first (Buffer.byteLength of a rope) cost ~1.7k instructions over HTTP.
  let size = open.length + listSize(0, split, first) + close.length * 3;
  if (after !== null) size += idText.length + after.length; // after: ASCII (digits and constants)
  if (middle !== null) size += middle.length + listSize(split, count, second);
  const slab = size <= maxSlabBody ? reserve(size) : null;
  const out = slab ?? lend(size);
  const start = slab !== null ? slabUsed : 0;
  copyInto.call(out, open, start);
  let at = copyList(out, start + open.length, 0, split, first);
  if (middle !== null) {
    copyInto.call(out, middle, at);
    at = copyList(out, at + middle.length, split, count, second);
  }
  at += out.write(close, at);
  if (after !== null) {
    copyInto.call(out, idText, at);
    at += out.write(after, at + idText.length, 'latin1') + idText.length;
  }
  // A loop: Array.prototype.fill on this list ran in C++ (~140 instructions an element in a profile over HTTP).
  for (let i = 0; i < count; i++) pending[i] = noEntry;
  if (slab === null) {
    const body = out.subarray(0, at);
    markLent(body, out);
    return body;
  }
  slabUsed = (at + 7) & ~7;
  return Buffer.from(slab.buffer, slab.byteOffset + start, at - start);
}

/**
 * Bodies are cut from a slab, as node cuts small buffers from its pool (a body of 30 flags, ~8.5 KB, is above the
 * 4 KB node pools: Buffer.allocUnsafe made an ArrayBuffer for each, ~2k instructions over HTTP). A slab is only
 * ever written ahead of what was cut (a body given out is never written again, even while a socket still holds
 * it), and is freed with the last body cut from it. Larger bodies are lent memory that is reused once the socket
 * has taken them (body-pool.ts).
 */
const slabBytes = 256 * 1024;
const maxSlabBody = minLent;
let slabView: Buffer | null = null;
let slabUsed = 0;

/** The slab's view with `size` bytes free from `slabUsed` on (a new slab when the current one lacks them). */
function reserve(size: number): Buffer {
  if (slabView === null || slabUsed + size > slabBytes) {
    slabView = Buffer.allocUnsafeSlow(slabBytes); // not zero-filled: every byte given out is written first
    slabUsed = 0;
  }
  return slabView;
}

/**
 * An answer's stamp from its request id on, with a fresh id: `"<uuid>","evaluatedAt":…` and the close (`}`, or the
 * slim-events opt-in and `}`). What a reused answer (http/answer-cache.ts) writes after its kept head; the bytes are
 * those v2Body and legacyBody end with (legacy bodies: `minimal` false).
 */
export function freshStamp(evaluatedAt: number, minimal: boolean): Buffer {
  freshRequestId();
  const end = tailEnd({ requestId: null, evaluatedAt }, minimal);
  const size = idText.length + end.length;
  const slab = reserve(size);
  const start = slabUsed;
  copyInto.call(slab, idText, start);
  slab.write(end, start + idText.length, 'latin1');
  slabUsed = (start + size + 7) & ~7;
  return Buffer.from(slab.buffer, slab.byteOffset + start, size);
}

/** How many bytes freshStamp's stamp takes: a body's head is all but its last this many bytes. */
export const stampLength = (evaluatedAt: number, minimal: boolean): number => idText.length + tailEnd({ requestId: null, evaluatedAt }, minimal).length;

/** The v2 body: `{"flags":{…},"errorsWhileComputingFlags":…,"requestId":…,"evaluatedAt":…[,"minimalFlagCalledEvents":true]}`. */
export function v2Body(local: readonly Decided[], remote: RemotePart, stamp: AnswerStamp): Buffer {
  const count = local.length;
  for (let i = 0; i < count; i++) {
    const d = local[i] as Decided;
    pending[i] = v2Entry(d.flag.fragments, d);
  }
  const [close, after] = closeOf(remote.errors, remote.quotaLimited, stamp, stamp.minimalFlagCalledEvents === true);
  return assemble(v2Open, count, remote.details, null, count, [], close, after);
}

/** The legacy body: `{"featureFlags":{…},"featureFlagPayloads":{…},"errorsWhileComputingFlags":…,"requestId":…,"evaluatedAt":…}`. */
export function legacyBody(local: readonly Decided[], remote: RemotePart, stamp: AnswerStamp): Buffer {
  let count = 0;
  for (const d of local) pending[count++] = legacyValueEntry(d.flag.fragments, d);
  const split = count;
  for (const d of local) {
    const entry = legacyPayloadEntry(d.flag.fragments, d);
    if (entry !== null) pending[count++] = entry;
  }
  const [close, after] = closeOf(remote.errors, remote.quotaLimited, stamp, false);
  return assemble(legacyOpen, split, remote.values, legacyMiddle, count, remote.payloads, close, after);
}

/**
 * The shape of an answer, as upstream's flags service picks it (handler/flags.rs `get_versioned_response`, after
 * `flags` defaults a request naming neither `v` nor `config` to v2 with config): on `/decide` (legacy decide) `v`
 * 1 or none → `decideV1`, 2 → `decideV2`, 3 → `legacy`, 4 and up → `v2`, any other number → `decideV1`; elsewhere
 * 2 and up → `v2`, else `legacy`. A `v` that is not a whole number (Rust's `i32` parse) counts as 1, an empty one
 * as none; `config` counts whatever its value (`?config` alone included).
 */
export type AnswerShape = 'v2' | 'legacy' | 'decideV1' | 'decideV2';

export function answerShape(decide: boolean, v: string | undefined, config: string | undefined): AnswerShape {
  const given = v === undefined || v === '' ? null : /^[+-]?\d+$/.test(v) && Math.abs(Number(v)) <= 2 ** 31 - 1 ? Number(v) : 1;
  // /decide asks for config; a request naming neither gets the newest shape (and config).
  const version = given === null && !decide && config === undefined ? 2 : given;
  if (!decide) return version !== null && version >= 2 ? 'v2' : 'legacy';
  if (version === 2) return 'decideV2';
  if (version === 3) return 'legacy';
  return version !== null && version >= 4 ? 'v2' : 'decideV1';
}

/**
 * Legacy /decide's bodies, enabled flags only and no `errorsWhileComputingFlags` (types.rs `DecideV1Response`,
 * `DecideV2Response`): v1 `{"featureFlags":["key",…],…}`, v2 `{"featureFlags":{"key":value,…},…}`. Rarely asked
 * for (SDKs of before 2023), so assembled as text rather than from the prebuilt entries.
 */
export function decideBody(version: 1 | 2, local: readonly Decided[], remote: RemotePart, stamp: AnswerStamp): Buffer {
  const entries: string[] = [];
  for (const d of local) if (d.value !== false) entries.push(version === 1 ? d.flag.fragments.name : `${d.flag.fragments.name}:${JSON.stringify(d.value)}`);
  for (const { name, value } of remote.enabled) entries.push(version === 1 ? name : `${name}:${value}`);
  const quota = remote.quotaLimited ? `,"quotaLimited":${JSON.stringify(remote.quotaLimited)}` : '';
  if (stamp.requestId === null) freshRequestId();
  const id = stamp.requestId === null ? idText.toString('latin1') : JSON.stringify(stamp.requestId);
  const list = version === 1 ? `[${entries.join(',')}]` : `{${entries.join(',')}}`;
  return Buffer.from(`{"featureFlags":${list}${quota},"requestId":${id}${tailEnd(stamp, false)}`);
}

/** evaluation_reasons' body (op 15): `{key: {value, evaluation: {reason, condition_index}}}`; inactive → "disabled". */
export function reasonsBody(local: readonly Decided[]): Buffer {
  let count = 0;
  for (const d of local) pending[count++] = reasonsEntry(d.flag.fragments, d);
  return assemble(reasonsOpen, count, [], null, count, [], reasonsClose, null);
}
