/**
 * `icontains`, `starts_with`, `ends_with` and their `not_` forms, as `@posthog/core` 1.67.3 decides them: both
 * sides go through `String()` (so null is "null", `[1,2]` is "1,2", `1.0` is "1") and only ASCII A–Z are
 * lowercased (the flags service does the same; "É" does not match "é").
 */
import { supported, type CompiledOperator, type ValueMatcher } from './value-matcher.js';

/** The text operators handled here. */
export type TextOperator =
  | 'icontains'
  | 'not_icontains'
  | 'starts_with'
  | 'not_starts_with'
  | 'ends_with'
  | 'not_ends_with';

function lowerAsciiRun(run: string): string {
  return run.toLowerCase();
}

/** `text` with ASCII capitals lowercased and every other character untouched. */
export function asciiLowercase(text: string): string {
  let hasCapital = false;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit > 0x7f) return text.replace(/[A-Z]+/g, lowerAsciiRun);
    if (unit >= 0x41 && unit <= 0x5a) hasCapital = true;
  }
  return hasCapital ? text.toLowerCase() : text;
}

/** Compiles one text operator against the filter value; may throw only where `String()` does (never for JSON). */
export function compileTextOperator(operator: TextOperator, target: unknown): CompiledOperator {
  return supported(textMatcher(operator, target));
}

function textMatcher(operator: TextOperator, target: unknown): ValueMatcher {
  const needle = asciiLowercase(String(target));
  const haystack = (value: unknown): string => asciiLowercase(typeof value === 'string' ? value : String(value));
  switch (operator) {
    case 'icontains':
      return (value) => haystack(value).includes(needle);
    case 'not_icontains':
      return (value) => !haystack(value).includes(needle);
    case 'starts_with':
      return (value) => haystack(value).startsWith(needle);
    case 'not_starts_with':
      return (value) => !haystack(value).startsWith(needle);
    case 'ends_with':
      return (value) => haystack(value).endsWith(needle);
    case 'not_ends_with':
      return (value) => !haystack(value).endsWith(needle);
  }
}
