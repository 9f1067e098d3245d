/**
 * The shape shared by the per-operator matchers of property filters. A value matcher runs after the common
 * checks (key present, value not undefined, null only for operators that accept it) and answers for one
 * property value. `'inconclusive-regex'` is an inconclusive answer caused by a regex the SDK refuses to run
 * locally; the flag evaluator needs to tell it apart (posthog-node defers such conditions instead of failing).
 */

/** A matcher's answer: a definitive boolean, or one of the two inconclusive kinds. */
export type ValueMatch = boolean | 'inconclusive' | 'inconclusive-regex';

/** Answers for one property value; `nowMs` anchors relative dates. May throw only on exotic non-JSON values. */
export type ValueMatcher = (value: unknown, nowMs: number) => ValueMatch;

/**
 * A compiled operator. `supported` mirrors the SDK's assertFeatureFlagFilterSupported: false when the filter
 * value is unusable whatever the properties hold, which turns every plain 'inconclusive' into the SDK's
 * `unsupported_definition` reason instead of `missing_context`.
 */
export interface CompiledOperator {
  readonly match: ValueMatcher;
  readonly supported: boolean;
}

/** A matcher for a filter the SDK cannot evaluate locally, whatever the property value. */
export const unsupportedOperator: CompiledOperator = { match: () => 'inconclusive', supported: false };

/** Wraps a matcher whose filter value the SDK always accepts. */
export function supported(match: ValueMatcher): CompiledOperator {
  return { match, supported: true };
}
