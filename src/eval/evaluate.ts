/**
 * Flag evaluation, identical to the pinned official SDK (posthog-node 5.70.0 / @posthog/core 1.67.3;
 * docs/evaluation.md), plus the one step of upstream's flags service the SDK lacks, early-access
 * enrolment (enrollment.ts): inactive → false; experience continuity → inconclusive; enrolment given → decided by
 * it (`super_condition_value`), not given → inconclusive (upstream reads the stored person); group flags bucket by
 * the group key (unknown group type → inconclusive, group not given → false); device-id bucketing; the holdout;
 * conditions in order (per-condition aggregation, cohorts, flag dependencies, rollout, variant overrides, the
 * multivariate table, `early_exit`, the SDK's deferral of non-portable regexes); payloads. Alongside each value
 * it reports the server-style reason and condition index of upstream's flags service
 * (`rust/feature-flags/src/flags/flag_match_reason.rs` in PostHog/posthog).
 *
 * Inconclusive outcomes (the SDK's InconclusiveMatchError) and those that need the server outright (its
 * RequiresServerEvaluation) travel as thrown markers, as in the SDK, so that the common path allocates nothing
 * for them; nothing else is thrown.
 */
import { evaluateCohort, type FilterContext, type StaticCohort } from './cohorts.js';
import { hashIndependent } from './continuity.js';
import { enrollmentOf } from './enrollment.js';
import type { CompiledCondition, CompiledDefinitions, CompiledFlag, CompiledFilter, DependencyRef, PropertyRef } from './compile.js';
import { flagHashesOf, flagHashOf, holdoutHash } from './hash.js';
import { Broken, Inconclusive, ServerOnly, inconclusiveFor, mergeReason, type UnresolvedReason } from './outcomes.js';
import type { PropertyMatch } from './properties.js';

/** What a caller gives for one evaluation. */
export interface EvalContext {
  readonly distinctId: string;
  readonly groups: Readonly<Record<string, unknown>>;
  /** Person properties as the SDK evaluates them (distinct_id already merged in: see personProperties()). */
  readonly personProperties: Readonly<Record<string, unknown>>;
  /** Per group name given in `groups`: its properties, `$group_key` included (see groupProperties()). */
  readonly groupProperties: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly nowMs: number;
  /**
   * Decide experience-continuity flags whose outcome hashes nothing (continuity.ts) as upstream does, instead of
   * calling them inconclusive as the SDK does. Only for /flags requests without `$anon_distinct_id` (with it,
   * upstream writes hash-key overrides, a side effect only it can have). Absent: the SDK's behaviour.
   */
  readonly decideContinuity?: boolean;
  /**
   * Static cohorts whose members are known (cohort id → distinct_ids; upstream/static-cohorts.ts): a person
   * condition on one is decided by whether `distinctId` is listed, as upstream decides it; an unlisted id of a
   * truncated cohort (upstream listed at most 10 ids of a person) needs the server. Absent: the SDK's behaviour
   * (a cohort the definitions lack needs the server).
   */
  readonly staticCohorts?: ReadonlyMap<string, StaticCohort>;
}

/**
 * Server-style reason codes (`FeatureFlagMatchReason` of upstream's flags service,
 * `rust/feature-flags/src/flags/flag_match_reason.rs` in PostHog/posthog; `super_condition_value`: decided by
 * early-access enrolment; `no_condition_match_groups_not_evaluated`: no condition matched and a group condition
 * was skipped for want of its group, upstream's `NoConditionMatchGroupsNotEvaluated`, sent as `no_condition_match`
 * with a description of its own: see reasonCodeText).
 */
export type ReasonCode =
  | 'condition_match'
  | 'no_condition_match'
  | 'no_condition_match_groups_not_evaluated'
  | 'out_of_rollout_bound'
  | 'no_group_type'
  | 'holdout_condition_value'
  | 'flag_disabled'
  | 'super_condition_value';

/** The outcome of one flag. */
export type FlagOutcome =
  | {
      readonly kind: 'value';
      readonly value: boolean | string;
      readonly reason: ReasonCode;
      readonly conditionIndex: number | null;
      /**
       * Decided by a condition after one (of this flag or of a dependency) that could not be: the value the SDK
       * gives, but the server, holding the person's stored properties, might have matched the earlier one.
       */
      readonly partial: boolean;
    }
  | { readonly kind: 'inconclusive'; readonly reason: UnresolvedReason };

/** How decisive a reason is: a condition's reason replaces the flag's when it scores at least as high. */
function reasonScore(code: ReasonCode): number {
  switch (code) {
    case 'super_condition_value':
      return 6;
    case 'holdout_condition_value':
      return 5;
    case 'condition_match':
      return 4;
    case 'out_of_rollout_bound':
      return 3;
    case 'no_condition_match':
    case 'no_condition_match_groups_not_evaluated':
      return 2;
    case 'no_group_type':
      return 1;
    case 'flag_disabled':
      return 0;
  }
}

/** The code a reason is sent as (upstream's Display of FeatureFlagMatchReason). */
export const reasonCodeText = (code: ReasonCode): string => (code === 'no_condition_match_groups_not_evaluated' ? 'no_condition_match' : code);

/** The key of a group the request names, as upstream hashes it: non-empty text, or a number; else none. */
function groupKeyOf(groups: Readonly<Record<string, unknown>>, name: string): string | null {
  if (!Object.hasOwn(groups, name)) return null;
  const key = groups[name];
  return (typeof key === 'string' && key !== '') || typeof key === 'number' ? String(key) : null;
}

/** The person properties the SDK evaluates with: `distinct_id` first, the caller's own values winning. */
export const personProperties = (distinctId: string, given: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> => ({
  distinct_id: distinctId,
  ...given,
});

/** The group properties the SDK evaluates with: for each group given, `$group_key` under the caller's values. */
export function groupProperties(
  groups: Readonly<Record<string, unknown>>,
  given: Readonly<Record<string, Readonly<Record<string, unknown>> | undefined>> | undefined,
): Record<string, Record<string, unknown>> {
  const all: Record<string, Record<string, unknown>> = {};
  for (const name of Object.keys(groups)) all[name] = { $group_key: groups[name], ...given?.[name] };
  return all;
}

/** The properties of a group flag whose group was given without properties (no matcher reads more than own keys). */
const noProperties: Readonly<Record<string, unknown>> = Object.freeze({});

/** A property filter's answer as kept in an evaluation's memo: its index here (0: not matched yet). */
const memoVerdicts: readonly PropertyMatch[] = [false, false, true, 'inconclusive', 'inconclusive-unsupported', 'inconclusive-regex'];
const memoCode = (verdict: PropertyMatch): number =>
  verdict === false ? 1 : verdict === true ? 2 : verdict === 'inconclusive' ? 3 : verdict === 'inconclusive-unsupported' ? 4 : 5;

/**
 * Where flagHashesOf writes the hashes it computes together, and the heads of a batch's peers for it, by their
 * number (evaluations run one at a time: one of each serves all).
 */
const batchHashes = [0.5, 0.5, 0.5, 0.5];
const peerHeads = [[], [0], [0, 0], [0, 0, 0]];
/** An evaluation's memo before its first hash. */
const noHashes: Float64Array = new Float64Array(1);

/** Property maps an evaluation keeps a memo for (the person's, then groups' as met): more are matched unmemoized. */
const maxMemoMaps = 8;

/**
 * The memo tables of all evaluations: table i serves an evaluation's i-th property map, whatever the definitions
 * (at least their propertySlots long). An entry is `generation · 8 + code` (memoCode), the generation being the
 * evaluation's (nextMemoGeneration): a table is never cleared between evaluations, and evaluations alive together
 * (not one after the other) only overwrite each other's entries, never read them. A table of its own per map and
 * evaluation (an Int8Array) cost ~1.5k instructions a request over HTTP at 30 flags.
 */
const memoPool: Int32Array[] = [];
let memoGeneration = 0;
/** Generations run 1…maxMemoGeneration (the entry stays below 2^31), then every table is cleared and they restart. */
const maxMemoGeneration = 2 ** 28 - 1;

function nextMemoGeneration(): number {
  if (memoGeneration === maxMemoGeneration) {
    for (const table of memoPool) table.fill(0);
    memoGeneration = 0;
  }
  return ++memoGeneration;
}

/** The shared table for an evaluation's `index`-th property map, with at least `slots` entries. */
function memoTable(index: number, slots: number): Int32Array {
  let table = memoPool[index];
  if (table === undefined || table.length < slots) {
    table = new Int32Array(Math.max(slots, 64));
    memoPool[index] = table;
  }
  return table;
}

/** For tests: the generation the next evaluation gets is `next`; `clear`: the tables cleared first. */
export function setMemoGenerationForTest(next: number, clear: boolean): void {
  if (clear) for (const table of memoPool) table.fill(0);
  memoGeneration = next - 1;
}

/**
 * Evaluation of one set of definitions for one context; dependency results are shared across its flags.
 * `serves`: the flags the answer may use (upstream's runtime and context filters); a dependency on another
 * leaves its dependant undecided here, as upstream evaluates it without that flag.
 */
export function createEvaluation(defs: CompiledDefinitions, ctx: EvalContext, serves?: (flag: CompiledFlag) => boolean) {
  const dependencyValues = new Map<string, boolean | string>();
  /** Dependencies decided only after an unresolved condition (see FlagOutcome's `partial`). */
  const partialDependencies = new Set<string>();
  /**
   * Keys of the flags being evaluated, outermost first (a stack of `depth`; entries past it are stale): meeting one
   * again is a dependency cycle. Indexed stores, not push: TurboFan left each push a call to the builtin (~115
   * instructions a flag).
   */
  const inProgress: string[] = [];
  let depth = 0;
  let reason: ReasonCode = 'no_group_type';
  let conditionIndex: number | null = null;
  let partial = false;

  const note = (code: ReasonCode, index: number | null): void => {
    if (reasonScore(code) >= reasonScore(reason)) {
      reason = code;
      conditionIndex = index;
    }
  };

  // The row of bucketing hashes kept for the value hashed with last (hash-memo.ts; a request's person flags use one,
  // its group flags another): each (flag, value, salt) is hashed once for as long as the snapshot's memo keeps it.
  let memoValue: string | null = null;
  let memo: Float64Array = noHashes;
  let memoBase = 0;
  let memoTenancy = 0;

  /**
   * The bucketing hash of `flag` (flagHashOf) from the memo; when it is not there yet, computed with those of the
   * next flags that may need one (hash-peers.ts), all kept.
   */
  function bucketHash(flag: CompiledFlag, bucketingValue: string, variant: boolean): number {
    // (Another evaluation may have handed the row on since: see BucketHashMemo.)
    if (memoValue !== bucketingValue || memo[memoBase] !== memoTenancy) {
      const memos = defs.bucketHashes;
      memos.find(bucketingValue);
      memo = memos.page;
      memoBase = memos.base;
      memoValue = bucketingValue;
      memoTenancy = memo[memoBase] as number;
    }
    const row = memoBase + (variant ? 2 : 1);
    const at = row + 2 * flag.hashSlot;
    const kept = memo[at] as number;
    if (kept === kept) return kept; // not NaN
    const peers = variant ? flag.variantPeers : flag.rolloutPeers;
    const salt = variant ? 'variant' : '';
    if (peers.length > 0) {
      const heads = peerHeads[peers.length] as number[];
      for (let k = 0; k < peers.length; k++) heads[k] = defs.hashHeadAt[peers[k] as number] as number;
      if (flagHashesOf(defs.hashHeads, flag.hashHead, heads, bucketingValue, salt, batchHashes)) {
        // A peer's lane is NaN when its input is too long for it: it stays not computed.
        for (let k = 0; k < peers.length; k++) memo[row + 2 * (peers[k] as number)] = batchHashes[k + 1] as number;
        const h = batchHashes[0] as number;
        if (h === h) return (memo[at] = h);
      }
    }
    return (memo[at] = flagHashOf(flag.key, defs.hashHeads, flag.hashHead, bucketingValue, salt));
  }

  /** The SDK's rollout check (`hash > rollout / 100`). A rollout of 100 or more never excludes (the hash is at most 1). */
  function outOfRollout(flag: CompiledFlag, bucketingValue: string, rollout: number | null | undefined): boolean {
    if (rollout == null || rollout >= 100) return false;
    return bucketHash(flag, bucketingValue, false) > rollout / 100.0;
  }

  // The holdout hash does not depend on the flag: one per bucketing value.
  let holdoutValue: string | null = null;
  let holdoutHashed = 0;
  function inHoldout(bucketingValue: string, fraction: number): boolean {
    if (fraction === 1) return true;
    if (holdoutValue !== bucketingValue) {
      holdoutHashed = holdoutHash(bucketingValue);
      holdoutValue = bucketingValue;
    }
    return holdoutHashed <= fraction;
  }

  function variantFor(flag: CompiledFlag, bucketingValue: string): string | true {
    if (flag.variants.length === 0) return true;
    const h = bucketHash(flag, bucketingValue, true);
    // As the SDK: a variant whose key is empty (falsy) reads as plain true.
    for (const v of flag.variants) if (h >= v.min && h < v.max) return v.key || true;
    return true;
  }

  function dependency(ref: DependencyRef): boolean {
    const chain = ref.chain;
    if (chain === null || chain.length === 0) throw new Inconclusive('unsupported_definition');
    // dependencyValues only holds keys of byKey, so a key byKey lacks is one neither holds.
    for (const key of chain) if (!defs.byKey.has(key)) throw new Inconclusive('unsupported_definition');
    if (serves !== undefined) {
      for (const key of chain) {
        const dep = defs.byKey.get(key);
        if (dep !== undefined && !serves(dep)) throw new ServerOnly('unresolved_dependency');
      }
    }
    for (const key of chain) {
      if (dependencyValues.get(key) !== undefined) {
        if (partialDependencies.has(key)) partial = true;
        continue;
      }
      const dep = defs.byKey.get(key);
      if (dep === undefined || !dep.active) {
        dependencyValues.set(key, false);
        continue;
      }
      // A cycle (the chain leads back to a flag being evaluated): the whole flag is undecidable here.
      for (let i = 0; i < depth; i++) if (inProgress[i] === key) throw new ServerOnly('unresolved_dependency');
      const outerPartial = partial;
      partial = false;
      inProgress[depth++] = key;
      let failed: Inconclusive | null = null; // as the catch below for a thrown Inconclusive, one throw fewer
      try {
        const value = flagValue(dep, true);
        if (value instanceof Inconclusive) failed = value;
        else {
          dependencyValues.set(key, value);
          if (partial) partialDependencies.add(key);
        }
      } catch (error) {
        if (error instanceof ServerOnly) throw new ServerOnly('unresolved_dependency');
        throw new Inconclusive('unresolved_dependency', error instanceof Inconclusive && error.regex);
      } finally {
        depth--;
        partial ||= outerPartial;
      }
      if (failed !== null) throw new Inconclusive('unresolved_dependency', failed.regex);
    }
    const actual = dependencyValues.get(ref.key);
    const expected = ref.expected;
    if (typeof expected === 'boolean') return expected === actual || (expected && typeof actual === 'string' && actual !== '');
    if (typeof expected === 'string') return actual === expected;
    return false;
  }

  // Each distinct property filter (one slot per filter, compile.ts) is matched once per property map: its answer
  // depends only on the filter, the map and nowMs, all fixed for this evaluation. The memo holds the whole verdict,
  // inconclusive kinds included, so a repeated filter gives what its matcher gave.
  // The tables are shared by all evaluations (memoPool): an entry is this evaluation's when it holds its stamp.
  const memoMaps: Array<Readonly<Record<string, unknown>>> = [];
  const memoTables: Int32Array[] = [];
  const stamp = nextMemoGeneration() * 8;
  function propertyMatch(filter: PropertyRef, properties: Readonly<Record<string, unknown>>): PropertyMatch {
    let table: Int32Array | undefined;
    for (let i = 0; i < memoMaps.length; i++) {
      if (memoMaps[i] === properties) {
        table = memoTables[i];
        break;
      }
    }
    if (table === undefined) {
      if (memoMaps.length === maxMemoMaps) return filter.match(properties, ctx.nowMs);
      table = memoTable(memoMaps.length, defs.propertySlots);
      memoMaps.push(properties);
      memoTables.push(table);
    }
    // Another evaluation's entry (or 0) is below the stamp or at least 8 above it: only this one's is 1…5 above.
    const known = (table[filter.slot] as number) - stamp;
    if (known > 0 && known < 8) return memoVerdicts[known] as PropertyMatch;
    const verdict = filter.match(properties, ctx.nowMs);
    table[filter.slot] = stamp + memoCode(verdict);
    return verdict;
  }

  // Static cohorts hold persons: only a condition matched against the person's properties can use them.
  const staticMember = (id: string, properties: Readonly<Record<string, unknown>>): boolean | undefined => {
    const cohort = properties === ctx.personProperties ? ctx.staticCohorts?.get(id) : undefined;
    if (cohort === undefined) return undefined;
    return cohort.members.has(ctx.distinctId) ? true : cohort.truncated ? undefined : false;
  };
  const filterContext: FilterContext = { cohorts: defs.cohorts, propertyMatch, staticMember };

  /**
   * 'match' | 'no_match' | 'out_of_rollout_bound', an Inconclusive marker returned (not thrown: a throw costs V8 a
   * stack walk, ~1.6k instructions, and a flag with a non-portable regex took three per request), or throws the
   * other markers (the SDK's isConditionMatch).
   */
  function conditionMatch(flag: CompiledFlag, bucketingValue: string, condition: CompiledCondition, properties: Readonly<Record<string, unknown>>): 'match' | 'no_match' | 'out_of_rollout_bound' | Inconclusive {
    if (condition.filters.length > 0) {
      let unresolved: UnresolvedReason | undefined;
      let regex = false;
      let serverOnly: ServerOnly | undefined;
      for (const filter of condition.filters) {
        if (filter.kind === 'broken') throw new Broken();
        if (filter.kind === 'property') {
          // matchConditionFilter's property case and the catch below for its inconclusiveFor marker, without the throw.
          const verdict = propertyMatch(filter, properties);
          if (verdict === true) continue;
          if (verdict === false) return 'no_match';
          if (verdict === 'inconclusive') {
            unresolved = mergeReason(unresolved, 'missing_context');
          } else {
            regex ||= verdict === 'inconclusive-regex';
            unresolved = mergeReason(unresolved, 'unsupported_definition');
          }
          continue;
        }
        let matches: boolean;
        try {
          matches = matchConditionFilter(filter, properties);
        } catch (error) {
          if (error instanceof Broken && unresolved !== undefined) break; // the SDK stops there
          if (error instanceof ServerOnly) {
            if (unresolved === undefined) serverOnly ??= error;
            unresolved = mergeReason(unresolved, error.reason);
            continue;
          }
          if (!(error instanceof Inconclusive)) throw error;
          regex ||= error.regex;
          unresolved = mergeReason(unresolved, error.reason);
          continue;
        }
        if (!matches) return 'no_match';
      }
      if (serverOnly) throw serverOnly;
      if (unresolved !== undefined) return new Inconclusive(unresolved, regex);
      if (condition.rollout == null) return 'match';
    }
    if (outOfRollout(flag, bucketingValue, condition.rollout)) return 'out_of_rollout_bound';
    return 'match';
  }

  function matchConditionFilter(filter: CompiledFilter, properties: Readonly<Record<string, unknown>>): boolean {
    if (filter.kind === 'cohort') return evaluateCohort(filter, properties, filterContext);
    // The flags service matches a condition's flag filter only with `flag_evaluates_to` (flag_matching_utils.rs,
    // match_flag_value_to_flag_filter): with any other operator it fails whatever the dependency's value, so that
    // value is not needed. posthog-node ignores the operator. (A cohort's flag filter is a property filter: compile.ts.)
    if (filter.kind === 'flag') return filter.evaluatesTo && dependency(filter);
    if (filter.kind === 'broken') throw new Broken();
    // A missing key is 'inconclusive-unsupported' for an operator the SDK does not support at all (it refuses those
    // first), else 'inconclusive' (missing context): the matcher's own answer.
    const verdict = propertyMatch(filter, properties);
    if (typeof verdict === 'boolean') return verdict;
    throw inconclusiveFor(verdict);
  }

  /** The SDK's matchFeatureFlagProperties: holdout, then conditions. Its Inconclusive marker is returned, not thrown. */
  function matchConditions(flag: CompiledFlag, bucketingValue: string, properties: Readonly<Record<string, unknown>>, quiet: boolean): boolean | string | Inconclusive {
    if (flag.holdout !== null && inHoldout(bucketingValue, flag.holdout.fraction)) {
      if (!quiet) note('holdout_condition_value', null);
      return flag.holdout.variant;
    }
    let unresolved: UnresolvedReason | undefined;
    let regexDeferred: Set<boolean | string> | null = null;
    let result: boolean | string | undefined;
    let skippedGroup = false;
    for (let i = 0; i < flag.conditions.length; i++) {
      const condition = flag.conditions[i] as CompiledCondition;
      let bucketing = bucketingValue;
      let effective = properties;
      const aggregation = condition.aggregation !== undefined ? condition.aggregation : flag.aggregation;
      try {
        if (aggregation !== flag.aggregation && aggregation != null) {
          const name = defs.groupTypeMapping[String(aggregation)];
          const key = name ? groupKeyOf(ctx.groups, name) : null;
          if (key === null) {
            skippedGroup = true;
            if (!quiet) note('no_group_type', i);
            continue;
          }
          const groupProps = ctx.groupProperties[name as string];
          if (groupProps === undefined) {
            unresolved = mergeReason(unresolved, 'missing_context');
            continue;
          }
          effective = groupProps;
          bucketing = key;
        }
        const outcome = conditionMatch(flag, bucketing, condition, effective);
        if (outcome instanceof Inconclusive) {
          // As the catch below for a thrown Inconclusive.
          unresolved = mergeReason(unresolved, outcome.reason);
          if (outcome.regex) {
            regexDeferred ??= new Set();
            const excluded = flag.earlyExit && outOfRollout(flag, bucketing, condition.rollout);
            regexDeferred.add(excluded ? false : (condition.variant ?? variantFor(flag, bucketing)));
          }
          continue;
        }
        if (outcome === 'match') {
          result = condition.variant ?? variantFor(flag, bucketing);
          if (!quiet) note('condition_match', i);
          break;
        }
        if (!quiet) note(outcome === 'no_match' ? 'no_condition_match' : 'out_of_rollout_bound', i);
        if (flag.earlyExit && outcome === 'out_of_rollout_bound') {
          if (unresolved !== undefined) break;
          return false;
        }
      } catch (error) {
        if (error instanceof ServerOnly) throw new ServerOnly(mergeReason(mergeReason(unresolved, error.reason), flag.definitionReason ?? error.reason));
        if (!(error instanceof Inconclusive)) throw error;
        const inconclusive = error;
        unresolved = mergeReason(unresolved, inconclusive.reason);
        if (inconclusive.regex) {
          regexDeferred ??= new Set();
          const excluded = flag.earlyExit && outOfRollout(flag, bucketing, condition.rollout);
          regexDeferred.add(excluded ? false : (condition.variant ?? variantFor(flag, bucketing)));
        }
      }
    }
    if (result !== undefined && !(regexDeferred !== null && [...regexDeferred].some((v) => v !== result))) {
      if (unresolved !== undefined) partial = true;
      return result;
    }
    if (unresolved !== undefined) return new Inconclusive(unresolved, regexDeferred !== null);
    // Person conditions failed while a group condition went unevaluated: upstream says so in the description.
    if (!quiet && skippedGroup && reason === 'no_condition_match') reason = 'no_condition_match_groups_not_evaluated';
    return false;
  }

  /**
   * The SDK's computeFlagValueLocally. `quiet`: a dependency, whose reasons are not the flag's. An Inconclusive
   * marker from the conditions is returned; the other inconclusive cases throw theirs.
   */
  function flagValue(flag: CompiledFlag, quiet: boolean): boolean | string | Inconclusive {
    if (!flag.active) {
      if (!quiet) {
        reason = 'flag_disabled'; // whatever came before: the lowest score, so not through note()
        conditionIndex = null;
      }
      return false;
    }
    // Upstream answers it missing_dependency before anything else, or evaluates it normally (missing-dependencies.ts).
    if (flag.missingDependency) throw new ServerOnly(flag.definitionReason ?? 'unresolved_dependency');
    // Early-access enrolment comes before everything else upstream evaluates (and is person-level, group flags too).
    const enrolled = flag.enrollmentKey === null ? undefined : enrollmentOf(ctx.personProperties, flag.enrollmentKey);
    // A given enrolment hashes nothing: decided as a hash-independent continuity flag is (continuity.ts).
    if (flag.continuity && !(ctx.decideContinuity === true && (hashIndependent(flag) || (enrolled !== undefined && enrolled !== null)))) {
      throw new Inconclusive('experience_continuity');
    }
    if (enrolled !== undefined) {
      // Not given: upstream reads it from the person's stored properties, which only it holds.
      if (enrolled === null) throw new Inconclusive('missing_context');
      if (!quiet) {
        reason = 'super_condition_value'; // the highest score: it decides alone, at condition index 0 (upstream's)
        conditionIndex = 0;
      }
      return enrolled;
    }
    if (flag.aggregation != null) {
      const name = defs.groupTypeMapping[String(flag.aggregation)];
      if (!name) throw new Inconclusive('unsupported_definition');
      const key = groupKeyOf(ctx.groups, name);
      if (key === null) {
        // Upstream skips each condition in turn (each a no_group_type at its index): the last one's index stays.
        if (!quiet) note('no_group_type', flag.conditions.length > 0 ? flag.conditions.length - 1 : null);
        return false;
      }
      return matchConditions(flag, key, ctx.groupProperties[name] ?? noProperties, quiet);
    }
    let bucketing = ctx.distinctId;
    if (flag.deviceBucketing) {
      const device = ctx.personProperties.$device_id;
      if (device === undefined || device === null || device === '') throw new Inconclusive(flag.definitionReason ?? 'missing_context');
      bucketing = String(device);
    }
    return matchConditions(flag, bucketing, ctx.personProperties, quiet);
  }

  return {
    /** Evaluate one flag of the definitions. */
    evaluate(flag: CompiledFlag): FlagOutcome {
      reason = 'no_group_type';
      conditionIndex = null;
      partial = false;
      inProgress[depth++] = flag.key;
      try {
        const value = flagValue(flag, false);
        if (value instanceof Inconclusive) return { kind: 'inconclusive', reason: value.reason };
        // Its value as a dependency is the same (`quiet` changes only the reason): a flag depending on it reads it
        // here rather than evaluate it again, as it reads a dependency an earlier flag evaluated.
        if (flag.dependedOn && dependencyValues.get(flag.key) === undefined) {
          dependencyValues.set(flag.key, value);
          if (partial) partialDependencies.add(flag.key);
        }
        return { kind: 'value', value, reason, conditionIndex, partial };
      } catch (error) {
        if (error instanceof Inconclusive || error instanceof ServerOnly) return { kind: 'inconclusive', reason: error.reason };
        return { kind: 'inconclusive', reason: 'unsupported_definition' }; // Broken
      } finally {
        depth--;
      }
    },
  };
}
