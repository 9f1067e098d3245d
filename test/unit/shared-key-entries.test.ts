import { describe, expect, it } from 'vitest';
import type { KeyRecord } from '../../src/auth/key-records.js';
import {
  decodeSharedEntry,
  encodeSharedEntry,
  keepUntilOf,
  sharedEntryMaxBytes,
  type SharedEntry,
  type SharedPolicy,
  type SharedSlot,
} from '../../src/fleet/shared-key-entries.js';

const digest = 'a'.repeat(64);
const other = 'b'.repeat(64);
const now = Date.UTC(2026, 0, 1);
const policy: SharedPolicy = { now, ttlMs: 60_000, negativeTtlMs: 5_000, graceMs: 3_600_000 };
const keySlot: SharedSlot = { digest, projectId: null };
const grantSlot: SharedSlot = { digest, projectId: 1 };
const times = (vouchedAt: number, ttl = 60_000, grace = 3_600_000) => ({ digest, vouchedAt, expiresAt: vouchedAt + ttl, graceUntil: vouchedAt + ttl + grace });
const principal = (vouchedAt = now - 1000): KeyRecord => ({
  type: 'principal',
  ...times(vouchedAt),
  principal: { label: 'k', scopes: ['feature_flag:read'], projects: [1], legacy: false },
});
const grant = (projectId = 1, vouchedAt = now - 1000): KeyRecord => ({ type: 'grant', ...times(vouchedAt), projectId });
const unknown = (projectId: number | null, vouchedAt = now - 1000): SharedEntry => ({ kind: 'unknown', digest, projectId, vouchedAt, expiresAt: vouchedAt + 5000 });
const denied = (vouchedAt = now - 1000): SharedEntry => ({
  kind: 'denied',
  digest,
  projectId: 1,
  vouchedAt,
  expiresAt: vouchedAt + 5000,
  denial: { code: 'permission_denied', detail: 'You do not have permission to perform this action.', attr: null },
});
const encoded = (entry: SharedEntry): Buffer => Buffer.from(encodeSharedEntry(entry) as string);
const decode = (raw: Buffer | string, slot: SharedSlot, at: Partial<SharedPolicy> = {}) =>
  decodeSharedEntry(Buffer.isBuffer(raw) ? raw : Buffer.from(raw), slot, { ...policy, ...at });

describe('shared key entries', () => {
  it.each([
    ['a principal', { kind: 'record', record: principal() } as SharedEntry, keySlot],
    ['a refused key', { kind: 'record', record: { type: 'refused', ...times(now - 1000) } } as SharedEntry, keySlot],
    ['a grant', { kind: 'record', record: grant() } as SharedEntry, grantSlot],
    ['an unknown key', unknown(null), keySlot],
    ['an unknown key on a project', unknown(1), grantSlot],
    ['a denial', denied(), grantSlot],
  ])('%s reads back as written', (_, entry, slot) => {
    expect(decode(encoded(entry), slot)).toEqual(entry);
  });

  it.each([
    ['not JSON', 'not json', keySlot],
    ['a JSON array', '[]', keySlot],
    ['oversized', `{"type":"principal","pad":"${'x'.repeat(sharedEntryMaxBytes)}"}`, keySlot],
    ['another key’s principal', encoded({ kind: 'record', record: { ...principal(), digest: other } }), keySlot],
    ['a grant under a key name', encoded({ kind: 'record', record: grant() }), keySlot],
    ['a principal under a grant name', encoded({ kind: 'record', record: principal() }), grantSlot],
    ['another project’s grant', encoded({ kind: 'record', record: grant(2) }), grantSlot],
    ['a refusal of another key', encoded({ ...unknown(null), digest: other } as SharedEntry), keySlot],
    ['a refusal of another project', encoded(unknown(2)), grantSlot],
    ['a key refusal under a grant name', encoded(unknown(null)), grantSlot],
    ['a denial under a key name', encoded({ ...denied(), projectId: 1 } as SharedEntry).toString().replace('"project_id":1', '"project_id":null'), keySlot],
    ['a record with an unknown field', encoded({ kind: 'record', record: grant() }).toString().replace('{', '{"admin":true,'), grantSlot],
    ['a refusal with an unknown field', encoded(unknown(1)).toString().replace('{', '{"admin":true,'), grantSlot],
    ['a principal with too many scopes', JSON.stringify({ ...JSON.parse(encoded({ kind: 'record', record: principal() }).toString()), scopes: Array.from({ length: 65 }, (_, i) => `s${i}`) }), keySlot],
    ['a record vouched for in the future', encoded({ kind: 'record', record: principal(now + 5000) }), keySlot],
    ['a refusal vouched for in the future', encoded(unknown(null, now + 5000)), keySlot],
    ['a denial with a malformed code', encoded(denied()).toString().replace('permission_denied', 'Permission Denied!'), grantSlot],
  ])('%s is invalid', (_, raw, slot) => {
    expect(decode(raw, slot)).toEqual({ kind: 'invalid' });
  });

  it('never extends a record: its expiry is the writer’s, or this sidecar’s TTL if shorter', () => {
    const record = principal(now - 1000);
    const read = decode(encoded({ kind: 'record', record }), keySlot);
    expect(read).toMatchObject({ kind: 'record', record: { expiresAt: record.expiresAt, graceUntil: record.graceUntil } });
    const shorter = decode(encoded({ kind: 'record', record }), keySlot, { ttlMs: 10_000, graceMs: 1000 });
    expect(shorter).toMatchObject({ kind: 'record', record: { expiresAt: now + 9000, graceUntil: now + 10_000 } });
  });

  it('keeps a record past its TTL within its grace (for outages), and drops it after', () => {
    const old = principal(now - 120_000);
    expect(decode(encoded({ kind: 'record', record: old }), keySlot)).toMatchObject({ kind: 'record', record: { expiresAt: now - 60_000 } });
    expect(decode(encoded({ kind: 'record', record: old }), keySlot, { graceMs: 30_000 })).toEqual({ kind: 'expired' });
  });

  it('holds a refusal to the shorter of its own expiry and this sidecar’s negative TTL', () => {
    expect(decode(encoded(unknown(null)), keySlot, { negativeTtlMs: 2000 })).toMatchObject({ kind: 'unknown', expiresAt: now + 1000 });
    expect(decode(encoded(unknown(null, now - 6000)), keySlot)).toEqual({ kind: 'expired' });
  });

  it('reads an entry from a clock slightly ahead as vouched for now', () => {
    const read = decode(encoded({ kind: 'record', record: principal(now + 500) }), keySlot);
    expect(read).toMatchObject({ kind: 'record', record: { vouchedAt: now, expiresAt: now + 60_000 } });
  });

  it('keeps an entry in Redis to the end of its grace (positives) or of its negative TTL', () => {
    expect(keepUntilOf({ kind: 'record', record: principal(now) })).toBe(now + 60_000 + 3_600_000);
    expect(keepUntilOf(unknown(null, now))).toBe(now + 5000);
  });

  it('does not encode what it would not read', () => {
    expect(encodeSharedEntry({ kind: 'record', record: { type: 'principal', ...times(now), principal: { label: 'x'.repeat(300), scopes: ['*'], projects: null, legacy: false } } })).toBeNull();
    expect(encodeSharedEntry({ ...denied(), denial: { code: 'x', detail: 'y'.repeat(600), attr: null } } as SharedEntry)).toBeNull();
  });
});
