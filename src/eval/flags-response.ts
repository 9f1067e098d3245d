/**
 * Evaluating a /flags request against compiled definitions, and the response bodies upstream's flags service
 * gives (reference/evaluation.md §4): v2 (`flags` map of `{key, enabled, variant, reason, metadata}`) and the
 * legacy shape (`featureFlags`, `featureFlagPayloads`) for `v` < 2. Each flag's entry is looked up in its
 * per-snapshot table (flag-fragments.ts), so answering does no per-flag serialization; what changes per request
 * (`requestId`, `evaluatedAt`) is appended as text.
 */
import type { CompiledDefinitions, CompiledFlag } from './compile.js';
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
  readonly staticCohorts?: ReadonlyMap<string, ReadonlySet<string>>;
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
}

/** Evaluate the flags a query asks for. A requested key the definitions do not hold is undecided. */
export function evaluateQuery(defs: CompiledDefinitions, query: FlagsQuery, nowMs: number): LocalAnswer {
  // No flag limited to a runtime or contexts: every flag serves every query (servesFlag's answer), so none is checked.
  const filtered = defs.limited && (query.runtime !== 'all' || (query.contexts !== null && query.contexts.length > 0));
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
  const evaluate = (flag: CompiledFlag): void => {
    const outcome = evaluation.evaluate(flag);
    if (outcome.kind === 'value') {
      decided.push({ flag, value: outcome.value, reason: outcome.reason, conditionIndex: outcome.conditionIndex });
      partial ||= outcome.partial;
    } else undecided.push(flag.key);
  };
  if (query.flagKeys === null) {
    // As the SDK: every definition, a later duplicate key standing for the earlier.
    for (const flag of defs.byKey.values()) if (!filtered || servesFlag(flag, query)) evaluate(flag);
  } else {
    for (const key of new Set(query.flagKeys)) {
      const flag = defs.byKey.get(key);
      if (flag === undefined) undecided.push(key);
      else if (!filtered || servesFlag(flag, query)) evaluate(flag);
    }
  }
  return { decided, undecided, partial };
}

/**
 * Entries (each `,` and its text, as flag-fragments.ts keeps them) and upstream's fragments, comma-separated, into
 * `out`; returns the bytes added.
 */
function listInto(out: Buffer[], entries: readonly Buffer[], remote: readonly string[]): number {
  let bytes = 0;
  for (const entry of entries) {
    const part = bytes === 0 ? entry.subarray(1) : entry;
    out.push(part);
    bytes += part.length;
  }
  for (const text of remote) {
    const part = Buffer.from(bytes === 0 ? text : `,${text}`);
    out.push(part);
    bytes += part.length;
  }
  return bytes;
}

/** What identifies one answer, as upstream's flags service stamps every body (v2 and legacy alike). */
export interface AnswerStamp {
  readonly requestId: string;
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

/** What follows the flag maps: errors, quota, the stamp. */
const tail = (errors: boolean, quotaLimited: readonly string[] | null, stamp: AnswerStamp, minimal: boolean): string =>
  `,"errorsWhileComputingFlags":${errors}${quotaLimited ? `,"quotaLimited":${JSON.stringify(quotaLimited)}` : ''},"requestId":${JSON.stringify(stamp.requestId)},"evaluatedAt":${stamp.evaluatedAt}${minimal ? ',"minimalFlagCalledEvents":true' : ''}}`;

const v2Open = Buffer.from('{"flags":{');
const legacyOpen = Buffer.from('{"featureFlags":{');
const legacyMiddle = Buffer.from('},"featureFlagPayloads":{');
const reasonsOpen = Buffer.from('{');
const reasonsClose = Buffer.from('}');

/** The v2 body: `{"flags":{…},"errorsWhileComputingFlags":…,"requestId":…,"evaluatedAt":…[,"minimalFlagCalledEvents":true]}`. */
export function v2Body(local: readonly Decided[], remote: RemotePart, stamp: AnswerStamp): Buffer {
  const out: Buffer[] = [v2Open];
  let bytes = v2Open.length + listInto(out, local.map((d) => v2Entry(d.flag.fragments, d)), remote.details);
  const close = Buffer.from(`}${tail(remote.errors, remote.quotaLimited, stamp, stamp.minimalFlagCalledEvents === true)}`);
  out.push(close);
  bytes += close.length;
  return Buffer.concat(out, bytes);
}

/** The legacy body: `{"featureFlags":{…},"featureFlagPayloads":{…},"errorsWhileComputingFlags":…,"requestId":…,"evaluatedAt":…}`. */
export function legacyBody(local: readonly Decided[], remote: RemotePart, stamp: AnswerStamp): Buffer {
  const out: Buffer[] = [legacyOpen];
  let bytes = legacyOpen.length + listInto(out, local.map((d) => legacyValueEntry(d.flag.fragments, d)), remote.values);
  out.push(legacyMiddle);
  bytes += legacyMiddle.length;
  const payloads: Buffer[] = [];
  for (const d of local) {
    const entry = legacyPayloadEntry(d.flag.fragments, d);
    if (entry !== null) payloads.push(entry);
  }
  bytes += listInto(out, payloads, remote.payloads);
  const close = Buffer.from(`}${tail(remote.errors, remote.quotaLimited, stamp, false)}`);
  out.push(close);
  bytes += close.length;
  return Buffer.concat(out, bytes);
}

/** evaluation_reasons' body (op 15): `{key: {value, evaluation: {reason, condition_index}}}`; inactive → "disabled". */
export function reasonsBody(local: readonly Decided[]): Buffer {
  const out: Buffer[] = [reasonsOpen];
  const bytes = reasonsOpen.length + listInto(out, local.map((d) => reasonsEntry(d.flag.fragments, d)), []) + reasonsClose.length;
  out.push(reasonsClose);
  return Buffer.concat(out, bytes);
}
