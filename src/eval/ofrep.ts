/**
 * The OpenFeature Remote Evaluation Protocol (OFREP) view of evaluation results (docs/evaluation.md#openfeature-ofrep):
 * an OFREP request's context read into the evaluator's inputs, as PostHog's own OpenFeature providers split it, and
 * each flag's result (decided here or by upstream's /flags) written as an OFREP evaluation. Pure; no IO.
 *
 * Values: a variant key (a number when it parses as one, as PostHog's providers read number flags), else the flag's
 * enabled state; the payload travels in the metadata as its JSON text (OFREP metadata holds only scalars). Reasons:
 * DISABLED for an inactive flag (one upstream names; the sidecar's own answers leave inactive flags out, so OFREP
 * finds them FLAG_NOT_FOUND), SPLIT where a percentage decided (a rollout below 100%, the variant split, the
 * holdout), TARGETING_MATCH for another matching condition and for early-access enrolment either way, DEFAULT when
 * no condition matched.
 */
import type { CompiledFlag } from './compile.js';
import { reasonCodeText, type ReasonCode } from './evaluate.js';
import type { Decided } from './flags-response.js';
import { payloadFor } from './payload.js';

/** OFREP's error codes (its evaluationFailure and flagNotFound schemas). */
export type OfrepErrorCode = 'PARSE_ERROR' | 'TARGETING_KEY_MISSING' | 'INVALID_CONTEXT' | 'FLAG_NOT_FOUND' | 'GENERAL';

/** OpenFeature's reasons as the sidecar gives them. */
export type OfrepReason = 'TARGETING_MATCH' | 'SPLIT' | 'DEFAULT' | 'DISABLED';

/** A request OFREP refuses: its status and `{errorCode, errorDetails}` (with the flag's `key` on single evaluations). */
export class OfrepError extends Error {
  constructor(
    readonly status: number,
    readonly errorCode: OfrepErrorCode,
    readonly details: string,
  ) {
    super(details);
    this.name = 'OfrepError';
  }
}

/** The evaluator's inputs from an OFREP context. */
export interface OfrepContext {
  readonly targetingKey: string;
  readonly personProperties: Readonly<Record<string, unknown>>;
  readonly groups: Readonly<Record<string, unknown>>;
  readonly groupProperties: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Reserved attributes, as PostHog's providers name them: `groups`, and `group_properties` (posthog-python) or
 * `groupProperties` (posthog-js). Every other attribute but `targetingKey` is a person property.
 */
const reserved = new Set(['targetingKey', 'groups', 'group_properties', 'groupProperties']);

/**
 * Split an OFREP request body (`{"context": {...}}`, already parsed) as PostHog's providers split a context.
 * Throws OfrepError: a body or context that is not an object, or reserved attributes of the wrong shape, are
 * INVALID_CONTEXT; a missing or empty `targetingKey` is TARGETING_KEY_MISSING (PostHog's providers raise the same
 * without a default distinct id).
 */
export function ofrepContext(body: unknown): OfrepContext {
  if (!isObject(body)) throw new OfrepError(400, 'INVALID_CONTEXT', 'The request body must be a JSON object: {"context": {...}}.');
  const context = body.context ?? {};
  if (!isObject(context)) throw new OfrepError(400, 'INVALID_CONTEXT', '`context` must be a JSON object.');
  const targetingKey = context.targetingKey;
  if (targetingKey === undefined || targetingKey === null || targetingKey === '') {
    throw new OfrepError(400, 'TARGETING_KEY_MISSING', 'The context needs a `targetingKey`: the distinct id flags are evaluated for.');
  }
  if (typeof targetingKey !== 'string') throw new OfrepError(400, 'INVALID_CONTEXT', '`targetingKey` must be a string.');
  const groups = context.groups ?? {};
  if (!isObject(groups)) throw new OfrepError(400, 'INVALID_CONTEXT', '`groups` must be an object of group type → group key.');
  const given = context.group_properties ?? context.groupProperties ?? {};
  if (!isObject(given) || !Object.values(given).every(isObject)) {
    throw new OfrepError(400, 'INVALID_CONTEXT', '`group_properties` must be an object of group type → properties object.');
  }
  // Defined, not assigned: an attribute named `__proto__` stays a property (as in /flags' parsed body), not a prototype.
  // A loop over the keys, not Object.fromEntries(Object.entries(…).filter(…)): a pair array per attribute and two
  // arrays more cost ~3 µs of a single-flag evaluation's ~50 (a CPU profile under wrk).
  const personProperties: Record<string, unknown> = {};
  for (const name of Object.keys(context)) {
    if (reserved.has(name)) continue;
    if (name === '__proto__') Object.defineProperty(personProperties, name, { value: context[name], enumerable: true, writable: true, configurable: true });
    else personProperties[name] = context[name];
  }
  return { targetingKey, personProperties, groups, groupProperties: given as Record<string, Record<string, unknown>> };
}

/** A variant key as an OFREP value: a number when the whole key is one (`"2"`, `"0.5"`), else the key. */
export function variantValue(variant: string): string | number {
  if (variant.trim() === '') return variant;
  const number = Number(variant);
  return Number.isFinite(number) ? number : variant;
}

/**
 * The OpenFeature reason of a flag's result. `flag`: its definition when the sidecar holds it (to tell a
 * percentage from a targeting match); without it a match is TARGETING_MATCH.
 */
export function ofrepReason(flag: CompiledFlag | undefined, reason: ReasonCode | string, conditionIndex: number | null, variant: string | null): OfrepReason {
  switch (reason) {
    case 'flag_disabled':
      return 'DISABLED';
    case 'super_condition_value':
      return 'TARGETING_MATCH'; // the person's own enrolment property decided it, on or off
    case 'out_of_rollout_bound':
    case 'holdout_condition_value':
      return 'SPLIT';
    case 'condition_match': {
      const condition = flag && conditionIndex !== null ? flag.conditions[conditionIndex] : undefined;
      if (condition === undefined) return 'TARGETING_MATCH';
      const partRollout = condition.rollout != null && condition.rollout < 100;
      const splitVariant = variant !== null && condition.variant === null && flag !== undefined && flag.variants.length > 1;
      return partRollout || splitVariant ? 'SPLIT' : 'TARGETING_MATCH';
    }
    default:
      return 'DEFAULT';
  }
}

/** One flag's result, from either side, in the terms OFREP needs. */
export interface OfrepResult {
  readonly key: string;
  readonly enabled: boolean;
  readonly variant: string | null;
  readonly reason: OfrepReason;
  /** The PostHog reason code (`condition_match`, …), kept in the metadata. */
  readonly posthogReason: string | null;
  readonly id: number | null;
  readonly version: number | null;
  /** The payload as JSON text, or null. */
  readonly payload: string | null;
}

/** The OFREP evaluation object of a result, as JSON text. */
export function ofrepJson(result: OfrepResult): string {
  const metadata: Record<string, string | number> = {};
  if (result.id !== null) metadata.flagId = result.id;
  if (result.version !== null) metadata.version = result.version;
  if (result.payload !== null) metadata.payload = result.payload;
  if (result.posthogReason !== null) metadata.posthogReason = result.posthogReason;
  const value = result.variant !== null ? variantValue(result.variant) : result.enabled;
  return JSON.stringify({
    key: result.key,
    value,
    reason: result.reason,
    ...(result.variant !== null ? { variant: result.variant } : {}),
    metadata,
  });
}

/** The payload's JSON text: upstream stores (and sends) most payloads as a JSON string holding JSON. */
const payloadText = (json: unknown): string | null => (json === undefined || json === null ? null : typeof json === 'string' ? json : JSON.stringify(json));

const fragments = new WeakMap<CompiledFlag, Map<string, string>>();

/** The OFREP evaluation of a flag decided from the snapshot, built once per (flag, value, reason, condition). */
export function decidedJson(d: Decided): string {
  let byResult = fragments.get(d.flag);
  if (byResult === undefined) fragments.set(d.flag, (byResult = new Map()));
  const id = `${typeof d.value === 'string' ? `s:${d.value}` : String(d.value)}|${d.reason}|${d.conditionIndex}`;
  let json = byResult.get(id);
  if (json === undefined) {
    const variant = typeof d.value === 'string' ? d.value : null;
    const payload = payloadFor(d.flag, d.value, d.reason);
    json = ofrepJson({
      key: d.flag.key,
      enabled: d.value !== false,
      variant,
      reason: ofrepReason(d.flag, d.reason, d.conditionIndex, variant),
      posthogReason: reasonCodeText(d.reason),
      id: d.flag.id,
      version: d.flag.version,
      payload: payload === undefined ? null : payloadText(JSON.parse(payload.json)),
    });
    byResult.set(id, json);
  }
  return json;
}

/**
 * The OFREP evaluation of a flag upstream decided: `fragment` is one `"key":{…}` entry of its v2 `flags` map
 * (eval/remote-part.ts); `flagOf` finds its definition when the snapshot holds one. null when the entry is not a
 * usable flag result. Parses the entry: upstream's answers only, never the snapshot's.
 */
export function remoteJson(fragment: string, flagOf: (key: string) => CompiledFlag | undefined): { readonly key: string; readonly json: string } | null {
  const parsed: unknown = JSON.parse(`{${fragment}}`);
  const [key, detail] = Object.entries(parsed as Record<string, unknown>)[0] ?? [];
  if (key === undefined || !isObject(detail)) return null;
  const variant = typeof detail.variant === 'string' ? detail.variant : null;
  const reason = isObject(detail.reason) ? detail.reason : {};
  const code = typeof reason.code === 'string' ? reason.code : null;
  const conditionIndex = typeof reason.condition_index === 'number' ? reason.condition_index : null;
  const metadata = isObject(detail.metadata) ? detail.metadata : {};
  const json = ofrepJson({
    key,
    enabled: detail.enabled === true || variant !== null,
    variant,
    reason: ofrepReason(flagOf(key), code ?? '', conditionIndex, variant),
    posthogReason: code,
    id: typeof metadata.id === 'number' ? metadata.id : null,
    version: typeof metadata.version === 'number' ? metadata.version : null,
    payload: payloadText(metadata.payload),
  });
  return { key, json };
}

/** An OFREP failure object as JSON text (`key` on per-flag failures). */
export const failureJson = (errorCode: OfrepErrorCode, details: string, key?: string): string =>
  JSON.stringify(key === undefined ? { errorCode, errorDetails: details } : { key, errorCode, errorDetails: details });
