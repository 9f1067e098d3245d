import { InconclusiveMatchError, matchFeatureFlagProperty, type FeatureFlagProperty } from '@posthog/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { compileProperty, type PropertyFilter, type PropertyMatch } from '../../src/eval/properties.js';
import {
  generatePropertyCases,
  knownOperators,
  otherOperators,
  productCases,
  valuePools,
  type PropertyCase,
} from '../support/property-cases.js';

const regexMarker = Symbol.for('posthog.requiresServerRegexEvaluation');
const nowMs = Date.UTC(2024, 2, 31, 10, 30, 0, 0);
const day = 86_400_000;

/**
 * The SDK's answer in PropertyMatch terms: InconclusiveMatchError → its reason (and regex marker); any other
 * error makes posthog-node drop the flag from local evaluation (reported through onError, then asked remotely),
 * which is unresolved too — counted separately so the test can show it never happens on these inputs.
 */
let otherErrors = 0;
function oracle(filter: PropertyFilter, properties: Record<string, unknown>, version?: number | null): PropertyMatch {
  try {
    const property = filter as unknown as FeatureFlagProperty;
    return matchFeatureFlagProperty(property, properties, { propertyMatchingVersion: version as number | undefined });
  } catch (error) {
    if (!(error instanceof InconclusiveMatchError)) {
      otherErrors++;
      return 'inconclusive-unsupported';
    }
    if (regexMarker in error) return 'inconclusive-regex';
    return error.reason === 'missing_context' ? 'inconclusive' : 'inconclusive-unsupported';
  }
}

function ours(filter: PropertyFilter, properties: Record<string, unknown>, version?: number | null): PropertyMatch {
  return compileProperty(filter, { propertyMatchingVersion: version })(properties, nowMs);
}

beforeAll(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(nowMs);
});
afterAll(() => {
  vi.useRealTimers();
});

type Row = [name: string, operator: string | null, filterValue: unknown, propertyValue: unknown, expected: PropertyMatch, version?: number];
const absent = Symbol('absent');
const iso = (ms: number): string => new Date(ms).toISOString();

const rows: Row[] = [
  // presence and null
  ['absent key, exact', 'exact', 'a', absent, 'inconclusive'],
  ['absent key, is_not_set', 'is_not_set', '', absent, 'inconclusive'],
  ['absent key, unknown operator', 'between', 1, absent, 'inconclusive-unsupported'],
  ['absent key, unusable semver filter', 'semver_eq', '01.2', absent, 'inconclusive-unsupported'],
  ['is_set on null', 'is_set', '', null, true],
  ['is_not_set on present', 'is_not_set', '', 'x', false],
  ['present undefined', 'exact', 'a', undefined, 'inconclusive-unsupported'],
  ['null with gt is false', 'gt', 1, null, false],
  ['null with an unknown operator is false', 'is_date_exact', '2024-01-01', null, false],
  ['unknown operator on a value', 'icontains_multi', ['a'], 'a', 'inconclusive-unsupported'],
  ['absent operator means exact', null, 'A', 'a', true],
  // exact / is_not
  ['exact "5" vs 5: integer text unknowable', 'exact', '5', 5, 'inconclusive'],
  ['exact "5" vs "5"', 'exact', '5', '5', true],
  ['exact "1.5" vs 1.5', 'exact', '1.5', 1.5, true],
  ['exact "[1,2]" vs [1,2]', 'exact', '[1,2]', [1, 2], 'inconclusive'],
  ['exact "[1.5,\\"a\\"]" vs [1.5,"a"]', 'exact', '[1.5,"a"]', [1.5, 'a'], true],
  ['exact object text, sorted keys', 'exact', '{"a":true,"b":"x"}', { b: 'x', a: true }, true],
  ['exact 5 (filter) is unsupported', 'exact', 5, '5', 'inconclusive-unsupported'],
  ['exact case-insensitive Unicode', 'exact', 'CAFÉ', 'café', true],
  // Lowercased, never case-folded, as the flags service (property_matching.rs match_property, to_lowercase);
  // posthog-python's casefold() matches these three.
  ['exact ["Straße"] vs "straße"', 'exact', ['Straße'], 'straße', true],
  ['exact ["Straße"] vs "strasse": no case folding', 'exact', ['Straße'], 'strasse', false],
  ['exact ["ſun"] (long s) vs "sun": no case folding', 'exact', ['ſun'], 'sun', false],
  ['is_not "Straße" vs "STRASSE": no case folding', 'is_not', 'Straße', 'STRASSE', true],
  ['exact null vs "null"', 'exact', 'null', null, true],
  ['exact legacy false vs "banana"', 'exact', false, 'banana', true],
  ['exact v2 false vs "banana"', 'exact', false, 'banana', false, 2],
  ['exact legacy ["true","false"] vs "true"', 'exact', ['true', 'false'], 'true', false],
  ['exact v2 ["true","false"] vs "true"', 'exact', ['true', 'false'], 'true', true, 2],
  ['exact legacy true vs 1', 'exact', true, 1, false],
  ['exact v2 "true" vs 1 (number never boolean)', 'exact', 'true', 1, false, 2],
  ['exact v2 true vs "TRUE"', 'exact', true, 'TRUE', true, 2],
  ['exact [] vs [] (truthiness)', 'exact', [], [], true, 2],
  ['exact array membership', 'exact', ['x', 'B'], 'b', true],
  ['exact array: an earlier item matches before an integer', 'exact', ['b', 5], 'b', true],
  ['exact array: a miss reaches the integer', 'exact', ['b', 5], 'c', 'inconclusive-unsupported'],
  ['exact lone surrogate', 'exact', 'a', '\ud800', 'inconclusive'],
  ['is_not "5" vs 5', 'is_not', '5', 5, 'inconclusive'],
  ['is_not "a" vs "b"', 'is_not', 'a', 'b', true],
  // text
  ['icontains "ul" vs null', 'icontains', 'ul', null, true],
  ['icontains is ASCII-only case folding', 'icontains', 'É', 'café', false],
  ['not_icontains', 'not_icontains', 'X', 'abc', true],
  ['starts_with number', 'starts_with', 1, 15, true],
  ['ends_with array text', 'ends_with', '2', [1, 2], true],
  // regex
  ['regex "^caf" vs "café": non-ASCII subject', 'regex', '^caf', 'café', 'inconclusive-regex'],
  ['regex portable', 'regex', '^\\d{2,3}$', '123', true],
  ['regex lookahead is not portable', 'regex', '(?=a)', 'a', 'inconclusive-regex'],
  ['regex invalid pattern is false', 'regex', '(', 'a', false],
  ['not_regex invalid pattern is false too', 'not_regex', '(', 'a', false],
  ['regex empty pattern', 'regex', '', 'anything', true],
  ['regex carriage return in subject', 'regex', 'a', 'a\rb', 'inconclusive-regex'],
  ['regex on null', 'regex', '^nul', null, true],
  ['absent key with a non-portable regex', 'regex', '(?=a)', absent, 'inconclusive'],
  // ordering
  ['lt "30" vs "100": numbers', 'lt', '30', '100', false],
  ['gt "9" vs "10"', 'gt', '9', '10', true],
  ['gt lenient parseFloat', 'gt', 5, '10abc', true],
  ['gt string fallback', 'gt', 'b', 'abc', false],
  ['lt string fallback when the filter is not numeric', 'lt', 'z', 5, true],
  // dates
  ['is_date_before absolute', 'is_date_before', '2024-06-01', '2024-05-31T23:59:59Z', true],
  ['is_date_before number is epoch ms', 'is_date_before', '2024-06-01', 1717200000, true],
  ['is_date_after relative -7d', 'is_date_after', '-7d', iso(nowMs - 6 * day), true],
  ['is_date_after relative -7d at the threshold', 'is_date_after', '-7d', iso(nowMs - 7 * day), false],
  ['-2m from 31 March is 29 January (clamped through February)', 'is_date_before', '-2m', '2024-01-30T00:00:00Z', false],
  ['relative 10000d is not relative', 'is_date_before', '-10000d', '2024-01-01', 'inconclusive-unsupported'],
  ['boolean date filter', 'is_date_before', true, '2024-01-01', 'inconclusive-unsupported'],
  ['invalid property date', 'is_date_after', '2024-01-01', 'soon', 'inconclusive'],
  // semver
  ['semver leading zeros', 'semver_gte', '3.8.0', '3.08', 'inconclusive'],
  ['semver pre-release ignored', 'semver_eq', '1.2.3', '1.2.3-beta', true],
  ['semver v prefix and padding', 'semver_eq', 'v1.2', '1.2.0', true],
  ['semver tilde', 'semver_tilde', '1.2.3', '1.2.9', true],
  ['semver caret 0.x', 'semver_caret', '0.2.3', '0.3.0', false],
  ['semver wildcard', 'semver_wildcard', '1.2.*', '1.2.99', true],
  ['semver wildcard "*" is unusable', 'semver_wildcard', '*', '1.0.0', 'inconclusive-unsupported'],
  ['semver neq', 'semver_neq', '1.2.3', '1.2.4', true],
];

describe('compileProperty: operator table (each row also checked against the SDK)', () => {
  it.each(rows)('%s', (_name, operator, filterValue, propertyValue, expected, version) => {
    const filter: PropertyFilter = { key: 'k', value: filterValue, operator };
    const properties: Record<string, unknown> = propertyValue === absent ? { other: 1 } : { k: propertyValue };
    expect(ours(filter, properties, version)).toBe(expected);
    expect(oracle(filter, properties, version)).toBe(expected);
  });
});

interface Tally {
  readonly cases: number;
  readonly mismatches: string[];
  readonly outcomes: Map<PropertyMatch, number>;
  readonly operators: Set<unknown>;
}

function differential(cases: readonly PropertyCase[], at: number): Tally {
  const tally: Tally = { cases: cases.length, mismatches: [], outcomes: new Map(), operators: new Set() };
  for (const { filter, properties, version } of cases) {
    const actual = compileProperty(filter, { propertyMatchingVersion: version })(properties, at);
    const expected = oracle(filter, properties, version);
    tally.operators.add(filter.operator);
    tally.outcomes.set(expected, (tally.outcomes.get(expected) ?? 0) + 1);
    if (actual !== expected && tally.mismatches.length < 20) {
      tally.mismatches.push(`${JSON.stringify({ filter, properties, version })} → ours ${String(actual)}, SDK ${String(expected)}`);
    }
  }
  return tally;
}

const semverOperators = knownOperators.filter((o) => o.startsWith('semver_'));
const textOperators = ['icontains', 'not_icontains', 'starts_with', 'not_starts_with', 'ends_with', 'not_ends_with'];

describe('compileProperty: differential against @posthog/core matchFeatureFlagProperty', () => {
  const pools = valuePools(nowMs);

  it('agrees on 20 000 random cases (every operator, missing keys, null/undefined, all matching versions)', () => {
    otherErrors = 0;
    const tally = differential(generatePropertyCases(20_000, 20241112, nowMs), nowMs);
    expect(tally.mismatches).toEqual([]);
    expect(otherErrors).toBe(0);
    for (const operator of [...knownOperators, ...otherOperators]) expect(tally.operators.has(operator)).toBe(true);
    for (const outcome of [true, false, 'inconclusive', 'inconclusive-unsupported', 'inconclusive-regex'] as const) {
      expect(tally.outcomes.get(outcome) ?? 0).toBeGreaterThan(200);
    }
  });

  it.each([
    ['exact/is_not: every value × every value × versions', ['exact', 'is_not'], pools.universal, pools.universal, [undefined, 1, 2]],
    ['text operators: scalars × scalars', textOperators, pools.scalars, pools.scalars, [undefined]],
    ['ordering: scalars × scalars', ['gt', 'gte', 'lt', 'lte'], pools.scalars, pools.scalars, [undefined]],
    ['regex: every pattern × every subject', ['regex', 'not_regex'], pools.patterns, pools.regexSubjects, [undefined]],
    ['regex: escapes and characters', ['regex', 'not_regex'], pools.escapePatterns, ['a', '=', 'x', 'A=', '[', '\\', ''], [undefined]],
    ['semver: every version × every version', semverOperators, pools.semvers, pools.semvers, [undefined]],
    ['dates: every filter × every value', ['is_date_before', 'is_date_after'], pools.dateFilters, pools.dateValues, [undefined]],
  ] as const)('agrees on the product %s', (_name, operators, filterValues, propertyValues, versions) => {
    otherErrors = 0;
    const tally = differential(productCases(operators, filterValues, propertyValues, versions), nowMs);
    expect(tally.mismatches).toEqual([]);
    expect(otherErrors).toBe(0);
  });

  it.each([Date.UTC(2024, 1, 29, 23, 59, 59, 999), Date.UTC(2025, 4, 31, 0, 0, 0, 0), Date.UTC(2023, 11, 31, 12), Date.UTC(2025, 2, 29, 6)])(
    'agrees on relative dates with "now" at %d (leap day, month ends)',
    (anchor) => {
      vi.setSystemTime(anchor);
      const anchored = valuePools(anchor);
      const cases = productCases(['is_date_before', 'is_date_after'], anchored.relativeDates, anchored.dateValues);
      const tally = differential(cases, anchor);
      vi.setSystemTime(nowMs);
      expect(tally.mismatches).toEqual([]);
    },
  );

  it('never throws, even on values JSON cannot carry', () => {
    const odd: unknown[] = [Symbol('s'), 10n, () => 1, Object.create(null) as object, new Date(0), new Map()];
    for (const value of odd) {
      for (const operator of knownOperators) {
        const matcher = compileProperty({ key: 'k', value, operator });
        expect(() => matcher({ k: value }, nowMs)).not.toThrow();
        expect(() => compileProperty({ key: 'k', value: 'a', operator })({ k: value }, nowMs)).not.toThrow();
      }
    }
  });
});
