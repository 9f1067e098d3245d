/**
 * One flag's pieces of the /flags answers (v2 `flags` entries, legacy `featureFlags` / `featureFlagPayloads`
 * entries, evaluation_reasons entries), as JSON text. The constant parts (the key, and the metadata: id, version,
 * description, has_experiment) are serialized once per snapshot, when the flag is compiled; each whole entry is
 * concatenated from them the first time an outcome (value, reason, condition) occurs and kept in a table indexed
 * by a small integer, as UTF-8 bytes with a leading comma, so answering a request looks entries up and copies
 * their bytes: no string or object is built, nothing is encoded. The table holds at most one entry per outcome the
 * flag can have, and goes with its snapshot.
 */
import { reasonCodeText, type ReasonCode } from './evaluate.js';

/** What an entry depends on: the flag's answer to one evaluation. */
export interface FlagOutcomeText {
  readonly value: boolean | string;
  readonly reason: ReasonCode;
  readonly conditionIndex: number | null;
}

/**
 * The precomputed text of one flag (compile.ts builds it; flags-response.ts reads it). Kept small, as every flag of
 * every snapshot has one from compile time on: the metadata's values rather than their text (an entry is built at
 * most once per outcome), one empty map shared by every flag without variants, the table made by its first entry.
 */
export interface FlagFragments {
  /** The key as a JSON string. */
  readonly name: string;
  /** The metadata's values: id, version, description (the flag's name), has_experiment. */
  readonly id: number | null;
  readonly version: number | null;
  readonly description: string | null;
  readonly hasExperiment: boolean;
  /** Per value with a payload (`"true"` or a variant key): the stored payload's JSON text (the compiled flag's map). */
  readonly payloads: ReadonlyMap<string, { readonly json: string }>;
  /** A variant's (or the holdout variant's) value slot; false is 0, true 1. */
  readonly valueSlots: ReadonlyMap<unknown, number>;
  /** The number of conditions plus one (no condition). */
  readonly conditionSlots: number;
  /** Entries built so far (`,` and the entry, UTF-8), by outcome slot × 4 + kind; null until the first. */
  built: Map<number, Buffer> | null;
  /**
   * The slot `built` was last asked for and its bytes (-1: none), looked at before the Map: a flag's outcome is
   * mostly the same from one request to the next (a flag on or off for everyone, a rollout of 0 or 100, most users
   * outside a targeted condition), whoever asks.
   */
  lastSlot: number;
  lastBytes: Buffer | null;
}

/** What flagFragments needs of a compiled flag. */
export interface FragmentSource {
  readonly key: string;
  readonly id: number | null;
  readonly version: number | null;
  readonly name: string | null;
  readonly hasExperiment: boolean;
  readonly conditions: readonly unknown[];
  readonly variants: ReadonlyArray<{ readonly key: string }>;
  readonly holdout: { readonly variant: string } | null;
  readonly payloads: ReadonlyMap<string, { readonly json: string }>;
}

/** One map for every flag without variants: nothing is ever added to it. */
const noValueSlots: ReadonlyMap<unknown, number> = new Map();

/** Build a flag's constant text (once per snapshot). Never throws. */
export function flagFragments(flag: FragmentSource): FlagFragments {
  const name = JSON.stringify(flag.key);
  let valueSlots = noValueSlots;
  if (flag.variants.length > 0 || flag.holdout !== null) {
    const slots = new Map<unknown, number>();
    for (const variant of flag.variants) if (!slots.has(variant.key)) slots.set(variant.key, slots.size + 2);
    if (flag.holdout !== null && !slots.has(flag.holdout.variant)) slots.set(flag.holdout.variant, slots.size + 2);
    valueSlots = slots;
  }
  return {
    name,
    id: flag.id,
    version: flag.version,
    description: flag.name,
    hasExperiment: flag.hasExperiment,
    payloads: flag.payloads,
    valueSlots,
    conditionSlots: flag.conditions.length + 1,
    built: null,
    lastSlot: -1,
    lastBytes: null,
  };
}

/**
 * A reason's place in the table. A switch, not a lookup in an object by the reason's name: such a keyed load sees
 * every reason's name and goes megamorphic (~110 instructions a flag measured at 1,000 flags).
 */
function reasonSlot(reason: ReasonCode): number {
  switch (reason) {
    case 'condition_match':
      return 0;
    case 'no_condition_match':
      return 1;
    case 'out_of_rollout_bound':
      return 2;
    case 'no_group_type':
      return 3;
    case 'holdout_condition_value':
      return 4;
    case 'super_condition_value':
      return 6;
    case 'no_condition_match_groups_not_evaluated':
      return 7;
    default:
      return 5; // flag_disabled
  }
}

/** How many reason slots reasonSlot has. */
const reasonSlots = 8;

const descriptions: Readonly<Record<ReasonCode, string>> = {
  condition_match: '', // per condition: "Matched condition set N"
  no_condition_match: 'No matching condition set',
  no_condition_match_groups_not_evaluated: 'No matching condition set (group conditions were not evaluated because no group type was provided)',
  out_of_rollout_bound: 'Out of rollout bound',
  no_group_type: 'No group type',
  holdout_condition_value: 'Holdout condition value',
  flag_disabled: 'Feature flag is disabled',
  super_condition_value: 'Super condition value',
};

/**
 * The payload text of an outcome (as the SDK resolves it: by variant, `"true"` for a plain true, none for false;
 * an enrolment's, `super_condition_value`, the `"true"` payload either way, as upstream: payload.ts).
 */
const payloadText = (f: FlagFragments, o: FlagOutcomeText): string | undefined =>
  o.reason === 'super_condition_value' ? f.payloads.get('true')?.json : o.value === false ? undefined : f.payloads.get(o.value === true ? 'true' : o.value)?.json;

const v2Kind = 0;
const reasonsKind = 1;
const legacyValueKind = 2;
const legacyPayloadKind = 3;

/**
 * The table index of an outcome's entry of `kind` (legacy kinds depend on the value only; an enrolment's legacy
 * payload entry, the `"true"` payload whatever its value, is true's), or -1 for an outcome outside the table (a
 * value that is no variant of the flag, a condition index it does not have): built each time.
 */
function slotOf(f: FlagFragments, o: FlagOutcomeText, kind: number): number {
  if (kind === legacyPayloadKind && o.reason === 'super_condition_value') return 4 + kind;
  const value = o.value === false ? 0 : o.value === true ? 1 : f.valueSlots.get(o.value);
  if (value === undefined) return -1;
  if (kind >= legacyValueKind) return value * 4 + kind;
  const index = o.conditionIndex;
  if (index !== null && !(Number.isInteger(index) && index >= 0 && index < f.conditionSlots - 1)) return -1;
  return ((value * reasonSlots + reasonSlot(o.reason)) * f.conditionSlots + (index === null ? 0 : index + 1)) * 4 + kind;
}

/** `,` and the entry, as UTF-8 (each entry is whole JSON text, so the bytes of a body are its entries' bytes). */
function entry(f: FlagFragments, o: FlagOutcomeText, kind: number, build: (f: FlagFragments, o: FlagOutcomeText) => string): Buffer {
  const slot = slotOf(f, o, kind);
  if (slot < 0) return Buffer.from(`,${build(f, o)}`);
  if (slot === f.lastSlot) return f.lastBytes as Buffer;
  let built = f.built;
  if (built === null) built = f.built = new Map();
  let bytes = built.get(slot);
  if (bytes === undefined) {
    // Its own memory, not a slice of node's shared 8 KB pool: a kept slice would keep its whole slab alive.
    const text = `,${build(f, o)}`;
    bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
    bytes.write(text);
    built.set(slot, bytes);
  }
  f.lastSlot = slot;
  f.lastBytes = bytes;
  return bytes;
}

function buildV2(f: FlagFragments, o: FlagOutcomeText): string {
  const description = o.reason === 'condition_match' ? `Matched condition set ${(o.conditionIndex ?? 0) + 1}` : descriptions[o.reason];
  const variant = typeof o.value === 'string' ? JSON.stringify(o.value) : 'null';
  const reason = `{"code":${JSON.stringify(reasonCodeText(o.reason))},"condition_index":${JSON.stringify(o.conditionIndex)},"description":${JSON.stringify(description)}}`;
  const metadata = `"metadata":{"id":${JSON.stringify(f.id)},"version":${JSON.stringify(f.version)},"description":${JSON.stringify(f.description)},"has_experiment":${f.hasExperiment},"payload":`;
  return `${f.name}:{"key":${f.name},"enabled":${o.value !== false},"variant":${variant},"reason":${reason},${metadata}${payloadText(f, o) ?? 'null'}}}`;
}

const buildReasons = (f: FlagFragments, o: FlagOutcomeText): string =>
  `${f.name}:{"value":${JSON.stringify(o.value)},"evaluation":{"reason":${JSON.stringify(o.reason === 'flag_disabled' ? 'disabled' : reasonCodeText(o.reason))},"condition_index":${JSON.stringify(o.conditionIndex)}}}`;

const buildLegacyValue = (f: FlagFragments, o: FlagOutcomeText): string => `${f.name}:${JSON.stringify(o.value)}`;

const buildLegacyPayload = (f: FlagFragments, o: FlagOutcomeText): string => `${f.name}:${payloadText(f, o) as string}`;

/** `,"key":{…}` of a v2 `flags` map (key, enabled, variant, reason, metadata with the stored payload verbatim). */
export const v2Entry = (f: FlagFragments, o: FlagOutcomeText): Buffer => entry(f, o, v2Kind, buildV2);

/** `,"key":{"value":…,"evaluation":{"reason":…,"condition_index":…}}` of evaluation_reasons (inactive → "disabled"). */
export const reasonsEntry = (f: FlagFragments, o: FlagOutcomeText): Buffer => entry(f, o, reasonsKind, buildReasons);

/** `,"key":value` of a legacy `featureFlags` map. */
export const legacyValueEntry = (f: FlagFragments, o: FlagOutcomeText): Buffer => entry(f, o, legacyValueKind, buildLegacyValue);

/** `,"key":payload` of a legacy `featureFlagPayloads` map, or null when the value has none. */
export function legacyPayloadEntry(f: FlagFragments, o: FlagOutcomeText): Buffer | null {
  return payloadText(f, o) === undefined ? null : entry(f, o, legacyPayloadKind, buildLegacyPayload);
}
