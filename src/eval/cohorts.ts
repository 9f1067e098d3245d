/**
 * Cohort matching, as the SDK does it (`matchCohort` / `matchPropertyGroup` of posthog-node 5.70.0): a cohort id
 * missing from the definitions (static, deleted or excluded) needs the server, unless it is a static cohort whose
 * members the sidecar pulled; a group's type AND/OR (`property` is AND; anything else needs the server); nested groups
 * or leaves (decided by the first entry); leaves are properties or nested cohorts (with `not_in`), each with an
 * optional `negation`; the first decisive entry wins, an inconclusive one is remembered and makes the group
 * inconclusive when nothing decided it. Unlike the SDK, a flag filter in a cohort is a property filter, as upstream's
 * flags service matches it (compile.ts): its dependency is never evaluated.
 */
import type { CohortRef, CompiledFilter, CompiledGroup, PropertyRef } from './compile.js';
import { Broken, Inconclusive, ServerOnly, inconclusiveFor, mergeReason, type UnresolvedReason } from './outcomes.js';
import type { PropertyMatch } from './properties.js';

/** A static cohort's known members. `truncated`: an unlisted distinct_id may still be a member (the server decides). */
export interface StaticCohort {
  readonly members: ReadonlySet<string>;
  readonly truncated: boolean;
}

/** What cohort matching needs from the evaluation. */
export interface FilterContext {
  readonly cohorts: ReadonlyMap<string, CompiledGroup>;
  /** A property filter's answer for `properties` (the filter's matcher at the evaluation's time, or its memo). */
  readonly propertyMatch: (filter: PropertyRef, properties: Readonly<Record<string, unknown>>) => PropertyMatch;
  /**
   * Membership of a cohort the definitions lack, matched against `properties`: whether the caller is in it when
   * it is a static cohort whose members are known (static-cohorts.ts), else undefined (the server must decide).
   */
  readonly staticMember?: (id: string, properties: Readonly<Record<string, unknown>>) => boolean | undefined;
}

/** Deeper nesting than any real cohort: taken as a cycle, which needs the server. */
const maxDepth = 64;

/** Whether `properties` are in (or, for `not_in`, out of) the cohort; throws a marker when undecidable. */
export function evaluateCohort(ref: CohortRef, properties: Readonly<Record<string, unknown>>, context: FilterContext, depth = 0): boolean {
  const group = context.cohorts.get(ref.id);
  if (depth > maxDepth) throw new ServerOnly();
  const inCohort = group === undefined ? context.staticMember?.(ref.id, properties) : matchGroup(group, properties, context, depth + 1);
  if (inCohort === undefined) throw new ServerOnly();
  return ref.notIn ? !inCohort : inCohort;
}

function leafMatches(leaf: CompiledFilter, properties: Readonly<Record<string, unknown>>, context: FilterContext, depth: number): boolean {
  if (leaf.kind === 'cohort') return evaluateCohort(leaf, properties, context, depth);
  if (leaf.kind === 'broken' || leaf.kind === 'flag') throw new Broken(); // compile.ts makes no flag leaf in a cohort
  const verdict = context.propertyMatch(leaf, properties);
  if (typeof verdict === 'boolean') return verdict;
  throw inconclusiveFor(verdict);
}

function matchGroup(group: CompiledGroup, properties: Readonly<Record<string, unknown>>, context: FilterContext, depth: number): boolean {
  if (group.type === 'empty') return true;
  if (group.type === 'invalid') throw new ServerOnly();
  if (group.type === 'broken') throw new Broken();
  const isAnd = group.type === 'AND';
  const entries = group.groups ?? group.leaves ?? [];
  if (entries.length === 0) return isAnd;
  let unresolved: UnresolvedReason | undefined;
  let regex = false;
  if (group.groups !== null) {
    for (const nested of group.groups) {
      try {
        const matches = matchGroup(nested, properties, context, depth + 1);
        if (isAnd ? !matches : matches) return matches;
      } catch (error) {
        if (!(error instanceof Inconclusive)) throw error;
        unresolved = mergeReason(unresolved, error.reason);
        regex ||= error.regex;
      }
    }
  } else {
    for (const leaf of group.leaves ?? []) {
      try {
        const matches = leafMatches(leaf, properties, context, depth);
        // AND: a leaf that fails (after negation) decides false; OR: one that holds decides true.
        if (isAnd ? matches === leaf.negation : matches !== leaf.negation) return !isAnd;
      } catch (error) {
        if (!(error instanceof Inconclusive)) throw error;
        unresolved = mergeReason(unresolved, error.reason);
        regex ||= error.regex;
      }
    }
  }
  if (unresolved !== undefined) throw new Inconclusive(unresolved, regex);
  return isAnd;
}
