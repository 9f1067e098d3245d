/**
 * The regex operators on V8's own RegExp where it backtracks linearly (regex-linear.ts, issue 19): which translated
 * patterns the analysis accepts, that an accepted pattern matches long adversarial subjects quickly on a
 * backtracking engine, that the matcher then runs V8's RegExp (and re2js otherwise), and that its answers stay the
 * SDK's on random anchored patterns.
 */
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ours, sdk } from '../support/sdk-regex.js';
import { compileRegexOperator } from '../../src/eval/regex.js';
import { backtracksLinearly } from '../../src/eval/regex-linear.js';
import { toRe2Syntax } from '../../src/eval/regex-translate.js';
import type { ValueMatch } from '../../src/eval/value-matcher.js';


/** The analysis of a JavaScript pattern (through its translation, as regex.ts calls it). */
const linear = (pattern: string): boolean => {
  const syntax = toRe2Syntax(pattern);
  return syntax !== null && backtracksLinearly(syntax);
};

describe('backtracksLinearly', () => {
  const rows: Array<[pattern: string, accepted: boolean, why: string]> = [
    ['^[a-z]+\\.[a-z]+@(example|acme)\\.com$', true, 'each loop ends at a character it cannot take'],
    ['^(foo|bar)-\\d+$', true, 'branches start apart'],
    ['^(alpha|beta|rc)\\.\\d+\\.\\d+$', true, 'dotted counters'],
    ['^user-[0-9]{2,4}(-[a-f0-9]{8})?$', true, 'counts and an optional group'],
    ['^(?:a|b)*c', true, 'a loop whose exit takes another character'],
    ['^$', true, 'empty'],
    ['^abc', true, 'a prefix, no end anchor'],
    ['^.*@example\\.com$', false, '.* may take the @ too'],
    ['[a-z]+\\d{2,4}', false, 'not anchored at the start: tried at every position'],
    ['^a|b$', false, '^ anchors the first branch only'],
    ['(^a)', false, 'an anchor inside a group'],
    ['^a^', false, 'an anchor after the start'],
    ['^(a+)+$', false, 'nested loops on the same character'],
    ['^(a|aa)*$', false, 'branches that start alike'],
    ['^(\\w+\\s?)*$', false, 'a loop body that can end where the next one starts'],
    ['^(?:(?:x?|y?)c)*d', false, 'two empty ways into the same place (exponential, yet deterministic by characters)'],
    ['^(a?)*', false, 'a loop of something matching empty'],
    ['^(a?)?b', false, 'an option of something matching empty'],
    ['^a{0,1000}', false, 'too many positions once expanded'],
    ['^ab|ac', false, 'top-level alternation'],
  ];
  it.each(rows)('%s → %s (%s)', (pattern, accepted) => {
    expect(linear(pattern)).toBe(accepted);
  });

  it('refuses what it does not read, without throwing', () => {
    for (const syntax of ['', '\\A(', '\\A(?:a', '\\A[\\x{61}', '\\A\\x{zz}', '\\Aa{', '\\A*', '\\A)', '\\Aa\\z\\z', '\\A\\A']) {
      expect(() => backtracksLinearly(syntax), syntax).not.toThrow();
    }
    expect(backtracksLinearly('\\A(')).toBe(false);
    expect(backtracksLinearly('\\A\\A')).toBe(false);
  });

  it('refuses, without throwing, groups nested deeper than its recursion reaches (the matcher then stays on re2js)', () => {
    // Translation and V8's parser take these (neither recurses); the analysis's parser and builder do. A throw
    // here escaped compileRegexOperator, and the filter compiled as an unsupported operator: the flag was
    // inconclusive where re2js (before) and the SDK decide it.
    for (const depth of [5000]) {
      const nested = `^${'(?:'.repeat(depth)}a${')'.repeat(depth)}`;
      const counted = `^${'(?:'.repeat(depth)}a${'){1}'.repeat(depth)}`;
      for (const pattern of [nested, counted]) {
        expect(() => linear(pattern), `${pattern.slice(0, 20)}… (${depth})`).not.toThrow();
        expect(linear(pattern)).toBe(false);
        // re2js's answer, as before the analysis existed (inconclusive where RE2 refuses the nesting).
        const re2 = (subject: string): ValueMatch => {
          try {
            return RE2JS.compile(toRe2Syntax(pattern) as string).test(subject);
          } catch {
            return 'inconclusive-regex';
          }
        };
        expect(ours(pattern, 'a')).toBe(re2('a'));
        expect(ours(pattern, 'b')).toBe(re2('b'));
        if (pattern === nested) expect(ours(pattern, 'a')).toBe(sdk(pattern, 'a'));
      }
    }
  });
});

describe('regex on V8 where it backtracks linearly', () => {
  afterEach(() => vi.restoreAllMocks());

  it("answers with re2js where V8's RegExp overflows its backtrack stack on an accepted pattern", () => {
    // Linear in time, but V8 pushes each capture of each iteration on its backtrack stack: with many captures in a
    // loop, a subject well inside the 1 MiB request body overflows it (RangeError). re2js answered these before the
    // analysis existed; an overflow made the filter inconclusive.
    const pattern = `^${'('.repeat(50)}a${')'.repeat(50)}*$`;
    expect(linear(pattern)).toBe(true);
    for (const [subject, expected] of [['a'.repeat(500_000), true], [`${'a'.repeat(500_000)}b`, false]] as const) {
      expect(() => new RegExp(pattern).test(subject)).toThrow(RangeError);
      expect(ours(pattern, subject)).toBe(expected);
      expect(ours(pattern, subject, true)).toBe(!expected);
    }
  });

  it('matches with RegExp.prototype.test on an accepted pattern, with re2js otherwise', () => {
    const test = vi.spyOn(RegExp.prototype, 'test');
    const accepted = compileRegexOperator('^[a-z]+\\.[a-z]+@(example|acme)\\.com$', false);
    const refused = compileRegexOperator('^.*@example\\.com$', false);
    test.mockClear();
    expect(accepted.match('grace.hopper@example.com', 0)).toBe(true);
    expect(test).toHaveBeenCalledTimes(1);
    test.mockClear();
    expect(refused.match('grace.hopper@example.com', 0)).toBe(true);
    expect(test).not.toHaveBeenCalled();
  });

  it('keeps a pattern RE2 refuses inconclusive, whatever engine would match it', () => {
    // Deterministic and anchored, but RE2 refuses nested counts whose product passes 1000.
    expect(ours('^(?:a{40}b){40}$', 'ab')).toBe('inconclusive-regex');
  });

  // Random anchored patterns over a few characters; the accepted ones are matched against long subjects built
  // to make a backtracking engine retry (a repeated piece, then a character that fails the match).
  const piece = fc.constantFrom('a', 'b', 'ab', '[ab]', '[a-c]', '\\d', '\\w', '.', '(a|b)', '(ab|c)', '(?:a|bc)', '(a|)', '[^a]');
  const quantifier = fc.constantFrom('', '', '*', '+', '?', '{2}', '{1,3}', '{2,}', '*?');
  const term = fc.tuple(piece, quantifier).map(([p, q]) => p + q);
  const body = fc.array(fc.oneof(term, fc.tuple(fc.array(term, { minLength: 1, maxLength: 3 }), quantifier).map(([ts, q]) => `(${ts.join('')})${q}`)), { minLength: 1, maxLength: 5 }).map((ts) => ts.join(''));
  const anchored = fc.tuple(body, fc.boolean()).map(([b, end]) => `^${b}${end ? '$' : ''}`);
  const subject = fc.array(fc.constantFrom('a', 'b', 'c', '1', '_', '!', ' '), { maxLength: 8 }).map((cs) => cs.join(''));

  it('gives the SDK\'s answer on random anchored patterns, and accepts a good share of them', () => {
    let accepted = 0;
    fc.assert(
      fc.property(anchored, fc.array(subject, { minLength: 1, maxLength: 6 }), (source, subjects) => {
        if (linear(source)) accepted++;
        for (const text of subjects) expect(ours(source, text), `/${source}/ on ${JSON.stringify(text)}`).toBe(sdk(source, text));
      }),
      { seed: 19, numRuns: 3000 },
    );
    expect(accepted).toBeGreaterThan(300);
  });

  it('matches every accepted pattern quickly on long adversarial subjects', () => {
    let checked = 0;
    fc.assert(
      fc.property(anchored, fc.array(fc.constantFrom('a', 'b', 'c', '1', 'ab', 'abc', 'a1'), { minLength: 1, maxLength: 3 }), fc.constantFrom('!', '', 'a'), (source, unit, end) => {
        if (!linear(source)) return;
        checked++;
        const text = unit.join('').repeat(4000) + end;
        const started = performance.now();
        ours(source, text);
        ours(source, text, true);
        // Linear: well under a millisecond here. A pattern that backtracks exponentially takes hours at this size.
        expect(performance.now() - started, `/${source}/ on ${JSON.stringify(unit)} × 4000`).toBeLessThan(250);
      }),
      { seed: 19, numRuns: 2000 },
    );
    expect(checked).toBeGreaterThan(200);
  });
});
