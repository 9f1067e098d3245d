import { describe, expect, it } from 'vitest';
import { exceedsJsonDepth } from '../../src/http/json-depth.js';

/** The former scanner, a character at a time: the reference the string-skipping one must agree with. */
function oracle(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') {
      if (++depth > max) return true;
    } else if ((c === '}' || c === ']') && depth > 0) depth--;
  }
  return false;
}

describe('exceedsJsonDepth', () => {
  const cases: Array<[string, string, number, boolean]> = [
    ['flat object', '{"a":1}', 1, false],
    ['two levels, limit one', '{"a":[1]}', 1, true],
    ['exactly at the limit', '[[[]]]', 3, false],
    ['one past the limit', '[[[[]]]]', 3, true],
    ['brackets inside a string', '{"a":"[[[[[[{{{{"}', 1, false],
    ['escaped quote keeps the string open', '{"a":"\\"[[[["}', 1, false],
    ['escaped backslash closes the string', '{"a":"\\\\",[[1]]}', 2, true],
    ['three backslashes: the quote stays escaped', '{"a":"\\\\\\"[[["}', 1, false],
    ['four backslashes: the quote closes', '{"a":"\\\\\\\\",[[1]]}', 2, true],
    ['an escape before a backslash run', '{"a":"\\n\\\\",[[1]]}', 2, true],
    ['an escaped quote, then a closing one', '{"a":"x\\"y","b":[[1]]}', 2, true],
    ['empty strings', '{"":"",[[""]]}', 2, true],
    ['unterminated string', '{"a":"[[[[', 1, false],
    ['unterminated after an escaped quote', '["\\"', 0, true],
    ['a backslash at the very end', '["\\', 1, false],
    ['depth falls back after closing', '[[]][[]][[]]', 2, false],
    ['unbalanced closers never go negative', ']]]]][[', 1, true],
    ['100,000 deep', '['.repeat(100_000), 128, true],
    ['100,000 deep inside a string', `"${'['.repeat(100_000)}"`, 128, false],
    ['not JSON at all', 'hello', 0, false],
    // Around the count of openings (at most `max` of them: no scan; one more: the scan decides).
    ['openings exactly the limit, all nested', '[{[', 3, false],
    ['openings one past the limit, all nested', '[{[{', 3, true],
    ['openings one past the limit, one in a string', '[[["["]]]', 3, false],
    ['openings one past the limit, side by side', '[][][][]', 3, false],
    ['no openings, limit zero', '"a"', 0, false],
    ['one opening, limit zero', '{}', 0, true],
  ];
  it.each(cases)('%s', (_name, text, max, expected) => {
    expect(exceedsJsonDepth(text, max)).toBe(expected);
    expect(oracle(text, max)).toBe(expected);
  });

  it('agrees with the character-at-a-time scanner on 20,000 random texts of JSON punctuation', () => {
    const alphabet = ['{', '}', '[', ']', '"', '\\', 'a', ':', ','];
    let seed = 19;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 20_000; round++) {
      const length = random(40);
      let text = '';
      for (let i = 0; i < length; i++) text += alphabet[random(alphabet.length)];
      const max = random(5);
      expect(exceedsJsonDepth(text, max), `${JSON.stringify(text)} at ${max}`).toBe(oracle(text, max));
    }
  });
});
