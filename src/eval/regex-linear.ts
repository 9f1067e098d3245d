/**
 * Which translated patterns (regex-translate.ts's RE2 syntax) V8's backtracking `RegExp` runs in time linear in
 * the subject, so that regex.ts may run the SDK's own engine on them instead of re2js (~1 µs more a match).
 * Accepted, conservatively, only patterns that are:
 * - anchored at the start: `\A` first, outside any group or alternation (no retry at each start position), with
 *   `\z` at most once, last, also at the top level;
 * - deterministic: in the pattern's position automaton (Glushkov's: one state per character set occurring in the
 *   pattern, counts expanded), the positions that may consume the next character, from the start and after each
 *   position, have pairwise disjoint sets on ASCII (the only subjects that reach an engine);
 * - free of ambiguity without input: no alternation with two branches that match the empty string, no repetition
 *   (`*`, `+`, `?`, a count) of something that matches the empty string;
 * - small: at most `maxPositions` positions once counts are expanded.
 * Then a backtracking engine, at each character of the subject, has one branch that may consume it, reached by
 * one path; every other branch fails before consuming anything, within a number of steps bounded by the
 * pattern's size. So the whole match is O(subject × pattern), with no catastrophic case. Anything else (or
 * anything this parser does not read) answers false and stays on re2js. Never throws.
 */

const ASCII = 128;
/** Positions (character sets, counts expanded) above which a pattern is not analyzed. */
const maxPositions = 256;
/**
 * Groups nested deeper than this are not analyzed: the parser and the builder recurse once a level, and a pattern
 * nested some thousands deep (which translation and V8's parser take, neither recursing) overflowed the stack.
 */
const maxDepth = 256;

/** A set of ASCII characters: four 32-bit words. */
type CharSet = readonly [number, number, number, number];

const emptySet: CharSet = [0, 0, 0, 0];

function setOfRange(low: number, high: number): number[] {
  const words = [0, 0, 0, 0];
  for (let code = Math.max(low, 0); code <= Math.min(high, ASCII - 1); code++) words[code >>> 5] = (words[code >>> 5] as number) | (1 << (code & 31));
  return words;
}

const overlaps = (a: CharSet, b: CharSet): boolean => (a[0] & b[0]) !== 0 || (a[1] & b[1]) !== 0 || (a[2] & b[2]) !== 0 || (a[3] & b[3]) !== 0;

/** A parsed pattern: a set, a sequence, an alternation, or a repetition `{min,max}` (max null: unbounded). */
type Node =
  | { readonly kind: 'set'; readonly set: CharSet }
  | { readonly kind: 'seq'; readonly items: readonly Node[] }
  | { readonly kind: 'alt'; readonly branches: readonly Node[] }
  | { readonly kind: 'repeat'; readonly body: Node; readonly min: number; readonly max: number | null };

interface Cursor {
  readonly text: string;
  at: number;
  /** `\A` / `\z` met where this analysis does not accept them. */
  misplacedAnchor: boolean;
  /** Groups open at the cursor. */
  depth: number;
}

/** `\x{HH…}` at the cursor (on the backslash): the code, or -1. */
function readHex(cursor: Cursor): number {
  const match = /\\x\{([0-9a-f]+)\}/y;
  match.lastIndex = cursor.at;
  const found = match.exec(cursor.text);
  if (found === null) return -1;
  cursor.at += found[0].length;
  return Number.parseInt(found[1] as string, 16);
}

/** A class (cursor on `[`) as regex-translate.ts writes them: `[…]` or `[^…]` of `\x{…}` codes and ranges. */
function readClass(cursor: Cursor): CharSet | null {
  cursor.at++;
  const negated = cursor.text[cursor.at] === '^';
  if (negated) cursor.at++;
  const words = [0, 0, 0, 0];
  while (cursor.text[cursor.at] !== ']') {
    const low = readHex(cursor);
    if (low < 0) return null;
    let high = low;
    if (cursor.text[cursor.at] === '-') {
      cursor.at++;
      high = readHex(cursor);
      if (high < low) return null;
    }
    const range = setOfRange(low, high);
    for (let i = 0; i < 4; i++) words[i] = (words[i] as number) | (range[i] as number);
  }
  cursor.at++;
  return (negated ? words.map((word) => ~word) : words) as unknown as CharSet;
}

function readAtom(cursor: Cursor): Node | null {
  const char = cursor.text[cursor.at];
  if (char === '(') {
    if (!cursor.text.startsWith('(?:', cursor.at) || cursor.depth >= maxDepth) return null;
    cursor.at += 3;
    cursor.depth++;
    const inner = readAlternation(cursor);
    cursor.depth--;
    if (inner === null || cursor.text[cursor.at] !== ')') return null;
    cursor.at++;
    return inner;
  }
  if (char === '[') {
    const set = readClass(cursor);
    return set === null ? null : { kind: 'set', set };
  }
  if (char === '\\') {
    const code = readHex(cursor);
    return code < 0 ? null : { kind: 'set', set: setOfRange(code, code) as unknown as CharSet };
  }
  if (char !== undefined && /^[0-9A-Za-z]$/.test(char)) {
    cursor.at++;
    const code = char.charCodeAt(0);
    return { kind: 'set', set: setOfRange(code, code) as unknown as CharSet };
  }
  return null;
}

/** A quantifier after an atom, if any: [min, max]; undefined when none; null when unreadable. */
function readQuantifier(cursor: Cursor): [number, number | null] | undefined | null {
  const char = cursor.text[cursor.at];
  if (char === '*' || char === '+' || char === '?') {
    cursor.at++;
    return char === '*' ? [0, null] : char === '+' ? [1, null] : [0, 1];
  }
  if (char !== '{') return undefined;
  const count = /\{(\d+)(,(\d*))?\}/y;
  count.lastIndex = cursor.at;
  const found = count.exec(cursor.text);
  if (found === null) return null;
  cursor.at += found[0].length;
  const min = Number(found[1]);
  if (found[2] === undefined) return [min, min];
  return [min, found[3] === '' || found[3] === undefined ? null : Number(found[3])];
}

function readSequence(cursor: Cursor): Node | null {
  const items: Node[] = [];
  while (cursor.at < cursor.text.length && cursor.text[cursor.at] !== '|' && cursor.text[cursor.at] !== ')') {
    if (cursor.text.startsWith('\\A', cursor.at) || cursor.text.startsWith('\\z', cursor.at)) {
      cursor.misplacedAnchor = true;
      return null;
    }
    let atom = readAtom(cursor);
    if (atom === null) return null;
    for (;;) {
      const quantifier = readQuantifier(cursor);
      if (quantifier === null) return null;
      if (quantifier === undefined) break;
      atom = { kind: 'repeat', body: atom, min: quantifier[0], max: quantifier[1] };
    }
    items.push(atom);
  }
  return { kind: 'seq', items };
}

function readAlternation(cursor: Cursor): Node | null {
  const branches: Node[] = [];
  for (;;) {
    const branch = readSequence(cursor);
    if (branch === null) return null;
    branches.push(branch);
    if (cursor.text[cursor.at] !== '|') break;
    cursor.at++;
  }
  return branches.length === 1 ? (branches[0] as Node) : { kind: 'alt', branches };
}

/** The position automaton being built: each position's set and the positions that may follow it. */
interface Automaton {
  readonly sets: CharSet[];
  readonly follow: Array<Set<number>>;
}

/** A fragment's positions: those that may come first, those that may come last, and whether it matches empty. */
interface Fragment {
  readonly first: readonly number[];
  readonly last: readonly number[];
  readonly nullable: boolean;
}

/** Thrown (and caught in backtracksLinearly) when the pattern is outside what the analysis accepts. */
class Refused extends Error {}

function link(automaton: Automaton, from: readonly number[], to: readonly number[]): void {
  for (const p of from) for (const q of to) (automaton.follow[p] as Set<number>).add(q);
}

function build(node: Node, automaton: Automaton): Fragment {
  switch (node.kind) {
    case 'set': {
      if (automaton.sets.length >= maxPositions) throw new Refused();
      const p = automaton.sets.length;
      automaton.sets.push(node.set);
      automaton.follow.push(new Set());
      return { first: [p], last: [p], nullable: false };
    }
    case 'seq': {
      let first: number[] = [];
      let last: number[] = [];
      let nullable = true;
      for (const item of node.items) {
        const part = build(item, automaton);
        link(automaton, last, part.first);
        if (nullable) first = first.concat(part.first);
        last = part.nullable ? last.concat(part.last) : [...part.last];
        nullable &&= part.nullable;
      }
      return { first, last, nullable };
    }
    case 'alt': {
      const parts = node.branches.map((branch) => build(branch, automaton));
      // Two branches matching empty: two paths to whatever follows, which a backtracking engine tries in turn.
      if (parts.filter((part) => part.nullable).length > 1) throw new Refused();
      return { first: parts.flatMap((part) => part.first), last: parts.flatMap((part) => part.last), nullable: parts.some((part) => part.nullable) };
    }
    case 'repeat': {
      const { body, min, max } = node;
      // Each copy is built afresh (its own positions): x{2,4} is x x (x (x)?)?, x+ is x x*.
      let result: Fragment = { first: [], last: [], nullable: true };
      const append = (part: Fragment): void => {
        link(automaton, result.last, part.first);
        result = {
          first: result.nullable ? result.first.concat(part.first) : result.first,
          last: part.nullable ? result.last.concat(part.last) : part.last,
          nullable: result.nullable && part.nullable,
        };
      };
      const copy = (): Fragment => {
        const part = build(body, automaton);
        if (part.nullable) throw new Refused(); // a repetition of something matching empty
        return part;
      };
      for (let i = 0; i < min; i++) append(copy());
      if (max === null) {
        const loop = copy();
        link(automaton, loop.last, loop.first);
        append({ first: loop.first, last: loop.last, nullable: true });
      } else {
        if (max < min || max - min > maxPositions) throw new Refused();
        // x? nested: (x(x(x)?)?)? — each optional copy can only be entered after the one before it.
        const optionals: Fragment[] = [];
        for (let i = min; i < max; i++) optionals.push(copy());
        let tail: Fragment | null = null;
        for (let i = optionals.length - 1; i >= 0; i--) {
          const part = optionals[i] as Fragment;
          if (tail === null) tail = { first: part.first, last: part.last, nullable: true };
          else {
            link(automaton, part.last, tail.first);
            tail = { first: part.first, last: part.last.concat(tail.last), nullable: true };
          }
        }
        if (tail !== null) append(tail);
      }
      return result;
    }
  }
}

/** Whether the positions' sets are pairwise disjoint. */
function disjoint(automaton: Automaton, positions: Iterable<number>): boolean {
  let seen: CharSet = emptySet;
  for (const p of positions) {
    const set = automaton.sets[p] as CharSet;
    if (overlaps(seen, set)) return false;
    seen = [seen[0] | set[0], seen[1] | set[1], seen[2] | set[2], seen[3] | set[3]];
  }
  return true;
}

/**
 * Whether V8's backtracking RegExp runs the pattern of which `syntax` is regex-translate.ts's translation in time
 * linear in the subject (see the file comment). false for anything not shown to. Never throws.
 */
export function backtracksLinearly(syntax: string): boolean {
  if (!syntax.startsWith('\\A')) return false;
  const endAnchored = syntax.endsWith('\\z');
  const body = syntax.slice(2, endAnchored ? -2 : undefined);
  const cursor: Cursor = { text: body, at: 0, misplacedAnchor: false, depth: 0 };
  try {
    const root = readSequence(cursor);
    // The whole body read as one sequence: an alternation at the top level would leave `\A` to its first branch.
    if (root === null || cursor.at !== body.length) return false;
    const automaton: Automaton = { sets: [], follow: [] };
    const whole = build(root, automaton);
    if (!disjoint(automaton, whole.first)) return false;
    return automaton.follow.every((next) => disjoint(automaton, next));
  } catch {
    // Refused, or anything else (a stack overflow the depth bound missed): not shown linear, so re2js matches.
    return false;
  }
}
