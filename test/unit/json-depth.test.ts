import { describe, expect, it } from 'vitest';
import { exceedsJsonDepth } from '../../src/http/json-depth.js';

describe('exceedsJsonDepth', () => {
  const cases: Array<[string, string, number, boolean]> = [
    ['flat object', '{"a":1}', 1, false],
    ['two levels, limit one', '{"a":[1]}', 1, true],
    ['exactly at the limit', '[[[]]]', 3, false],
    ['one past the limit', '[[[[]]]]', 3, true],
    ['brackets inside a string', '{"a":"[[[[[[{{{{"}', 1, false],
    ['escaped quote keeps the string open', '{"a":"\\"[[[["}', 1, false],
    ['escaped backslash closes the string', '{"a":"\\\\",[[1]]}', 2, true],
    ['depth falls back after closing', '[[]][[]][[]]', 2, false],
    ['unbalanced closers never go negative', ']]]]][[', 1, true],
    ['100,000 deep', '['.repeat(100_000), 128, true],
    ['not JSON at all', 'hello', 0, false],
  ];
  it.each(cases)('%s', (_name, text, max, expected) => {
    expect(exceedsJsonDepth(text, max)).toBe(expected);
  });
});
