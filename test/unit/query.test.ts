import { describe, expect, it } from 'vitest';
import { parseQuery } from '../../src/http/query.js';

describe('parseQuery', () => {
  it.each([
    ['', []],
    ['send_cohorts', [['send_cohorts', '']]],
    ['token=phc_a&send_cohorts', [['token', 'phc_a'], ['send_cohorts', '']]],
    ['a=1&a=2', [['a', '2']]], // the last value, as Django's QueryDict.get
    ['a=x%20y+z', [['a', 'x y z']]],
    ['a%5Bb%5D=1', [['a[b]', '1']]],
    ['a=%zz', [['a', '%zz']]],
    ['&&a=&', [['a', '']]],
    ['a==b', [['a', '=b']]],
    ['groups=%7B%22company%22%3A%22acme%22%7D', [['groups', '{"company":"acme"}']]],
  ])('%j', (raw, entries) => {
    expect([...parseQuery(raw).entries()]).toEqual(entries);
    // Same answers as URLSearchParams.getAll(…).at(-1) for well-formed input.
    if (!raw.includes('%zz')) for (const [name, value] of entries) expect(new URLSearchParams(raw).getAll(name as string).at(-1)).toBe(value);
  });
});
