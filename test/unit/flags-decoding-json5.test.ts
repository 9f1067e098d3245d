/**
 * The flags service reads a JSON /flags body as JSON5 and turns NaN and ±Infinity into null
 * (PostHog/posthog rust/feature-flags/src/flags/flag_request.rs, FlagRequest::from_bytes, clean_non_finite_values).
 */
import { describe, expect, it } from 'vitest';
import { finiteOrNull } from '../../src/http/flags-decoding.js';

describe('finiteOrNull', () => {
  it.each([
    ['a finite number', 42.5, 42.5],
    ['NaN', Number.NaN, null],
    ['Infinity', Number.POSITIVE_INFINITY, null],
    ['-Infinity', Number.NEGATIVE_INFINITY, null],
    ['text that says NaN', 'NaN is not a number', 'NaN is not a number'],
    ['nested in objects and arrays', { a: { b: [1, Number.NaN, Number.POSITIVE_INFINITY, 3] }, c: 'x' }, { a: { b: [1, null, null, 3] }, c: 'x' }],
    ['null and booleans', [null, true, false], [null, true, false]],
  ])('%s', (_name, input, expected) => {
    expect(finiteOrNull(input)).toEqual(expected);
  });

  it('keeps a `__proto__` key a plain property', () => {
    const value = JSON.parse('{"__proto__": 1, "x": 2}') as Record<string, unknown>;
    Object.defineProperty(value, '__proto__', { value: Number.NaN, writable: true, enumerable: true, configurable: true });
    const out = finiteOrNull(value) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(out, '__proto__')?.value).toBeNull();
  });
});
