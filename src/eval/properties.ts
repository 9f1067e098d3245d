/**
 * Property filters (person, group, … — not cohort or flag filters), matched exactly as posthog-node 5.70.0 does
 * through `matchFeatureFlagProperty` of `@posthog/core` 1.67.3. Filters are compiled once per snapshot; a
 * compiled matcher does no parsing of the filter and builds no regex.
 *
 * Common rules, before any operator: a key absent from the map (own properties only) is inconclusive for every
 * operator, `is_not_set` included; then `is_set` is true and `is_not_set` false; a present `undefined` value is
 * inconclusive (`unsupported_definition`); a `null` value is false for every operator except exact, is_not,
 * (not_)icontains, (not_)starts_with, (not_)ends_with and (not_)regex, which see it as null/"null". An absent or
 * empty operator is `exact`; an unknown one (is_date_exact, icontains_multi, between, …) is inconclusive once past those rules.
 * An inconclusive answer caused by the properties (absent key, an integer in `exact`, a bad date or version) has
 * the reason `missing_context`, unless the filter itself is one the SDK cannot use, which makes every
 * inconclusive answer `unsupported_definition` (the SDK re-checks the filter before reporting missing context).
 * Operators: exact.ts, text-operators.ts, regex.ts, numeric-operators.ts, dates.ts, semver.ts.
 */
import { compileDateOperator } from './dates.js';
import { compileExact } from './exact.js';
import { compileOrdering } from './numeric-operators.js';
import { compileRegexOperator } from './regex.js';
import { compileSemverOperator } from './semver.js';
import { compileTextOperator } from './text-operators.js';
import { unsupportedOperator, type CompiledOperator } from './value-matcher.js';

/**
 * A property filter as it appears in conditions and cohort leaves (type person/group/etc; cohort and flag types
 * are NOT handled here).
 */
export interface PropertyFilter {
  readonly key: string;
  readonly value: unknown;
  readonly operator?: string | null;
  readonly type?: string;
}

/**
 * true/false, or an inconclusive kind where the SDK throws InconclusiveMatchError (the caller must fall back to
 * the server). The kinds carry the SDK's reason: 'inconclusive' = `missing_context` (the properties lack or
 * garble what the filter needs); 'inconclusive-unsupported' = `unsupported_definition` (unknown operator, a
 * filter value the SDK cannot use, a present-but-undefined property); 'inconclusive-regex' =
 * `unsupported_definition` raised by a regex the SDK will not run locally (its error carries
 * `Symbol.for('posthog.requiresServerRegexEvaluation')`, which posthog-node's condition loop treats apart).
 */
export type PropertyMatch = boolean | 'inconclusive' | 'inconclusive-unsupported' | 'inconclusive-regex';

/** `propertyMatchingVersion` is the definitions' `property_matching_version`: only 2 selects explicit matching. */
export interface PropertyMatchOptions {
  readonly propertyMatchingVersion?: number | null;
}

/** Evaluates one filter against a property map; `nowMs` anchors relative dates. Never throws. */
export type PropertyMatcher = (properties: Readonly<Record<string, unknown>>, nowMs: number) => PropertyMatch;

/** Operators that still run on a null property value; the others answer false for null. */
const nullAccepting = new Set([
  'exact',
  'is_not',
  'icontains',
  'not_icontains',
  'starts_with',
  'not_starts_with',
  'ends_with',
  'not_ends_with',
  'regex',
  'not_regex',
]);

function compileOperator(operator: string, target: unknown, matchingVersion: number | null | undefined): CompiledOperator {
  switch (operator) {
    case 'exact':
      return compileExact(target, matchingVersion, false);
    case 'is_not':
      return compileExact(target, matchingVersion, true);
    case 'icontains':
    case 'not_icontains':
    case 'starts_with':
    case 'not_starts_with':
    case 'ends_with':
    case 'not_ends_with':
      return compileTextOperator(operator, target);
    case 'regex':
    case 'not_regex':
      return compileRegexOperator(target, operator === 'not_regex');
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return compileOrdering(operator, target);
    case 'is_date_before':
    case 'is_date_after':
      return compileDateOperator(operator === 'is_date_before', target);
    case 'semver_eq':
    case 'semver_neq':
    case 'semver_gt':
    case 'semver_gte':
    case 'semver_lt':
    case 'semver_lte':
    case 'semver_tilde':
    case 'semver_caret':
    case 'semver_wildcard':
      return compileSemverOperator(operator, target);
    default:
      return unsupportedOperator;
  }
}

function compileSafely(operator: string, target: unknown, matchingVersion: number | null | undefined): CompiledOperator {
  try {
    return compileOperator(operator, target, matchingVersion);
  } catch {
    // Only exotic non-JSON filter values get here (String() refusing them); the SDK then fails the flag with a
    // generic error, which its callers treat like an unresolved flag.
    return unsupportedOperator;
  }
}

/**
 * Compile once per snapshot: regexes built, filter-side dates/semvers/numbers parsed ahead. Never throws (a bad
 * filter compiles to a matcher giving the SDK's answer, e.g. false or 'inconclusive-unsupported'), and neither
 * does the matcher: a non-JSON value that makes the SDK fail with a generic error answers
 * 'inconclusive-unsupported'.
 */
export function compileProperty(filter: PropertyFilter, options?: PropertyMatchOptions): PropertyMatcher {
  const key = filter.key;
  const operator = filter.operator || 'exact';
  const hasOwn = Object.prototype.hasOwnProperty;
  if (operator === 'is_set' || operator === 'is_not_set') {
    const answer = operator === 'is_set';
    return (properties) => (hasOwn.call(properties, key) ? answer : 'inconclusive');
  }
  const { match, supported } = compileSafely(operator, filter.value, options?.propertyMatchingVersion);
  const nullIsFalse = !nullAccepting.has(operator);
  const contextInconclusive = supported ? 'inconclusive' : 'inconclusive-unsupported';
  return (properties, nowMs) => {
    if (!hasOwn.call(properties, key)) return contextInconclusive;
    const value = properties[key];
    if (value === undefined) return 'inconclusive-unsupported';
    if (value === null && nullIsFalse) return false;
    let result: PropertyMatch;
    try {
      result = match(value, nowMs);
    } catch {
      return 'inconclusive-unsupported';
    }
    return result === 'inconclusive' ? contextInconclusive : result;
  };
}
