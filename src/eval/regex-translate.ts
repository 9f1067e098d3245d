/**
 * Translates a portable pattern (regex-portability.ts) that JavaScript compiles, and whose character classes
 * JavaScript also compiles in unicode mode, into RE2 syntax with the same matches on every subject that is ASCII
 * without a carriage return — the only subjects regex.ts lets reach the engine. A single left-to-right pass with
 * no recursion, emitting canonical forms only, never the JavaScript source:
 * - every character set (a literal, `.`, an escape such as `\s`, a class) is computed as a set of the 128 ASCII
 *   characters with JavaScript's meaning and written as `\x{HH}` ranges (`\s` includes \v, which RE2's does not;
 *   `[\b]` is backspace; `.` excludes \n and \r; `\d \w` are ASCII in both);
 * - groups become non-capturing `(?:…)`; `^`/`$` become `\A`/`\z` (JavaScript without flags anchors at the ends
 *   of the input only);
 * - counts are written in decimal without leading zeros; lazy `?` suffixes are dropped (they change which match
 *   is found, never whether one is).
 * Returns null when the pattern cannot be run by RE2: a count above RE2's 1000, or (defensively) anything outside
 * the portable subset. RE2 may still reject the result (nested counts whose product passes 1000, nesting too
 * deep): the caller treats that as "cannot run" too.
 */

const ASCII = 128;
const MAX_COUNT = 1000;

type CharSet = Uint8Array;

function setOf(...ranges: Array<[number, number]>): CharSet {
  const set = new Uint8Array(ASCII);
  for (const [low, high] of ranges) set.fill(1, low, high + 1);
  return set;
}

function complement(set: CharSet): CharSet {
  return set.map((member) => 1 - member);
}

const DIGIT = setOf([0x30, 0x39]);
const WORD = setOf([0x30, 0x39], [0x41, 0x5a], [0x5f, 0x5f], [0x61, 0x7a]);
// JavaScript's \s on ASCII: \t \n \v \f \r and space.
const SPACE = setOf([0x09, 0x0d], [0x20, 0x20]);
// JavaScript's `.` without the s flag, on ASCII: everything but \n and \r.
const DOT = complement(setOf([0x0a, 0x0a], [0x0d, 0x0d]));
const CLASS_ESCAPES: Record<string, CharSet> = {
  d: DIGIT,
  D: complement(DIGIT),
  w: WORD,
  W: complement(WORD),
  s: SPACE,
  S: complement(SPACE),
};
const CONTROL_ESCAPES: Record<string, number> = { f: 0x0c, n: 0x0a, r: 0x0d, t: 0x09, v: 0x0b };

const hex = (code: number): string => `\\x{${code.toString(16)}}`;
const isAlnum = (code: number): boolean => (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);

/** `[low, high]` runs of the set's members, in order. */
function runs(set: CharSet): Array<[number, number]> {
  const result: Array<[number, number]> = [];
  for (let code = 0; code < ASCII; code++) {
    if (set[code] !== 1) continue;
    const low = code;
    while (set[code + 1] === 1) code++;
    result.push([low, code]);
  }
  return result;
}

const rangeText = ([low, high]: [number, number]): string => (low === high ? hex(low) : `${hex(low)}-${hex(high)}`);

/** RE2 text matching exactly the set's members among ASCII subjects (non-ASCII never reaches the engine). */
function emitSet(set: CharSet): string {
  const members = runs(set);
  const first = members[0];
  if (first === undefined) return '[^\\x{0}-\\x{10ffff}]';
  if (members.length === 1 && first[0] === first[1]) return isAlnum(first[0]) ? String.fromCharCode(first[0]) : hex(first[0]);
  const others = runs(complement(set));
  if (others.length === 0) return '[\\x{0}-\\x{10ffff}]';
  return others.length < members.length ? `[^${others.map(rangeText).join('')}]` : `[${members.map(rangeText).join('')}]`;
}

interface Cursor {
  readonly pattern: string;
  at: number;
}

/** One escaped atom after a backslash (cursor on the escaped character): a set, a code, or null if unknown. */
function readEscape(cursor: Cursor, inClass: boolean): CharSet | number | null {
  const escaped = cursor.pattern.charAt(cursor.at);
  cursor.at++;
  const named = CLASS_ESCAPES[escaped];
  if (named !== undefined) return named;
  const control = CONTROL_ESCAPES[escaped];
  if (control !== undefined) return control;
  if (escaped === 'b') return inClass ? 0x08 : null;
  if (escaped === 'x') {
    const digits = cursor.pattern.slice(cursor.at, cursor.at + 2);
    if (!/^[0-9a-fA-F]{2}$/.test(digits)) return null;
    cursor.at += 2;
    return Number.parseInt(digits, 16);
  }
  // Escaped ASCII punctuation (space and `_` included) is the character itself; letters and digits left here
  // (back-references, \u, \p, \c, \0, …) are not portable.
  const code = escaped.charCodeAt(0);
  return code >= 0x20 && code < 0x7f && !isAlnum(code) ? code : null;
}

/** One class atom (cursor on it): a set or a code, or null if not understood. */
function readClassAtom(cursor: Cursor): CharSet | number | null {
  const code = cursor.pattern.charCodeAt(cursor.at);
  cursor.at++;
  if (code === 0x5c) return readEscape(cursor, true);
  return Number.isNaN(code) || code >= ASCII ? null : code;
}

/** The set of a class (cursor just after `[`); the cursor ends after `]`. Null if not understood. */
function readClass(cursor: Cursor): CharSet | null {
  const { pattern } = cursor;
  const negated = pattern[cursor.at] === '^';
  if (negated) cursor.at++;
  const set = new Uint8Array(ASCII);
  while (pattern[cursor.at] !== ']') {
    if (cursor.at >= pattern.length) return null;
    const atom = readClassAtom(cursor);
    if (atom === null) return null;
    if (pattern[cursor.at] === '-' && pattern[cursor.at + 1] !== ']' && cursor.at + 1 < pattern.length) {
      cursor.at++;
      const end = readClassAtom(cursor);
      if (typeof atom !== 'number' || typeof end !== 'number' || end < atom) return null;
      set.fill(1, atom, end + 1);
    } else if (typeof atom === 'number') {
      set[atom] = 1;
    } else {
      for (let code = 0; code < ASCII; code++) if (atom[code] === 1) set[code] = 1;
    }
  }
  cursor.at++;
  return negated ? complement(set) : set;
}

/** `{m}`, `{m,}` or `{m,n}` (cursor on `{`) in canonical form, or null when malformed or above RE2's cap. */
function readCount(cursor: Cursor): string | null {
  const repetition = /\{(\d+)(,(\d*))?\}/y;
  repetition.lastIndex = cursor.at;
  const match = repetition.exec(cursor.pattern);
  if (match === null) return null;
  cursor.at += match[0].length;
  const min = Number(match[1]);
  const max = match[3] === undefined || match[3] === '' ? null : Number(match[3]);
  if (min > MAX_COUNT || (max !== null && (max > MAX_COUNT || max < min))) return null;
  if (match[2] === undefined) return `{${min}}`;
  return max === null ? `{${min},}` : `{${min},${max}}`;
}

/** RE2 syntax for a portable JavaScript pattern (see the file comment), or null when RE2 cannot run it. */
export function toRe2Syntax(pattern: string): string | null {
  const cursor: Cursor = { pattern, at: 0 };
  let out = '';
  while (cursor.at < pattern.length) {
    const char = pattern.charAt(cursor.at);
    const code = pattern.charCodeAt(cursor.at);
    if (code >= ASCII) return null;
    if (char === '{') {
      const count = readCount(cursor);
      if (count === null) return null;
      out += count;
      if (pattern[cursor.at] === '?') cursor.at++;
      continue;
    }
    cursor.at++;
    if (char === '*' || char === '+' || char === '?') {
      out += char;
      if (pattern[cursor.at] === '?') cursor.at++;
    } else if (char === '(') {
      if (pattern[cursor.at] === '?') {
        if (pattern[cursor.at + 1] !== ':') return null;
        cursor.at += 2;
      }
      out += '(?:';
    } else if (char === ')' || char === '|') {
      out += char;
    } else if (char === '^') {
      out += '\\A';
    } else if (char === '$') {
      out += '\\z';
    } else if (char === '.') {
      out += emitSet(DOT);
    } else if (char === '[') {
      const set = readClass(cursor);
      if (set === null) return null;
      out += emitSet(set);
    } else if (char === '\\') {
      if (cursor.at >= pattern.length) return null;
      const atom = readEscape(cursor, false);
      if (atom === null) return null;
      out += emitSet(typeof atom === 'number' ? setOf([atom, atom]) : atom);
    } else {
      out += emitSet(setOf([code, code]));
    }
  }
  return out;
}
