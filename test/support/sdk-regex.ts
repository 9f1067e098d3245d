/** The regex operators as posthog-node decides them, and as the sidecar does, in ValueMatch terms (the regex tests' two sides). */
import { InconclusiveMatchError, matchFeatureFlagProperty, type FeatureFlagProperty } from '@posthog/core';
import { compileRegexOperator } from '../../src/eval/regex.js';
import type { ValueMatch } from '../../src/eval/value-matcher.js';

const regexMarker = Symbol.for('posthog.requiresServerRegexEvaluation');

/** What posthog-node decides for `regex`. */
export function sdk(pattern: string, subject: string): ValueMatch {
  try {
    return matchFeatureFlagProperty({ key: 'k', type: 'person', operator: 'regex', value: pattern } as unknown as FeatureFlagProperty, { k: subject });
  } catch (error) {
    if (error instanceof InconclusiveMatchError && regexMarker in error) return 'inconclusive-regex';
    throw error;
  }
}

/** What the sidecar's matcher decides (`not_regex` with `negate`). */
export const ours = (pattern: string, subject: string, negate = false): ValueMatch => compileRegexOperator(pattern, negate).match(subject, 0);
