/**
 * `exact` and `is_not`, as `@posthog/core` 1.67.3 decides them (which in turn mirrors the flags service).
 *
 * Legacy matching (property_matching_version absent or anything but 2): a filter value that is a boolean, the
 * string "true"/"false" in any case, or an array of only those (an empty array included) compares truthiness:
 * `truthy(filter) === truthy(property)`, where only `true`, "true" (any case) and arrays of truthy items are
 * truthy — so `false` matches "banana". Otherwise the texts of both sides (see json-text.ts) are compared
 * case-insensitively (Unicode lowercase); an array filter matches when any item does.
 * Explicit matching (version 2): only an empty-array filter compares truthiness; a number never equals a
 * boolean-like filter; everything else compares texts.
 * A side whose text JavaScript cannot know (an integer, NaN, a lone surrogate…) makes the match inconclusive —
 * for an array filter only when no earlier item already matched. The filter is `supported` (in the SDK's
 * assertFeatureFlagFilterSupported sense) when every item (or the single value) has a text, whichever path is
 * taken: `5` and `[1, "a"]` are unsupported, `true` and `[]` are supported.
 */
import { exactText, isJsonRepresentable } from './json-text.js';
import type { CompiledOperator, ValueMatcher } from './value-matcher.js';

function lowerEquals(text: string, word: string): boolean {
  // Lowercasing never shortens a string and only U+0130 lengthens one (to "i\u0307"), so a length mismatch
  // can never lowercase to an ASCII word: the check only skips work.
  return text.length === word.length && text.toLowerCase() === word;
}

function isBooleanLike(value: unknown): boolean {
  if (typeof value === 'boolean') return true;
  if (typeof value === 'string') return lowerEquals(value, 'true') || lowerEquals(value, 'false');
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) if (!isBooleanLike(i in value ? value[i] : null)) return false;
  return true;
}

function isTruthy(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string') return lowerEquals(value, 'true');
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) if (!isTruthy(i in value ? value[i] : null)) return false;
  return true;
}

function compileTruthiness(target: unknown, negate: boolean): ValueMatcher {
  const wanted = isTruthy(target);
  return (value) => (isJsonRepresentable(value) ? (isTruthy(value) === wanted) !== negate : 'inconclusive');
}

function compileMembership(target: readonly unknown[], numbersNeverMatch: boolean, negate: boolean): ValueMatcher {
  const accepted = new Set<string>();
  let unknowableItem = false;
  for (let i = 0; i < target.length; i++) {
    if (!(i in target)) continue;
    const text = exactText(target[i]);
    if (text === undefined) {
      unknowableItem = true;
      break;
    }
    accepted.add(text.toLowerCase());
  }
  const miss = unknowableItem ? 'inconclusive' : negate;
  return (value) => {
    if (numbersNeverMatch && typeof value === 'number') return Number.isFinite(value) ? negate : 'inconclusive';
    const text = exactText(value);
    if (text === undefined) return 'inconclusive';
    return accepted.has(text.toLowerCase()) ? !negate : miss;
  };
}

function compileEquality(target: unknown, numbersNeverMatch: boolean, negate: boolean): ValueMatcher {
  const targetText = exactText(target);
  if (targetText === undefined) return () => 'inconclusive';
  const wanted = targetText.toLowerCase();
  return (value) => {
    if (numbersNeverMatch && typeof value === 'number') return Number.isFinite(value) ? negate : 'inconclusive';
    const text = exactText(value);
    if (text === undefined) return 'inconclusive';
    return (text.toLowerCase() === wanted) !== negate;
  };
}

function compileMatcher(target: unknown, explicit: boolean, negate: boolean): ValueMatcher {
  const isArray = Array.isArray(target);
  if ((!explicit && isBooleanLike(target)) || (isArray && target.length === 0)) return compileTruthiness(target, negate);
  const numbersNeverMatch = explicit && isBooleanLike(target);
  return isArray
    ? compileMembership(target as readonly unknown[], numbersNeverMatch, negate)
    : compileEquality(target, numbersNeverMatch, negate);
}

function everyItemHasText(target: unknown): boolean {
  if (!Array.isArray(target)) return exactText(target) !== undefined;
  for (const item of target as readonly unknown[]) if (exactText(item) === undefined) return false;
  return true;
}

/**
 * Compiles `exact` (negate = false) or `is_not` (negate = true) for one filter value. Never throws; `is_not` is
 * the negation of `exact`, and an inconclusive `exact` stays inconclusive.
 */
export function compileExact(target: unknown, matchingVersion: number | null | undefined, negate: boolean): CompiledOperator {
  return { match: compileMatcher(target, matchingVersion === 2, negate), supported: everyItemHasText(target) };
}
