/**
 * Which regex patterns `@posthog/core` 1.67.3 is willing to run with JavaScript instead of asking the flags
 * service (whose engine is Rust's `fancy_regex`). A single left-to-right scan over UTF-16 units rejects:
 * - any non-ASCII character;
 * - escapes other than `\d \D \s \S \w \W \b \B \f \n \r \t \v`, `\xHH` and escaped ASCII punctuation from
 *   the set ` !"#$%&'()*+,-./:;=?@[\]^_\`{|}~` (so no `\1`, `\u…`, `\p…`, `\<`); `\b`/`\B` outside a class;
 * - `[` inside a class, empty classes `[]` / `[^]`, and `&&`, `--`, `~~` inside a class;
 * - groups opening with `(?` other than `(?:`;
 * - `{` that does not start a `{m}`, `{m,}` or `{m,n}` repetition, or that starts one at the very beginning,
 *   after `|` or after `(`, or with a count above 2^32-1;
 * - `*`, `+`, `?` or `}` followed by `+` or `{`;
 * - `*`, `+`, `?` or `{` right after `^`, `$` or an empty group.
 * A trailing lone backslash ends the scan (JavaScript then rejects the pattern as a syntax error).
 */

const PLAIN_ESCAPES = 'dDsSwWbBfnrtv';
const START = '';
const ATOM = 'atom';
const EMPTY_GROUP = 'empty-group';

function isEscapablePunctuation(unit: number): boolean {
  return (
    (unit >= 0x20 && unit <= 0x2f) ||
    unit === 0x3a ||
    unit === 0x3b ||
    unit === 0x3d ||
    unit === 0x3f ||
    unit === 0x40 ||
    (unit >= 0x5b && unit <= 0x60) ||
    (unit >= 0x7b && unit <= 0x7e)
  );
}

function isHexDigit(unit: number): boolean {
  return (unit >= 0x30 && unit <= 0x39) || (unit >= 0x41 && unit <= 0x46) || (unit >= 0x61 && unit <= 0x66);
}

function isDigit(unit: number): boolean {
  return unit >= 0x30 && unit <= 0x39;
}

/** Whether `{` at `at` opens a well-formed repetition whose counts fit in 32 bits. */
function isRepetition(pattern: string, at: number): boolean {
  let i = at + 1;
  const minStart = i;
  while (isDigit(pattern.charCodeAt(i))) i++;
  if (i === minStart || Number(pattern.slice(minStart, i)) > 0xffffffff) return false;
  if (pattern[i] === ',') {
    const maxStart = ++i;
    while (isDigit(pattern.charCodeAt(i))) i++;
    if (Number(pattern.slice(maxStart, i)) > 0xffffffff) return false;
  }
  return pattern[i] === '}';
}

/**
 * The character classes (`[…]` source slices, in order) of a portable pattern, to be checked in unicode mode by
 * the caller; null when the pattern is not portable. Never throws.
 */
export function portableCharacterClasses(pattern: string): string[] | null {
  const classes: string[] = [];
  let classStart = -1;
  let previous = START;
  for (let i = 0; i < pattern.length; i++) {
    const unit = pattern.charCodeAt(i);
    if (unit > 0x7f) return null;
    const char = pattern.charAt(i);
    if (char === '\\') {
      i++;
      if (i >= pattern.length) break;
      const escaped = pattern.charAt(i);
      if (escaped === 'x') {
        if (!isHexDigit(pattern.charCodeAt(i + 1)) || !isHexDigit(pattern.charCodeAt(i + 2))) return null;
        i += 2;
      } else if (!PLAIN_ESCAPES.includes(escaped) && !isEscapablePunctuation(pattern.charCodeAt(i))) {
        return null;
      }
      if (classStart === -1 && (escaped === 'b' || escaped === 'B')) return null;
      previous = ATOM;
      continue;
    }
    if (classStart !== -1) {
      if (char === '[') return null;
      if (char === ']') {
        const contentStart = classStart + (pattern[classStart + 1] === '^' ? 2 : 1);
        if (i === contentStart) return null;
        classes.push(pattern.slice(classStart, i + 1));
        classStart = -1;
        previous = ATOM;
        continue;
      }
      const pair = pattern.slice(i, i + 2);
      if (pair === '&&' || pair === '--' || pair === '~~') return null;
      continue;
    }
    const next = pattern[i + 1];
    if (char === '[') {
      classStart = i;
    } else if (char === '(' && next === '?') {
      if (pattern[i + 2] !== ':') return null;
      i += 2;
    } else if (char === '{') {
      if (previous === START || previous === '|' || previous === '(' || !isRepetition(pattern, i)) return null;
    } else if ((char === '*' || char === '+' || char === '?' || char === '}') && (next === '+' || next === '{')) {
      return null;
    }
    const quantifier = char === '*' || char === '+' || char === '?' || char === '{';
    if (quantifier && (previous === '^' || previous === '$' || previous === EMPTY_GROUP)) return null;
    previous = char === ')' && (previous === '(' || previous === EMPTY_GROUP) ? EMPTY_GROUP : char;
  }
  return classes;
}
