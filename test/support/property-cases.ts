/**
 * Deterministic (filter, properties) pairs for differential tests of property matching against the SDK: every
 * operator (and unknown ones), values of every JSON type plus JS-only oddities (NaN, lone surrogates,
 * undefined), numeric strings, boolean-like strings, absolute and relative dates around the relative-date
 * thresholds of `nowMs`, semvers with pre-releases and leading zeros, portable and non-portable regexes,
 * missing keys and all property_matching_version values. Same seed and nowMs, same cases.
 */
import type { PropertyFilter } from '../../src/eval/properties.js';

/** One generated case. */
export interface PropertyCase {
  readonly filter: PropertyFilter;
  readonly properties: Record<string, unknown>;
  readonly version: number | null | undefined;
}

/** A seeded PRNG (mulberry32): values in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every operator the SDK knows for property filters. */
export const knownOperators = [
  'exact', 'is_not', 'is_set', 'is_not_set', 'icontains', 'not_icontains', 'starts_with', 'not_starts_with',
  'ends_with', 'not_ends_with', 'regex', 'not_regex', 'gt', 'gte', 'lt', 'lte', 'is_date_before', 'is_date_after',
  'semver_eq', 'semver_neq', 'semver_gt', 'semver_gte', 'semver_lt', 'semver_lte', 'semver_tilde', 'semver_caret',
  'semver_wildcard',
] as const;

/** Operators the SDK does not evaluate locally, plus absent/empty ones (which mean `exact`). */
export const otherOperators = [
  'is_date_exact', 'icontains_multi', 'not_icontains_multi', 'between', 'not_between', 'in', 'not_in',
  'flag_evaluates_to', 'EXACT', 'bogus', '', null, undefined,
] as const;

const scalars: unknown[] = [
  'a', 'A', 'abc', 'ABC', 'Ul', 'null', 'NULL', 'true', 'TRUE', 'True', 'false', 'FALSE', 'banana', '5', '5.0', '1.5',
  '-3', '10', '9', '100', '30', '10abc', ' 7', '1e3', 'Infinity', 'NaN', '', ' ', 'café', 'CAFÉ', 'İstanbul', 'ß',
  '\u212a', '\ud800', 'x\udc00', '😀', '"q"', '[1,2]', '{"a":1}', 'a,b', '{"\uffff":1.5,"😀":1.5}', '{"😀":1.5,"\uffff":1.5}', 0, -0, 5, -3, 1.5, 0.1, 10, 9, 100, 30,
  1e21, 1.5e-7, -2.5, NaN, Infinity, true, false, null,
];
const arrays: unknown[] = [
  [], [true], ['true', 'FALSE'], [false, 'false'], [1, 2], [1.5, 'a'], ['a', 'b'], ['A'], [null], [[1.5]], ['x', 5],
  [5, 'x'], [true, 'banana'], ['5', '1.5'], ['ABC', 'café'], [1.5], ['\ud800'],
];
const objects: unknown[] = [{}, { a: 1.5 }, { b: 'x', a: true }, { é: 1.5, z: null, Z: 'q' }, { a: 1 }, { a: { c: [1.5] } }, { '😀': 1.5, '\uffff': 1.5 }];
const semvers: unknown[] = [
  '1.2.3', 'v1.2.3', 'V1.2.3', ' 1.2.3 ', '1.2', '1', '1.2.3-beta', '1.2.3+build', '1.2.3-beta+b', '01.2.3', '1.02.3',
  '1.2.03', '1..3', '.1.2', '1.2.3.4', '1.2.3.x', '0.0.1', '0.3.1', '0.0.0', '2.0.0', '1.3.0', '1.2.4', '1.1.9', '0.2.9',
  '1.*', '1.2.*', '*', '1.x', '1.2.x', '1.2.3.*', '', 'v', 'vv1', 'x.y.z', '1.2.3-', '-1.2.3', 10, 1.2, 1.25,
  '123456789012345678901.0.0', '1 .2', '3.08', '3.8.0', '0', '00', '1.0.0-rc.1', '2', '1.*.*', '1.**', '1*', '1.2*', '0*', 'v2.*',
];
const patterns: unknown[] = [
  '', 'abc', '^a', 'a$', '^caf', 'ul', '[a-z]+', '\\d+', '^\\d{2,3}$', '(foo|bar)', '(?:ab)+', '(?=a)', '(?<n>a)',
  '(?i)abc', '\\bfoo', '[\\b]', 'a*+', 'a++', 'a?+', 'a{2}+', 'a{2}{3}', 'a{', 'a{1,', '{1}', 'a|{1}', '({1})',
  'a{99999999999}', '^*', '$+', '()*', '(?:)*', '(', '[', '[]', '[^]', '[]a]', '[a&&b]', '[a--b]', '[a~~b]', '[[a]]',
  '\\1', '\\x41', '\\x4', '\\u0041', '\\p{L}', '\\<', '\\_', '[\\_]', '[\\-]', 'é', '\\', 'a\\', '.*', '^$', 'a.c',
  'A', '\\W+', '\\s', '\\.', '[^abc]', 'x{2,1}', '*', '+a', '(a)(b)\\2', 'a{,3}', '[\\d-z]', '[a-\\d]', 'a{1,2}?',
  '^(a+)+$', '\\x4g', 'true', '5', 'nul+', '[\\]]', '\\/', '\\ ', '\\~', 'a{3,}', '(?:', '(?!x)', 'a|', '|a',
];

/** `\c` and `[\c]` for every printable ASCII character c: which escapes the SDK considers portable. */
const escapePatterns: unknown[] = Array.from({ length: 95 }, (_, i) => String.fromCharCode(0x20 + i)).flatMap((c) => [`\\${c}`, `[\\${c}]`, `a${c}`]);
const regexSubjects: unknown[] = [...scalars, 'a\rb', 'a\nb', 'foo bar', 'aaaaaaaaaaaaaaaab', 'A1', 'x{1}', '[a]'];
const hour = 3_600_000;
const day = 24 * hour;
const relativeDates = [
  '-7d', '7d', '-1h', '-24h', '-2w', '-1m', '-2m', '-3m', '-13m', '-1y', '-4y', '-0d', '-0m', '-9999d', '-9999m',
  '-10000d', '-7x', '-7D', '-1mo', '+7d', '-01d', '-0y', '-120m', '-11m', '-25m',
];

/** Instants near where relative filters put their threshold at `nowMs`, as ISO strings and epoch ms. */
function datesAround(nowMs: number): unknown[] {
  const monthBack = (n: number): number => {
    const d = new Date(nowMs);
    const target = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - n, 1);
    const last = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - n + 1, 0)).getUTCDate();
    return target + (Math.min(d.getUTCDate(), last) - 1) * day + (nowMs % day);
  };
  const anchors = [nowMs, nowMs - hour, nowMs - 7 * day, nowMs - 14 * day];
  for (const n of [1, 2, 3, 11, 12, 13, 25, 48]) anchors.push(monthBack(n));
  const out: unknown[] = [];
  for (const a of anchors) {
    for (const delta of [-3 * day, -2 * day, -day, -1, 0, 1, day]) out.push(new Date(a + delta).toISOString(), a + delta);
  }
  return out;
}

const fixedDates: unknown[] = [
  '2024-06-01', '2024-06-01T12:00:00Z', '2024-06-01T12:00:00', '2024-06-01 12:00', 'June 1, 2024', '2024-13-01',
  'not a date', '1717200000', 1717200000, 1717200000000, '2020-01-01T00:00:00+02:00', '1999', 8.64e15, 8.64e15 + 1,
  -1.5, 1.9, '2030-01-01', true, null, [], {}, '',
];

/** The value pools the cases are drawn from. */
export function valuePools(nowMs: number) {
  const universal = [...scalars, ...arrays, ...objects];
  const dateFilters = [...fixedDates, ...relativeDates, ...datesAround(nowMs)];
  const dateValues = [...fixedDates, ...datesAround(nowMs)];
  return { scalars, universal, relativeDates, dateFilters, dateValues, semvers, patterns, regexSubjects, escapePatterns };
}

const families: readonly (readonly [weight: number, operators: readonly (string | null | undefined)[]])[] = [
  [3, ['exact', 'is_not', null, undefined, '']],
  [2, ['icontains', 'not_icontains', 'starts_with', 'not_starts_with', 'ends_with', 'not_ends_with']],
  [2, ['gt', 'gte', 'lt', 'lte']],
  [3, ['regex', 'not_regex']],
  [3, ['is_date_before', 'is_date_after', 'is_date_exact']],
  [3, knownOperators.filter((o) => o.startsWith('semver_'))],
  [0.5, ['is_set', 'is_not_set']],
  [1, otherOperators],
];

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)] as T;
}

function pickOperator(random: () => number): string | null | undefined {
  let roll = random() * families.reduce((sum, [weight]) => sum + weight, 0);
  for (const [weight, operators] of families) {
    roll -= weight;
    if (roll < 0) return pick(random, operators);
  }
  return 'exact';
}

/** `count` random cases from `seed`, with date values placed around the relative thresholds of `nowMs`. */
export function generatePropertyCases(count: number, seed: number, nowMs: number): PropertyCase[] {
  const random = seededRandom(seed);
  const p = valuePools(nowMs);
  const byFamily = (operator: unknown): { filter: unknown[]; value: unknown[] } => {
    if (operator === 'is_date_before' || operator === 'is_date_after' || operator === 'is_date_exact') {
      return { filter: p.dateFilters, value: p.dateValues };
    }
    if (typeof operator === 'string' && operator.startsWith('semver_')) return { filter: semvers, value: semvers };
    if (operator === 'regex' || operator === 'not_regex') return { filter: patterns, value: regexSubjects };
    return { filter: p.universal, value: p.universal };
  };
  const cases: PropertyCase[] = [];
  for (let i = 0; i < count; i++) {
    const operator = pickOperator(random);
    const pool = byFamily(operator);
    const value = random() < 0.85 ? pick(random, pool.filter) : pick(random, p.universal);
    const roll = random();
    const key = pick(random, ['k', 'email', '$browser']);
    const properties: Record<string, unknown> = { other: 'x' };
    if (roll < 0.06) properties[pick(random, ['constructor', 'toString', 'missing'])] = 'x';
    else if (roll < 0.08) properties[key] = undefined;
    else if (roll < 0.13) properties[key] = null;
    else properties[key] = random() < 0.85 ? pick(random, pool.value) : pick(random, p.universal);
    const filterKey = roll < 0.06 ? pick(random, ['constructor', 'toString', key]) : key;
    cases.push({
      filter: { key: filterKey, value, operator, type: 'person' },
      properties,
      version: pick(random, [undefined, null, 1, 2, 2, 3]),
    });
  }
  return cases;
}

/** Every filter value × every property value for the given operators (key always present). */
export function productCases(
  operators: readonly string[],
  filterValues: readonly unknown[],
  propertyValues: readonly unknown[],
  versions: readonly (number | undefined)[] = [undefined],
): PropertyCase[] {
  const cases: PropertyCase[] = [];
  for (const operator of operators) {
    for (const value of filterValues) {
      for (const propertyValue of propertyValues) {
        for (const version of versions) cases.push({ filter: { key: 'k', value, operator }, properties: { k: propertyValue }, version });
      }
    }
  }
  return cases;
}
