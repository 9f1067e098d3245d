/**
 * `regex` / `not_regex`, as `@posthog/core` 1.67.3 decides them. The service runs patterns with Rust's
 * `fancy_regex`; the SDK only runs a pattern locally when JavaScript is known to agree with it, and otherwise
 * answers inconclusive (kind `'inconclusive-regex'`). In order:
 * - the empty pattern matches everything (`regex` true, `not_regex` false);
 * - a non-portable pattern (see regex-portability.ts) is inconclusive;
 * - a pattern JavaScript rejects as a syntax error is `false` for both operators;
 * - a character class JavaScript rejects in unicode mode is inconclusive;
 * - a subject holding a non-ASCII character or a carriage return is inconclusive;
 * - otherwise the SDK's `RegExp.prototype.test` on `String(value)` decides — here the same answer comes from RE2
 *   (the `re2js` engine, linear in the subject's length, so no pattern and subject can stall the process): the
 *   pattern is translated to RE2 syntax by regex-translate.ts; a pattern RE2 cannot run (a count above 1000,
 *   nesting RE2 refuses) is inconclusive, so it is asked of upstream, never decided by a backtracking engine.
 * The pattern is `String(filter value)`; JavaScript compiles it once, here, as the syntax check (compiling is
 * linear; only matching can backtrack). RE2 compiles it at its first match. The SDK's filter check accepts every
 * regex filter (non-portable ones only fail once a present value is matched), so it is always `supported`.
 * A pattern that backtracks linearly (regex-linear.ts: anchored at the start and deterministic) is then matched
 * by that JavaScript RegExp, the SDK's own engine, about 1 µs a match faster than re2js; RE2 still compiles it at
 * the first match, so a pattern RE2 refuses stays inconclusive whichever engine matches.
 */
import { createRequire } from 'node:module';
import type { RE2JS } from 're2js';
import { backtracksLinearly } from './regex-linear.js';
import { portableCharacterClasses } from './regex-portability.js';
import { toRe2Syntax } from './regex-translate.js';
import { supported, type CompiledOperator, type ValueMatch, type ValueMatcher } from './value-matcher.js';

const regexInconclusive: ValueMatcher = () => 'inconclusive-regex';

const require = createRequire(import.meta.url);
let engineClass: typeof RE2JS | undefined;
/**
 * re2js (260 KB of source) is loaded with the first regex filter compiled, not with the module: most projects
 * have none, and a sidecar that never matches a regex should not hold it. A failure to load it throws here, at
 * compile time, never inside a match (where it would read as inconclusive).
 */
const re2 = (): typeof RE2JS => (engineClass ??= (require('re2js') as typeof import('re2js')).RE2JS);

function isAsciiWithoutCarriageReturn(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit > 0x7f || unit === 0x0d) return false;
  }
  return true;
}

function acceptsUnicodeMode(characterClass: string): boolean {
  try {
    new RegExp(characterClass, 'u');
    return true;
  } catch {
    return false;
  }
}

/** Compiles `regex` (negate = false) or `not_regex` (negate = true) for one filter value; never throws. */
export function compileRegexOperator(target: unknown, negate: boolean): CompiledOperator {
  return supported(regexMatcher(target, negate));
}

function regexMatcher(target: unknown, negate: boolean): ValueMatcher {
  let pattern: string;
  try {
    pattern = String(target);
  } catch {
    return () => 'inconclusive';
  }
  if (pattern === '') return () => !negate;
  const classes = portableCharacterClasses(pattern);
  if (classes === null) return regexInconclusive;
  let native: RegExp;
  try {
    native = new RegExp(pattern);
  } catch (error) {
    return error instanceof SyntaxError ? () => false : regexInconclusive;
  }
  if (!classes.every(acceptsUnicodeMode)) return regexInconclusive;
  const syntax = toRe2Syntax(pattern);
  if (syntax === null) return regexInconclusive;
  const RE2 = re2();
  // Without the g or y flag, test() neither reads nor writes lastIndex: one object serves every match.
  const linear = backtracksLinearly(syntax) ? native : null;
  // Compiled at the first subject that reaches it; null once RE2 has refused it.
  let engine: RE2JS | null | undefined;
  return (value): ValueMatch => {
    const subject = typeof value === 'string' ? value : String(value);
    if (!isAsciiWithoutCarriageReturn(subject)) return 'inconclusive-regex';
    try {
      if (engine === undefined) engine = compileRe2(RE2, syntax);
      if (engine === null) return 'inconclusive-regex';
      return (linear !== null ? linearTest(linear, engine, subject) : engine.test(subject)) !== negate;
    } catch {
      return 'inconclusive-regex';
    }
  };
}

/**
 * V8's answer on a pattern that backtracks linearly, re2js's where V8 cannot give one: linear in time, V8 still
 * pushes each capture of each loop iteration on its backtrack stack, and with many captures in a loop a subject
 * inside the request body limit overflows it (a RangeError), where re2js, which answered before, answers.
 */
function linearTest(linear: RegExp, engine: RE2JS, subject: string): boolean {
  try {
    return linear.test(subject);
  } catch {
    return engine.test(subject);
  }
}

function compileRe2(RE2: typeof RE2JS, syntax: string): RE2JS | null {
  try {
    return RE2.compile(syntax);
  } catch {
    return null;
  }
}
