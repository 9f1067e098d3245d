/**
 * How deeply a JSON text nests, found without parsing it: a single iterative pass that counts structural `{` and
 * `[` (those inside strings do not count), so a hostile body is refused before any recursive code (a parser, a
 * serializer, a walker) sees it. Malformed text is not judged here: the parser that follows does that.
 */

/**
 * Nesting accepted in bodies and JSON parameters of the `/api` routes: upstream's Python `json` cannot decode
 * deeper either (it stops at the interpreter's recursion limit, 1000 frames), and every recursive walker in the
 * sidecar is safe far beyond it.
 */
export const maxApiJsonDepth = 1000;

/** Character codes of JSON's structural characters (also bytes: JSON's structure is ASCII). */
export const quote = 0x22;
export const backslash = 0x5c;
export const openBrace = 0x7b;
export const openBracket = 0x5b;
export const closeBrace = 0x7d;
export const closeBracket = 0x5d;

/**
 * True when `text` opens more than `max` objects/arrays inside one another at some point. Linear, no recursion.
 * A string is skipped to its closing quote with `indexOf` (a JSON body is mostly strings: keys and values), not
 * read a character at a time: an instruction count of `POST /flags` found the per-character loop at 41
 * instructions a character, 14k for a 337-byte body.
 */
export function exceedsJsonDepth(text: string, max: number): boolean {
  // Depth only grows at a `{` or `[`: a text holding at most `max` of them, in strings or not, cannot nest deeper.
  // Counted with indexOf (a body holds a handful), this skips the scan for every usual body: ~8k instructions of a
  // 337-byte `POST /flags` body, ~0.5k to count.
  if (fewOpenings(text, max)) return false;
  let depth = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === quote) {
      let end = text.indexOf('"', i + 1);
      while (end > 0 && escapedAt(text, end)) end = text.indexOf('"', end + 1);
      if (end < 0) return false; // an unterminated string: nothing after it counts
      i = end;
    } else if (c === openBrace || c === openBracket) {
      if (++depth > max) return true;
    } else if ((c === closeBrace || c === closeBracket) && depth > 0) depth--;
  }
  return false;
}

/** Whether `text` holds at most `max` characters `{` and `[` in all (anywhere, strings included). */
function fewOpenings(text: string, max: number): boolean {
  let count = 0;
  for (let at = text.indexOf('{'); at >= 0; at = text.indexOf('{', at + 1)) if (++count > max) return false;
  for (let at = text.indexOf('['); at >= 0; at = text.indexOf('[', at + 1)) if (++count > max) return false;
  return true;
}

/**
 * Whether the quote at `at` (inside a string) is escaped: preceded by an odd run of backslashes. The run is read
 * back to the first other character (at worst the string's opening quote), and each run is read for one quote
 * only (the character after a run is that quote), so skipping strings stays linear.
 */
function escapedAt(text: string, at: number): boolean {
  let start = at;
  while (text.charCodeAt(start - 1) === backslash) start--;
  return (at - start) % 2 === 1;
}
