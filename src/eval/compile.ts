/**
 * Definitions (a local_evaluation body) → a compiled form evaluated with no parsing: property matchers built
 * once (regexes, dates, semvers), variant lookup tables and payloads precomputed, condition overrides checked,
 * group type names resolved. Compiled once per snapshot and swapped with it. Never throws: whatever the SDK
 * would refuse at evaluation time compiles to a node that gives the SDK's answer then.
 */
import { enrollmentKey } from './enrollment.js';
import { flagFragments, type FlagFragments } from './flag-fragments.js';
import { flagHashHeads } from './hash.js';
import { BucketHashMemo } from './hash-memo.js';
import { hashPeers } from './hash-peers.js';
import { flagsMissingDependencies } from './missing-dependencies.js';
import type { UnresolvedReason } from './outcomes.js';
import { compileProperty, type PropertyMatcher } from './properties.js';

/** A condition's or cohort's reference to a flag (`type: "flag"`). */
export interface DependencyRef {
  readonly kind: 'flag';
  readonly key: string;
  readonly expected: unknown;
  /** The flag keys to evaluate first, in order; null when the field is absent or not an array. */
  readonly chain: readonly string[] | null;
  /**
   * The operator is `flag_evaluates_to`. The flags service matches a condition's flag filter only with that
   * operator (any other, or none, never matches); posthog-node ignores the operator.
   */
  readonly evaluatesTo: boolean;
}

/** A reference to a cohort (`type: "cohort"`). */
export interface CohortRef {
  readonly kind: 'cohort';
  readonly id: string;
  readonly notIn: boolean;
}

/** A plain property filter, matched against the person's or a group's properties. */
export interface PropertyRef {
  readonly kind: 'property';
  readonly key: string;
  readonly match: PropertyMatcher;
  /**
   * The filter's slot among the snapshot's distinct property filters: filters equal in key, operator and value
   * (the matching version is the snapshot's) share a slot and a matcher, so an evaluation matches each distinct
   * filter once per property map (evaluate.ts). `0 ≤ slot < CompiledDefinitions.propertySlots`.
   */
  readonly slot: number;
}

/** A filter that is not an object (see Broken in outcomes.ts). */
export interface BrokenRef {
  readonly kind: 'broken';
}

/** One filter of a condition or a cohort leaf. */
export type CompiledFilter = (DependencyRef | CohortRef | PropertyRef | BrokenRef) & { readonly negation: boolean };

/** A cohort's property group: nested groups, or leaves. */
export interface CompiledGroup {
  /**
   * 'empty': matches everything (null or `{}`); 'invalid': a type the SDK refuses (server evaluation);
   * 'broken': entries the SDK cannot even read (see Broken in outcomes.ts).
   */
  readonly type: 'AND' | 'OR' | 'empty' | 'invalid' | 'broken';
  readonly groups: readonly CompiledGroup[] | null;
  readonly leaves: readonly CompiledFilter[] | null;
}

/** One condition (`filters.groups[i]`). */
export interface CompiledCondition {
  /** undefined: inherit the flag's aggregation; null: person. */
  readonly aggregation: number | null | undefined;
  readonly filters: readonly CompiledFilter[];
  /** undefined/null: no rollout limit. */
  readonly rollout: number | null | undefined;
  /** The condition's variant override, when it names one of the flag's variants. */
  readonly variant: string | null;
}

/** A flag ready to evaluate. */
export interface CompiledFlag {
  readonly key: string;
  readonly id: number | null;
  readonly version: number | null;
  readonly active: boolean;
  readonly continuity: boolean;
  /** `filters.aggregation_group_type_index` (undefined/null: a person flag). */
  readonly aggregation: number | null | undefined;
  readonly deviceBucketing: boolean;
  readonly holdout: { readonly variant: string; readonly fraction: number } | null;
  readonly conditions: readonly CompiledCondition[];
  /** The multivariate lookup table: [min, max) ranges accumulated as the SDK does. */
  readonly variants: ReadonlyArray<{ readonly key: string; readonly min: number; readonly max: number }>;
  readonly earlyExit: boolean;
  /**
   * Per value (`"true"` or a variant key) with a payload: the payload as the SDK resolves it (`value`), and the
   * stored value as JSON text (`json`), as upstream's /flags sends it (usually a JSON string of JSON).
   */
  readonly payloads: ReadonlyMap<string, { readonly value: unknown; readonly json: string }>;
  /** The flag's `name` (its description in upstream's UI), or null. */
  readonly name: string | null;
  /**
   * `has_experiment`: upstream's /flags says it in each flag's metadata (the SDKs send it with flag events). True
   * unless the definition says `false`: upstream's flags service defaults it to true when absent (flag_models.rs).
   */
  readonly hasExperiment: boolean;
  /**
   * `$feature_enrollment/<key>` when `filters.feature_enrollment` is `true` (early-access enrolment decides the
   * flag before its conditions: enrollment.ts), else null.
   */
  readonly enrollmentKey: string | null;
  /** Where it may be evaluated: server, client or all (`evaluation_runtime`, any case; unknown or absent: all). */
  readonly runtime: 'server' | 'client' | 'all';
  /** `evaluation_contexts` (or the older `evaluation_tags`): empty when the flag evaluates in every context. */
  readonly contexts: readonly string[];
  /**
   * What makes the flag undecidable whatever the context (the SDK's getDefinitionUnresolvedReason): used as the
   * reason when evaluation needs the server. undefined when nothing in the definition is unsupported.
   */
  readonly definitionReason: UnresolvedReason | undefined;
  /** The flag's /flags answer text: constant parts serialized here, whole entries kept as they occur. */
  readonly fragments: FlagFragments;
  /** Where `"{key}."`, encoded once for the bucketing hash, is in CompiledDefinitions' `hashHeads`. */
  readonly hashHead: number;
  /** Where its hashes are in CompiledDefinitions' bucketHashes rows: its index in `flags`. */
  readonly hashSlot: number;
  /** The slots of the flags to hash with this one's rollout hash, and with its variant hash (hash-peers.ts). */
  readonly rolloutPeers: readonly number[];
  readonly variantPeers: readonly number[];
  /**
   * Some condition's dependency chain names this key: an evaluation keeps the value it gives for the
   * flags that depend on it (evaluate.ts), where they would evaluate it again.
   */
  readonly dependedOn: boolean;
  /**
   * A flag it depends on (directly or through another) is missing from the definitions: upstream may answer it
   * `missing_dependency` whatever its conditions say, so it is never decided here (missing-dependencies.ts).
   */
  readonly missingDependency: boolean;
}

/** Compiled definitions of one project. */
export interface CompiledDefinitions {
  readonly flags: readonly CompiledFlag[];
  readonly byKey: ReadonlyMap<string, CompiledFlag>;
  /**
   * byKey's values in its order (each key where it first occurs, the last flag of that key): what a query for
   * every flag evaluates, as an array (walking the Map's iterator cost more per flag than the loop's own work).
   */
  readonly distinct: readonly CompiledFlag[];
  readonly cohorts: ReadonlyMap<string, CompiledGroup>;
  readonly groupTypeMapping: Readonly<Record<string, string>>;
  /** `minimal_flag_called_events`: the project opted into slim `$feature_flag_called` events. */
  readonly minimalFlagCalledEvents: boolean;
  /** Some flag is limited to one runtime or to evaluation contexts (else no query's filters leave any flag out). */
  readonly limited: boolean;
  /** The flags' `"{key}."` encoded for the bucketing hash (hash.ts flagHashHeads), one array for the snapshot. */
  readonly hashHeads: Int32Array;
  /** Where each flag's head is in hashHeads, by hashSlot (a batch's peers are named by slot). */
  readonly hashHeadAt: Int32Array;
  /** The flags' bucketing hashes per bucketing value, kept across requests (hash-memo.ts). */
  readonly bucketHashes: BucketHashMemo;
  /** How many distinct property filters (PropertyRef slots) the flags and cohorts hold. */
  readonly propertySlots: number;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Text naming a filter value exactly, for values as JSON gives them (strings, finite numbers, booleans, null and
 * dense plain arrays of those); null for anything else (-0, NaN, objects, holes…), which is never shared: two
 * values with the same text compile to matchers that answer alike.
 */
function valueText(value: unknown): string | null {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return JSON.stringify(value);
  if (typeof value === 'number') return Number.isFinite(value) && !Object.is(value, -0) ? String(value) : null;
  if (!Array.isArray(value) || Object.getPrototypeOf(value) !== Array.prototype) return null;
  let text = '[';
  for (let i = 0; i < value.length; i++) {
    const item = i in value ? valueText(value[i]) : null;
    if (item === null) return null;
    text += i === 0 ? item : `,${item}`;
  }
  return `${text}]`;
}

/**
 * The property filters of one snapshot, each distinct filter compiled once and given a slot. Filters whose value
 * has no exact text (valueText) get a slot of their own.
 */
class PropertyFilters {
  private readonly slots = new Map<string, { readonly match: PropertyMatcher; readonly slot: number }>();
  private readonly texts = new Map<string, string>();
  count = 0;
  /** The keys some dependency chain names. */
  readonly dependedOn = new Set<string>();

  constructor(private readonly matchingVersion: number | undefined) {}

  /**
   * One string object for each text naming a flag or a cohort (keys, dependency chains, cohort ids): the
   * evaluator's Map lookups by them then find the key by identity. Equal strings from different places of the
   * definitions (a chain's key parsed apart from the flag's) were compared character by character on every lookup
   * (~27 string comparisons a request at 30 flags).
   */
  intern(text: string): string {
    const known = this.texts.get(text);
    if (known !== undefined) return known;
    this.texts.set(text, text);
    return text;
  }

  private never: { readonly match: PropertyMatcher; readonly slot: number } | undefined;

  /** A filter that matches nothing (one slot for all of them). */
  neverMatches(): { readonly match: PropertyMatcher; readonly slot: number } {
    this.never ??= { match: neverMatcher, slot: this.count++ };
    return this.never;
  }

  compile(key: string, value: unknown, operator: unknown, type: unknown): { readonly match: PropertyMatcher; readonly slot: number } {
    const op = operator || 'exact';
    const text = typeof key === 'string' && typeof op === 'string' ? valueText(value) : null;
    const id = text === null ? null : `${JSON.stringify(key)} ${JSON.stringify(op)} ${text}`;
    const known = id === null ? undefined : this.slots.get(id);
    if (known !== undefined) return known;
    const compiled = {
      match: compileProperty(
        { key, value, operator: operator as string | null | undefined, type: type as string | undefined },
        { propertyMatchingVersion: this.matchingVersion ?? null },
      ),
      slot: this.count++,
    };
    if (id !== null) this.slots.set(id, compiled);
    return compiled;
  }
}

const noMatcher: PropertyMatcher = () => 'inconclusive-unsupported';
const neverMatcher: PropertyMatcher = () => false;

/**
 * Every kind of filter as one object literal with every kind's fields (those of other kinds unset): all filters
 * then share one hidden class, so the evaluator's reads of `kind`, `negation` and the rest stay monomorphic.
 */
function filterNode(
  kind: CompiledFilter['kind'],
  negation: boolean,
  fields: {
    key?: string;
    match?: PropertyMatcher;
    slot?: number;
    id?: string;
    notIn?: boolean;
    expected?: unknown;
    chain?: readonly string[] | null;
    evaluatesTo?: boolean;
  },
): CompiledFilter {
  return {
    kind,
    negation,
    key: fields.key,
    match: fields.match ?? noMatcher,
    slot: fields.slot ?? -1,
    id: fields.id ?? '',
    notIn: fields.notIn ?? false,
    expected: fields.expected,
    chain: fields.chain ?? null,
    evaluatesTo: fields.evaluatesTo ?? false,
  } as CompiledFilter;
}

function compileFilter(raw: unknown, properties: PropertyFilters, inCohort = false): CompiledFilter {
  if (raw === null || typeof raw !== 'object') return filterNode('broken', false, {});
  const filter = raw as Record<string, unknown>;
  const negation = Boolean(filter.negation);
  if (filter.type === 'cohort') return filterNode('cohort', negation, { id: properties.intern(String(filter.value)), notIn: filter.operator === 'not_in' });
  // Upstream's flags service matches a cohort's flag filter as any other property filter (cohort_operations.rs,
  // evaluate_cohort_filter → evaluate_property_with_negation → match_property): by its key among the properties,
  // and with `flag_evaluates_to`, which match_property refuses, never (`unwrap_or(false)`; negated: always). The
  // dependency is not evaluated. posthog-node evaluates it instead.
  if (filter.type === 'flag' && inCohort && filter.operator === 'flag_evaluates_to') {
    const { match, slot } = properties.neverMatches();
    return filterNode('property', negation, { key: String(filter.key), match, slot });
  }
  if (filter.type === 'flag' && !inCohort) {
    const chain = Array.isArray(filter.dependency_chain) ? filter.dependency_chain.map((key) => properties.intern(String(key))) : null;
    for (const key of chain ?? []) properties.dependedOn.add(key);
    const evaluatesTo = filter.operator === 'flag_evaluates_to';
    return filterNode('flag', negation, { key: properties.intern(String(filter.key)), expected: filter.value, chain, evaluatesTo });
  }
  const key = filter.key as string;
  const { match, slot } = properties.compile(key, filter.value, filter.operator, filter.type);
  return filterNode('property', negation, { key, match, slot });
}

function compileGroup(raw: unknown, properties: PropertyFilters): CompiledGroup {
  // As the SDK: anything falsy or without keys matches everything.
  if (!raw || Object.keys(raw).length === 0) return { type: 'empty', groups: null, leaves: null };
  if (!isRecord(raw)) return { type: 'invalid', groups: null, leaves: null };
  const type = raw.type === 'property' ? 'AND' : raw.type;
  if (type !== 'AND' && type !== 'OR') return { type: 'invalid', groups: null, leaves: null };
  if (!raw.values || (raw.values as { length?: unknown }).length === 0) return { type, groups: null, leaves: [] };
  if (!Array.isArray(raw.values) || raw.values[0] === null || typeof raw.values[0] !== 'object') return { type: 'broken', groups: null, leaves: null };
  const values: unknown[] = raw.values;
  // As the SDK: the first entry decides whether the entries are groups or leaves.
  if ('values' in (values[0] as object)) {
    return { type, groups: values.map((v) => compileGroup(v, properties)), leaves: null };
  }
  return { type, groups: null, leaves: values.map((v) => compileFilter(v, properties, true)) };
}

const finiteOrNull = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

/** A stored payload as the SDK resolves it: a string parsed as JSON when it parses; other values as they are. */
function parsePayload(stored: unknown): unknown {
  if (typeof stored !== 'string') return stored;
  try {
    return JSON.parse(stored) as unknown;
  } catch {
    return stored;
  }
}

/** One map for every flag without payloads (a Map and its table are ~180 bytes a flag): nothing is added to it. */
const noPayloads: CompiledFlag['payloads'] = new Map();

function compilePayloads(raw: unknown): CompiledFlag['payloads'] {
  if (!isRecord(raw)) return noPayloads;
  let payloads: Map<string, { value: unknown; json: string }> | null = null;
  for (const [key, stored] of Object.entries(raw)) {
    if (!stored) continue; // a falsy stored payload counts as none
    (payloads ??= new Map()).set(key, { value: parsePayload(stored), json: JSON.stringify(stored) });
  }
  return payloads ?? noPayloads;
}

/** A compiled flag before what needs every flag (its definition reason) and its response text. */
type FlagDraft = Omit<CompiledFlag, 'definitionReason' | 'fragments' | 'hashHead' | 'hashSlot' | 'rolloutPeers' | 'variantPeers' | 'dependedOn' | 'missingDependency'>;

/** Where a flag's bucketing hash is computed and kept: its head and slot, and its peers' slots (hash-peers.ts). */
interface HashPlace {
  readonly head: number;
  readonly slot: number;
  readonly rolloutPeers: readonly number[];
  readonly variantPeers: readonly number[];
}

function compileFlag(raw: Record<string, unknown>, properties: PropertyFilters): FlagDraft {
  const filters = isRecord(raw.filters) ? raw.filters : {};
  const variantList = isRecord(filters.multivariate) && Array.isArray(filters.multivariate.variants) ? filters.multivariate.variants : [];
  const variants: Array<{ key: string; min: number; max: number }> = [];
  let min = 0;
  for (const v of variantList) {
    const variant = isRecord(v) ? v : {};
    const max = min + (variant.rollout_percentage as number) / 100.0;
    variants.push({ key: variant.key as string, min, max });
    min = max;
  }
  const variantKeys = new Set(variants.map((v) => v.key));
  const holdout = isRecord(filters.holdout) ? filters.holdout : null;
  let compiledHoldout: CompiledFlag['holdout'] = null;
  if (holdout && holdout.id != null && holdout.exclusion_percentage != null) {
    const pct = Number(holdout.exclusion_percentage);
    if (Number.isFinite(pct)) compiledHoldout = { variant: `holdout-${String(holdout.id)}`, fraction: Math.min(Math.max(pct, 0), 100) / 100 };
  }
  const conditions = (Array.isArray(filters.groups) ? filters.groups : []).map((c): CompiledCondition => {
    const condition = isRecord(c) ? c : {};
    const override = condition.variant;
    return {
      aggregation: 'aggregation_group_type_index' in condition ? (condition.aggregation_group_type_index as number | null) : undefined,
      filters: (Array.isArray(condition.properties) ? condition.properties : []).map((p) => compileFilter(p, properties)),
      rollout: condition.rollout_percentage as number | null | undefined,
      variant: typeof override === 'string' && override !== '' && variantKeys.has(override) ? override : null,
    };
  });
  const declaredRuntime = typeof raw.evaluation_runtime === 'string' ? raw.evaluation_runtime.toLowerCase() : 'all';
  const runtime = declaredRuntime === 'server' || declaredRuntime === 'client' ? declaredRuntime : 'all';
  // Upstream filters on `evaluation_tags`; `evaluation_contexts` is the newer name (the SDK reads it first).
  const nonEmpty = (list: unknown): unknown[] | null => (Array.isArray(list) && list.length > 0 ? list : null);
  const contexts = nonEmpty(raw.evaluation_contexts) ?? nonEmpty(raw.evaluation_tags) ?? [];
  return {
    key: properties.intern(String(raw.key)),
    id: finiteOrNull(raw.id),
    name: typeof raw.name === 'string' ? raw.name : null,
    // Upstream's FeatureFlag defaults has_experiment to true when absent (rust/feature-flags flag_models.rs).
    hasExperiment: raw.has_experiment !== false,
    enrollmentKey: filters.feature_enrollment === true ? enrollmentKey(String(raw.key)) : null,
    version: finiteOrNull(raw.version),
    active: Boolean(raw.active),
    continuity: Boolean(raw.ensure_experience_continuity),
    aggregation: filters.aggregation_group_type_index as number | null | undefined,
    deviceBucketing: raw.bucketing_identifier === 'device_id',
    holdout: compiledHoldout,
    conditions,
    variants,
    earlyExit: Boolean(filters.early_exit),
    payloads: compilePayloads(filters.payloads),
    runtime,
    contexts: contexts.filter((tag): tag is string => typeof tag === 'string'),
  };
}

/**
 * A draft with its derived fields, written out as one object literal: every compiled flag then has the same hidden
 * class. (A spread of the draft plus two fields gave each flag a hidden class of its own, so every read of a flag's
 * field on the evaluation path missed V8's inline caches: at 1,000 flags a flag cost twice what it costs at 30.)
 */
function completeFlag(draft: FlagDraft, reason: UnresolvedReason | undefined, hash: HashPlace, dependedOn: boolean, missingDependency: boolean): CompiledFlag {
  return {
    key: draft.key,
    id: draft.id,
    name: draft.name,
    hasExperiment: draft.hasExperiment,
    enrollmentKey: draft.enrollmentKey,
    version: draft.version,
    active: draft.active,
    continuity: draft.continuity,
    aggregation: draft.aggregation,
    deviceBucketing: draft.deviceBucketing,
    holdout: draft.holdout,
    conditions: draft.conditions,
    variants: draft.variants,
    earlyExit: draft.earlyExit,
    payloads: draft.payloads,
    runtime: draft.runtime,
    contexts: draft.contexts,
    definitionReason: reason,
    fragments: flagFragments(draft),
    hashHead: hash.head,
    hashSlot: hash.slot,
    rolloutPeers: hash.rolloutPeers,
    variantPeers: hash.variantPeers,
    dependedOn,
    missingDependency,
  };
}

/** Compile a local_evaluation body (`flags`, `group_type_mapping`, `cohorts`, `property_matching_version`). */
export function compileDefinitions(body: unknown): CompiledDefinitions {
  const value = isRecord(body) ? body : {};
  const version = typeof value.property_matching_version === 'number' ? value.property_matching_version : undefined;
  const rawFlags = (Array.isArray(value.flags) ? value.flags : []).filter(isRecord);
  const properties = new PropertyFilters(version);
  const drafts = rawFlags.map((f) => compileFlag(f, properties));
  const draftKeys = new Set(drafts.map((flag) => flag.key));
  const rawCohorts = isRecord(value.cohorts) ? value.cohorts : {};
  const cohorts = new Map<string, CompiledGroup>();
  if (isRecord(value.cohorts)) for (const [id, group] of Object.entries(value.cohorts)) cohorts.set(properties.intern(id), compileGroup(group, properties));
  const mapping = isRecord(value.group_type_mapping) ? (value.group_type_mapping as Record<string, string>) : {};
  const heads = flagHashHeads(drafts.map((flag) => flag.key));
  const peers = hashPeers(drafts);
  const missingDependencies = flagsMissingDependencies(drafts);
  // One scratch set for every flag's reason: a filter met again (most bodies repeat a few) is not compiled again.
  const scratch = new PropertyFilters(undefined);
  const flags = drafts.map((flag, i) =>
    completeFlag(flag, definitionReason(flag, (rawFlags[i]?.filters as Record<string, unknown> | undefined)?.groups, draftKeys, rawCohorts, mapping, scratch), {
      head: heads.at[i] as number,
      slot: i,
      rolloutPeers: peers.rollout[i] as readonly number[],
      variantPeers: peers.variant[i] as readonly number[],
    }, properties.dependedOn.has(flag.key), missingDependencies.has(flag.key)),
  );
  const byKey = new Map<string, CompiledFlag>();
  for (const flag of flags) byKey.set(flag.key, flag); // a later duplicate wins, as in the SDK's reduce
  const limited = flags.some((flag) => flag.runtime !== 'all' || flag.contexts.length > 0);
  return {
    flags,
    byKey,
    distinct: [...byKey.values()],
    cohorts,
    groupTypeMapping: mapping,
    minimalFlagCalledEvents: value.minimal_flag_called_events === true,
    limited,
    hashHeads: heads.words,
    hashHeadAt: Int32Array.from(heads.at),
    bucketHashes: new BucketHashMemo(flags.length),
    propertySlots: properties.count,
  };
}

/**
 * The SDK's getDefinitionUnresolvedReason, computed once per snapshot from the raw definitions (it classifies
 * cohort entries one by one, unlike evaluation). Where the SDK fails on malformed entries it has no reason:
 * undefined here too. Filters are compiled into `scratch` (never evaluated, only asked whether their operator is
 * supported), which keeps one matcher per key, operator and value, as the evaluator's own set does.
 */
function definitionReason(
  flag: FlagDraft,
  rawConditions: unknown,
  flagKeys: ReadonlySet<string>,
  rawCohorts: Readonly<Record<string, unknown>>,
  mapping: Readonly<Record<string, string>>,
  scratch: PropertyFilters,
): UnresolvedReason | undefined {
  if (!flag.active) return undefined;
  if (flag.continuity) return 'experience_continuity';
  if (flag.aggregation != null && !mapping[String(flag.aggregation)]) return 'unsupported_definition';
  const visited = new Set<string>();
  // A cohort's flag filter is matched as a property filter (compileFilter), not as a dependency.
  const unsupported = (raw: unknown, inCohort: boolean): boolean => {
    const property = raw as Record<string, unknown>;
    if (property.type === 'flag' && !inCohort) {
      const chain = property.dependency_chain;
      return !Array.isArray(chain) || chain.length === 0 || chain.some((key) => !flagKeys.has(String(key)));
    }
    if (property.type !== 'cohort') {
      const filter = compileFilter(property, scratch, inCohort);
      return filter.kind === 'property' && filter.match({}, 0) === 'inconclusive-unsupported';
    }
    const id = String(property.value);
    if (!Object.hasOwn(rawCohorts, id)) return true;
    if (visited.has(id)) return false;
    visited.add(id);
    return groupUnsupported(rawCohorts[id]);
  };
  const groupUnsupported = (group: unknown): boolean =>
    (((group as { values?: unknown } | null)?.values ?? []) as unknown[]).some((v) => ('values' in (v as object) ? groupUnsupported(v) : unsupported(v, true)));
  try {
    const conditions = (rawConditions || []) as Array<{ properties?: unknown[] }>;
    return conditions.some((c) => (c.properties || []).some((p) => unsupported(p, false))) ? 'unsupported_definition' : undefined;
  } catch {
    return undefined; // a TypeError in the SDK
  }
}
