/**
 * The regex operators on RE2 (issue 15 item 1): the JavaScript → RE2 translation of the SDK-portable subset, each
 * known pitfall between the two syntaxes as a table row, and a differential property test comparing the RE2-backed
 * matcher with `@posthog/core` 1.67.3 (JavaScript RegExp) on random portable patterns and short ASCII subjects.
 */
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { describe, expect, it } from 'vitest';
import { ours, sdk } from '../support/sdk-regex.js';
import { toRe2Syntax } from '../../src/eval/regex-translate.js';
import type { ValueMatch } from '../../src/eval/value-matcher.js';


describe('toRe2Syntax', () => {
  const rows: Array<[name: string, pattern: string, re2: string | null]> = [
    ['literals stay, punctuation becomes \\x{HH}', 'ab.c', 'ab[^\\x{a}\\x{d}]c'],
    ['^ and $ anchor at the ends of the input', '^a$', '\\Aa\\z'],
    ['\\s keeps \\v (RE2\'s \\s has no \\v)', '\\s', '[\\x{9}-\\x{d}\\x{20}]'],
    ['\\S excludes \\v', '\\S', '[^\\x{9}-\\x{d}\\x{20}]'],
    ['[\\b] is backspace', '[\\b]', '\\x{8}'],
    ['escaped space and punctuation are the characters', '\\ \\!\\_\\-', '\\x{20}\\x{21}\\x{5f}\\x{2d}'],
    ['\\xHH is the character', '\\x41\\x2e', 'A\\x{2e}'],
    ['groups become non-capturing', '(a|b)(?:c)', '(?:a|b)(?:c)'],
    ['counts lose leading zeros and lazy suffixes', 'a{007}?b{0,02}c{3,}?d*?', 'a{7}b{0,2}c{3,}d*'],
    ['a lone ] or } is a literal', ']}', '\\x{5d}\\x{7d}'],
    ['class ranges, a trailing or range-following dash', '[a-c-][-x]', '[\\x{2d}\\x{61}-\\x{63}][\\x{2d}\\x{78}]'],
    ['a class matching nothing', '[^\\s\\S]', '[^\\x{0}-\\x{10ffff}]'],
    ['a negated class is complemented over ASCII', '[^a]', '[^\\x{61}]'],
    ['a class matching every ASCII character (RE2 has no [^])', '[\\D\\d]', '[\\x{0}-\\x{10ffff}]'],
    ['counts up to 1000 run', 'a{1000}', 'a{1000}'],
    ['a count above 1000 cannot run', 'a{1001}', null],
    ['a maximum above 1000 cannot run', 'a{1,1001}', null],
    ['lookahead is not translated', '(?=a)', null],
    ['a back-reference is not translated', '(a)\\1', null],
    ['non-ASCII is not translated', 'é', null],
  ];
  it.each(rows)('%s: %s', (_name, pattern, re2) => {
    expect(toRe2Syntax(pattern)).toBe(re2);
  });
});

describe('regex on RE2 agrees with the SDK on each translation pitfall', () => {
  const rows: Array<[name: string, pattern: string, subject: string, expected: ValueMatch]> = [
    ['\\s matches \\v', '^\\s$', '\v', true],
    ['[\\s] matches \\v', '^[\\s]$', '\v', true],
    ['\\S does not match \\v', '\\S', '\v', false],
    ['[^\\s] does not match \\v', '[^\\s]', '\v', false],
    ['[\\S] inside a class', '^[a\\S]+$', 'a-b', true],
    ['[\\b] matches backspace', '^[\\b]$', '\b', true],
    ['[\\b] is not the letter b', '[\\b]', 'b', false],
    ['escaped space', '^a\\ b$', 'a b', true],
    ['escaped punctuation', '^\\!\\#\\%\\&\\,\\-\\:\\;\\=\\@\\_\\`\\~\\/$', '!#%&,-:;=@_`~/', true],
    ['. does not match \\n', '^a.b$', 'a\nb', false],
    ['. matches \\v and \\t', '^.\\t.$', '\v\t\f', true],
    ['$ is the end of the input, not before a final \\n', 'abc$', 'abc\n', false],
    ['^ is the start of the input, not of a line', '^b', 'a\nb', false],
    ['^ inside a group', '(^a|b)c', 'xac', false],
    ['\\xHH', '^\\x41[\\x42-\\x44]$', 'AC', true],
    ['\\w is ASCII', '^\\w+$', 'abc_09XYZ', true],
    ['\\W', '\\W', 'abc_09', false],
    ['\\d', '^\\d{3}$', '123', true],
    ['lazy quantifiers', '^a+?b{1,3}?c*?$', 'aabbc', true],
    ['a lone ] and }', '^a]}$', 'a]}', true],
    ['x{1} as text', 'x\\{1\\}', 'x{1}', true],
    ['count with leading zeros', '^a{002}$', 'aa', true],
    ['count of 1000', '^a{1000}$', 'a'.repeat(1000), true],
    ['count above 1000', 'a{1001}', 'a', 'inconclusive-regex'],
    ['empty alternative', 'a|', 'zzz', true],
    ['quantified anchor group', '^(^)*b', 'b', true],
    ['class matching nothing', '[^\\s\\S]', 'abc', false],
    ['range then dash', '^[a-c-]+$', 'b-a', true],
    ['dash then range', '^[-x-z]+$', '-y', true],
    ['a syntax error is false', 'a{2,1}', 'aa', false],
    ['an unclosed group is false', '(a', 'a', false],
    ['not portable: look-behind', '(?<=a)b', 'ab', 'inconclusive-regex'],
    ['not portable: back-reference', '(a)\\1', 'aa', 'inconclusive-regex'],
  ];
  it.each(rows)('%s: /%s/', (_name, pattern, subject, expected) => {
    expect(ours(pattern, subject)).toBe(expected);
    if (!/\{100[01]/.test(pattern)) expect(sdk(pattern, subject)).toBe(expected);
    // not_regex is the negation, inconclusive and syntax errors aside.
    const negated = ours(pattern, subject, true);
    expect(negated).toBe(typeof expected === 'boolean' && !/\{2,1\}|\(a$/.test(pattern) ? !expected : expected);
  });

  it('answers nested counts RE2 refuses (product above 1000) as inconclusive, never guessed', () => {
    expect(sdk('^(a{100}){100}$', 'a')).toBe(false);
    expect(ours('^(a{100}){100}$', 'a')).toBe('inconclusive-regex');
  });

  it('decides catastrophic patterns on long subjects (a backtracking engine would take hours)', () => {
    const rows: Array<[string, string, boolean]> = [
      ['^(a+)+$', 'a'.repeat(5000) + '!', false],
      ['^(a|aa)*$', 'a'.repeat(5000) + '!', false],
      ['(x+x+)+y', 'x'.repeat(5000), false],
      ['^(\\w+\\s?)*$', 'word '.repeat(1000) + '!', false],
      ['^(a+)+$', 'a'.repeat(5000), true],
    ];
    for (const [pattern, subject, expected] of rows) {
      expect(ours(pattern, subject), pattern).toBe(expected);
      expect(ours(pattern, subject, true), pattern).toBe(!expected);
    }
  });
});

// --- random portable patterns ---------------------------------------------------------------------------------

const alphabet = ['a', 'b', '-', ' ', '\n', '\v', '\t', '\b', '_', '0', '9', 'A', ']', '}', ',', '.'];
const escapeIfSpecial = (c: string): string => ('\\^$.*+?()[]{}|/'.includes(c) ? `\\${c}` : c);
const visible = (c: string): string => ({ '\n': '\\n', '\v': '\\v', '\t': '\\t', '\b': '\\x08' })[c] ?? escapeIfSpecial(c);

const classAtom = fc.oneof(
  fc.constantFrom('a', 'b', 'z', '0', '9', '_', ' ', 'A', 'Z', '\\-', '\\]', '\\\\', '\\.', '\\^', '\\/'),
  fc.constantFrom('\\d', '\\D', '\\w', '\\W', '\\s', '\\S', '\\b', '\\n', '\\v', '\\t', '\\f', '\\r', '\\x41', '\\x2d', '\\x0b'),
);
const classRange = fc.constantFrom('a-z', 'A-Z', '0-9', '\\x00-\\x1f', ' -/', 'a-b', '\\t-\\r', '!-~');
const characterClass = fc
  .tuple(fc.boolean(), fc.array(fc.oneof(classAtom, classRange), { minLength: 1, maxLength: 4 }), fc.boolean())
  .map(([negated, items, dash]) => `[${negated ? '^' : ''}${items.join('')}${dash ? '-' : ''}]`);
const atom = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...alphabet).map(visible) },
  { weight: 2, arbitrary: fc.constantFrom('.', '\\d', '\\D', '\\w', '\\W', '\\s', '\\S', '\\n', '\\v', '\\t', '\\f', '\\x61', '\\ ', '\\-', '\\!', '\\_', ']', '}') },
  { weight: 2, arbitrary: characterClass },
);
const quantifier = fc.constantFrom('', '', '', '*', '+', '?', '{2}', '{0,1}', '{1,}', '{1,3}', '{003}', '*?', '+?', '??', '{2,}?');

const pattern: fc.Arbitrary<string> = fc.letrec<{ alternation: string; term: string }>((tie) => ({
  term: fc.oneof(
    { weight: 5, arbitrary: fc.tuple(atom, quantifier).map(([a, q]) => a + q) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom('(', '(?:'), tie('alternation'), quantifier).map(([open, inner, q]) => `${open}${inner})${q}`) },
    { weight: 1, arbitrary: fc.constantFrom('^', '$') },
  ),
  alternation: fc
    .array(fc.array(tie('term'), { maxLength: 4 }).map((terms) => terms.join('')), { minLength: 1, maxLength: 3 })
    .map((branches) => branches.join('|')),
})).alternation;

const subject = fc.array(fc.constantFrom(...alphabet, 'x', 'Z', '!', '\f'), { maxLength: 10 }).map((chars) => chars.join(''));

function re2Refuses(source: string): boolean {
  const syntax = toRe2Syntax(source);
  if (syntax === null) return true;
  try {
    RE2JS.compile(syntax);
    return false;
  } catch {
    return true;
  }
}

// A fixed seed by default; explore with REGEX_SEED=7 npx vitest run test/unit/eval-regex.test.ts
const seed = Number(process.env.REGEX_SEED ?? 15);

describe('regex on RE2: differential against the SDK on random portable patterns', () => {
  it('gives the SDK\'s answer on every generated pattern and subject', () => {
    let decided = 0;
    fc.assert(
      fc.property(pattern, fc.array(subject, { minLength: 1, maxLength: 6 }), (source, subjects) => {
        for (const text of subjects) {
          const expected = sdk(source, text);
          if (typeof expected === 'boolean') decided++;
          expect(ours(source, text), `/${source}/ on ${JSON.stringify(text)}`).toBe(expected);
        }
      }),
      { seed, numRuns: 4000 },
    );
    // The generator must mostly produce patterns the SDK runs, or the comparison shows little.
    expect(decided).toBeGreaterThan(10_000);
  });

  it('gives the SDK\'s answer on random strings over regex syntax characters (portable or not)', () => {
    const syntax = fc.array(fc.constantFrom('a', 'b', '(', ')', '[', ']', '{', '}', '1', ',', '|', '*', '+', '?', '^', '$', '.', '\\', '-', 's', 'x', ':'), { maxLength: 12 });
    fc.assert(
      fc.property(syntax, fc.array(subject, { minLength: 1, maxLength: 4 }), (chars, subjects) => {
        const source = chars.join('');
        for (const text of subjects) {
          const expected = sdk(source, text);
          const actual = ours(source, text);
          // The one known divergence: counts RE2 refuses (above 1000, or nested past 1000) are asked upstream.
          if (actual === 'inconclusive-regex' && typeof expected === 'boolean' && /\{0*[1-9]\d{2}/.test(source) && re2Refuses(source)) continue;
          expect(actual, `/${source}/ on ${JSON.stringify(text)}`).toBe(expected);
        }
      }),
      { seed, numRuns: 20000 },
    );
  });
});
