import { describe, expect, it } from 'vitest';
import { answerTtlMs, principalFromRecord } from '../../src/auth/introspect.js';
import type { Principal } from '../../src/auth/principal.js';
import { keyRecordOf } from '../../src/http/routes/key-introspection.js';

// A relay renders what it trusts about a key as upstream's key record; the sidecar behind it reads that record
// with the same parser it uses for PostHog's, and must arrive at the same reach.
describe('key record of a principal, read back', () => {
  const principal = (p: Partial<Principal>): Principal => ({ label: 'k', keyPrefix: 'abcdef012345', scopes: new Set(['*']), projects: null, kind: 'introspected', ...p });
  it.each([
    ['scoped reader', principal({ scopes: new Set(['feature_flag:read']), projects: new Set([1]) })],
    ['several scopes, several projects', principal({ scopes: new Set(['feature_flag:write', 'activity_log:read']), projects: new Set([1, 2]) })],
    ['unrestricted', principal({ scopes: new Set(['*']) })],
    ['legacy key (scopes rendered null, as seed-era upstreams)', principal({ legacy: true })],
    ['static key of the keys file', principal({ kind: 'static', label: 'example app', scopes: new Set(['endpoint:read']), projects: new Set([2]) })],
    ['the sidecar’s own key', principal({ kind: 'own', label: 'sidecar upstream key', scopes: new Set(['feature_flag:read']), projects: new Set([1, 2]) })],
  ])('%s', (_, given) => {
    const record = JSON.parse(JSON.stringify(keyRecordOf(given))) as Record<string, unknown> | null;
    if (record === null) throw new Error('no record');
    const read = principalFromRecord(record, 'abcdef0123456789');
    if (read === null || read === 'refused') throw new Error(`unreadable: ${JSON.stringify(record)}`);
    expect([...read.scopes].sort()).toEqual([...given.scopes].sort());
    expect(read.projects === null ? null : [...read.projects].sort()).toEqual(given.projects === null ? null : [...given.projects].sort());
    expect(read.legacy).toBe(given.legacy === true);
    expect(read.label).toBe(given.label);
    expect(record.value).toBeNull();
  });

  it('renders no record for a key that reaches no project (empty scoped_teams would read as every project)', () => {
    expect(keyRecordOf(principal({ kind: 'static', projects: new Set() }))).toBeNull();
  });
});

describe('lifetime of an introspection answer', () => {
  const ttl = 300_000;
  it.each([
    [undefined, ttl, 'PostHog: no header, the configured TTL'],
    ['120', 120_000, 'a relay keeping it for less: no longer than the relay'],
    ['3600', ttl, 'a relay keeping it for longer: the configured TTL'],
    ['0', 0, 'expiring now at the relay'],
    ['-90', -90_000, 'past its TTL at the relay (outage grace): expired as long ago'],
    [' 60 ', 60_000, 'surrounding spaces'],
    [['30', '600'], 30_000, 'repeated: the first'],
    ['1.5', ttl, 'not whole seconds: ignored'],
    ['abc', ttl, 'not a number: ignored'],
    ['', ttl, 'empty: ignored'],
    ['9999999999999', ttl, 'absurdly long: ignored'],
  ])('%j → %d (%s)', (header, expected, _why) => expect(answerTtlMs(header, ttl)).toBe(expected));
});
