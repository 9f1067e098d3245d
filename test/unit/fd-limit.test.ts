import { describe, expect, it } from 'vitest';
import { capsOverLimit, parseOpenFileLimit } from '../../src/http/fd-limit.js';

const limits = (soft: string, hard: string) =>
  `Limit                     Soft Limit           Hard Limit           Units     \nMax processes             unlimited            unlimited            processes \nMax open files            ${soft}                ${hard}                files     \n`;

describe('parseOpenFileLimit', () => {
  it.each([
    [limits('1024', '524288'), 1024],
    [limits('1048576', '1048576'), 1_048_576],
    [limits('unlimited', 'unlimited'), null],
    ['', null],
    ['Max processes 10 10 processes\n', null],
  ])('%#', (text, expected) => expect(parseOpenFileLimit(text)).toBe(expected));
});

describe('capsOverLimit', () => {
  it.each([
    [null, 1024, 64, false],
    [1_048_576, 1024, 64, false],
    [1188, 1024, 64, false],
    [1187, 1024, 64, true],
    [256, 1024, 64, true],
    [256, 100, 10, false],
  ])('limit %s, caps %i + %i → warns %s', (limit, api, ops, warns) => {
    const warning = capsOverLimit(limit, { api, ops });
    expect(warning !== null).toBe(warns);
    if (warning) expect(warning).toContain('FLAG_SIDECAR_MAX_CONNECTIONS');
  });
});
