/**
 * How deeply a JSON text nests, found without parsing it: a single iterative pass that counts structural `{` and
 * `[` (those inside strings do not count), so a hostile body is refused before any recursive code (a parser, a
 * serializer, a walker) sees it. Malformed text is not judged here: the parser that follows does that.
 */

/** Nesting accepted on upstream's flags service (`/flags`, `/decide`): its guard, serde_json's recursion limit. */
export const maxFlagsJsonDepth = 128;

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

/** True when `text` opens more than `max` objects/arrays inside one another at some point. Linear, no recursion. */
export function exceedsJsonDepth(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === backslash) i++;
      else if (c === quote) inString = false;
    } else if (c === quote) inString = true;
    else if (c === openBrace || c === openBracket) {
      if (++depth > max) return true;
    } else if ((c === closeBrace || c === closeBracket) && depth > 0) depth--;
  }
  return false;
}
