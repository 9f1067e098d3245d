import { describe, expect, it } from 'vitest';
import { plausibleKey } from '../../src/auth/key-shape.js';

// What upstream's generators produce (posthog/models/utils.py) must pass; what none ever produced must not.
const base57 = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';
const body = (length: number, alphabet = base57): string => Array.from({ length }, (_, i) => alphabet[(i * 7) % alphabet.length]).join('');

describe('plausible key shapes', () => {
  it.each([
    ['personal', `phx_${body(48)}`, 'today: base 57 of 35 bytes'],
    ['personal', `phx_${body(49)}`, 'base 57 with its 49th digit'],
    ['personal', `phx_${body(43, '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz')}`, 'base 62 of 32 bytes'],
    ['personal', `phx_${body(64)}`, 'room to spare'],
    ['personal', 'phx_flags_reader', 'a legacy-shaped key (urlsafe text up to 50 characters)'],
    ['personal', 'Ab3-_x9'.repeat(6), 'a key from before prefixes (token_urlsafe)'],
    ['personal', 'eyJhbGciOiJIUzI1NiJ9.eyJpZCI6MX0.c2lnbmF0dXJl', 'a JWT'],
    ['personal', `phs_${body(48)}`, 'a secret key outside the header is tried as a personal key'],
    ['secret', `phs_${body(48)}`, "matches upstream's ^phs_[a-zA-Z0-9]+$"],
    ['secret', 'phs_projectone', 'short, letters only'],
    ['oauth', `pha_${body(44)}`, 'an OAuth access token: base 57 of 32 bytes'],
    ['oauth', `pha_${body(43, '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz')}`, 'an OAuth access token in base 62'],
  ] as const)('%s %s passes (%s)', (kind, key, _why) => expect(plausibleKey(key, kind)).toBe(true));

  it.each([
    ['personal', `phx_${body(65)}`, 'longer than any generator'],
    ['personal', 'phx_with space', 'whitespace'],
    ['personal', 'phx_sem;colon', 'outside every alphabet'],
    ['personal', 'phx_\u00fcmlaut', 'not ASCII'],
    ['personal', `phx_${'-'.repeat(60)}`, 'prefixed, not letters and digits, too long for a legacy key'],
    ['personal', 'x'.repeat(4097), 'a token past 4 KiB'],
    ['personal', '"quoted"', 'quotes'],
    ['secret', 'phs_not-alnum', "upstream's secret-key pattern refuses it"],
    ['secret', 'phs_', 'nothing after the prefix'],
    ['secret', `phs_${body(65)}`, 'longer than any generator'],
    ['oauth', 'pha_not-a-token', 'outside the generator’s alphabet'],
    ['oauth', 'pha_', 'nothing after the prefix'],
    ['oauth', `pha_${body(65)}`, 'longer than any generator'],
  ] as const)('%s %s is refused (%s)', (kind, key, _why) => expect(plausibleKey(key, kind)).toBe(false));
});
