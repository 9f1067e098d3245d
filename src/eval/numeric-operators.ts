/**
 * `gt`, `gte`, `lt`, `lte`, as `@posthog/core` 1.67.3 decides them: each side is its number, or else
 * `parseFloat(String(side))` (lenient: "10abc" is 10, " 7" is 7); when both are finite the numbers are compared,
 * otherwise the two `String()` forms are compared by UTF-16 code units ("100" < "30"). Never inconclusive.
 */
import { supported, type CompiledOperator, type ValueMatcher } from './value-matcher.js';

/** The ordering operators handled here; the property value is on the left (`gt`: property > filter). */
export type OrderingOperator = 'gt' | 'gte' | 'lt' | 'lte';

function ordered<T extends number | string>(operator: OrderingOperator, left: T, right: T): boolean {
  switch (operator) {
    case 'gt':
      return left > right;
    case 'gte':
      return left >= right;
    case 'lt':
      return left < right;
    case 'lte':
      return left <= right;
  }
}

/** Compiles one ordering operator against the filter value; may throw only where `String()` does (never for JSON). */
export function compileOrdering(operator: OrderingOperator, target: unknown): CompiledOperator {
  return supported(orderingMatcher(operator, target));
}

function orderingMatcher(operator: OrderingOperator, target: unknown): ValueMatcher {
  const targetText = String(target);
  const targetNumber = typeof target === 'number' ? target : parseFloat(targetText);
  if (!Number.isFinite(targetNumber)) {
    return (value) => ordered(operator, typeof value === 'string' ? value : String(value), targetText);
  }
  return (value) => {
    if (typeof value === 'number') {
      return Number.isFinite(value) ? ordered(operator, value, targetNumber) : ordered(operator, String(value), targetText);
    }
    const text = typeof value === 'string' ? value : String(value);
    const number = parseFloat(text);
    return Number.isFinite(number) ? ordered(operator, number, targetNumber) : ordered(operator, text, targetText);
  };
}
