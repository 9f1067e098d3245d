import { describe, expect, it } from 'vitest';
import { principalFromRecord } from '../../src/auth/introspect.js';
import {
  admit,
  admitAll,
  keyRecordFromJson,
  keyRecordToJson,
  maxRecordsFileBytes,
  parseKeyRecords,
  principalFacts,
  principalFromFacts,
  serializeKeyRecords,
  type KeyRecord,
} from '../../src/auth/key-records.js';

const digest = 'a'.repeat(64);
const other = 'b'.repeat(64);
const t0 = Date.parse('2026-11-01T00:00:00.000Z');
const minute = 60_000;
const times = { digest, vouchedAt: t0, expiresAt: t0 + 5 * minute, graceUntil: t0 + 65 * minute };
const principal: KeyRecord = {
  type: 'principal',
  ...times,
  principal: { label: 'ci', scopes: ['feature_flag:read'], projects: [1, 2], legacy: false },
};
const refused: KeyRecord = { type: 'refused', ...times };
const grant: KeyRecord = { type: 'grant', ...times, projectId: 7 };
const json = (record: KeyRecord): Record<string, unknown> => keyRecordToJson(record);

describe('key records as JSON', () => {
  it.each([principal, refused, grant, { ...principal, principal: { label: '', scopes: ['*'], projects: null, legacy: true } }] as KeyRecord[])(
    'round-trips %j',
    (record) => expect(keyRecordFromJson(JSON.parse(JSON.stringify(keyRecordToJson(record))))).toEqual(record),
  );

  it.each([
    ['not an object', () => [json(grant)]],
    ['unknown type', () => ({ ...json(grant), type: 'admin' })],
    ['uppercase digest', () => ({ ...json(grant), digest: 'A'.repeat(64) })],
    ['short digest', () => ({ ...json(grant), digest: 'a'.repeat(63) })],
    ['a key instead of a digest', () => ({ ...json(grant), digest: 'phx_secretkey' })],
    ['expiry before vouching', () => ({ ...json(grant), expires_at: '2025-01-01T00:00:00.000Z' })],
    ['grace before expiry', () => ({ ...json(grant), grace_until: '2026-11-01T00:01:00.000Z' })],
    ['a date without time', () => ({ ...json(grant), vouched_at: '2026-11-01' })],
    ['a date as a number', () => ({ ...json(grant), vouched_at: t0 })],
    ['an impossible date', () => ({ ...json(grant), vouched_at: '2026-13-45T00:00:00.000Z' })],
    ['project 0', () => ({ ...json(grant), project_id: 0 })],
    ['project as text', () => ({ ...json(grant), project_id: '7' })],
    ['grant without project', () => ({ ...json(grant), project_id: undefined })],
    ['an unknown field', () => ({ ...json(refused), admin: true })],
    ['a principal field on a grant', () => ({ ...json(grant), scopes: ['*'] })],
    ['no scopes', () => ({ ...json(principal), scopes: [] })],
    ['a scope not text', () => ({ ...json(principal), scopes: [1] })],
    ['an empty scope', () => ({ ...json(principal), scopes: [''] })],
    ['too many scopes', () => ({ ...json(principal), scopes: Array.from({ length: 65 }, (_, i) => `s${i}`) })],
    ['scopes missing', () => ({ ...json(principal), scopes: undefined })],
    ['projects empty (would read as unrestricted elsewhere)', () => ({ ...json(principal), projects: [] })],
    ['projects missing', () => ({ ...json(principal), projects: undefined })],
    ['a negative project', () => ({ ...json(principal), projects: [-1] })],
    ['a label too long', () => ({ ...json(principal), label: 'x'.repeat(257) })],
    ['legacy not boolean', () => ({ ...json(principal), legacy: 'no' })],
  ])('rejects %s', (_name, make) => expect(keyRecordFromJson(JSON.parse(JSON.stringify(make()) ?? 'null'))).toBeNull());
});

describe('admitting a loaded record under the current settings', () => {
  const ttlMs = 5 * minute;
  const graceMs = 60 * minute;
  it.each([
    ['within its TTL: used as is', t0 + minute, ttlMs, graceMs, { expiresAt: t0 + 5 * minute, graceUntil: t0 + 65 * minute }],
    ['within its grace', t0 + 30 * minute, ttlMs, graceMs, { expiresAt: t0 + 5 * minute, graceUntil: t0 + 65 * minute }],
    ['at the end of its grace', t0 + 65 * minute, ttlMs, graceMs, { expiresAt: t0 + 5 * minute, graceUntil: t0 + 65 * minute }],
    ['past its grace', t0 + 65 * minute + 1, ttlMs, graceMs, null],
    ['a shorter TTL now', t0 + minute, 2 * minute, graceMs, { expiresAt: t0 + 2 * minute, graceUntil: t0 + 62 * minute }],
    ['a shorter grace now', t0 + 10 * minute, ttlMs, 10 * minute, { expiresAt: t0 + 5 * minute, graceUntil: t0 + 15 * minute }],
    ['a shorter grace now, past it', t0 + 16 * minute, ttlMs, 10 * minute, null],
    ['a longer TTL and grace now: never longer than written', t0 + minute, 60 * minute, 600 * minute, { expiresAt: t0 - 535 * minute, graceUntil: t0 + 65 * minute }],
    ['a grace of 0 now', t0 + minute, ttlMs, 0, { expiresAt: t0 + 5 * minute, graceUntil: t0 + 5 * minute }],
    ['vouched for in the future', t0 - 1, ttlMs, graceMs, null],
  ])('%s', (_name, now, ttl, grace, expected) => {
    const admitted = admit(grant, { now, ttlMs: ttl, graceMs: grace });
    expect(admitted && { expiresAt: admitted.expiresAt, graceUntil: admitted.graceUntil }).toEqual(expected);
    // The cache using the admitted expiry with the current grace stops trusting exactly at the admitted grace.
    if (admitted) expect(admitted.expiresAt + grace).toBeLessThanOrEqual(admitted.graceUntil);
  });

  it('trusts no record of a file holding one vouched for in the future', () => {
    expect(() => admitAll([grant, { ...refused, vouchedAt: t0 + 1 }], { now: t0, ttlMs: minute, graceMs: minute })).toThrow(/future/);
  });

  it('drops the records past their grace and keeps the others', () => {
    const old = { ...grant, digest: other, vouchedAt: t0 - 100 * minute, expiresAt: t0 - 95 * minute, graceUntil: t0 - 35 * minute };
    expect(admitAll([grant, old], { now: t0 + minute, ttlMs: 5 * minute, graceMs: 60 * minute })).toEqual([grant]);
  });
});

describe('the records file', () => {
  it('round-trips its records in their order (one per key, one per grant)', () => {
    const records = [principal, grant, { ...refused, digest: other }, { ...grant, projectId: 8 }];
    expect(parseKeyRecords(serializeKeyRecords(records, t0, 100), 100)).toEqual(records);
  });

  it('writes at most maxRecords records and at most its byte bound', () => {
    const many = Array.from({ length: 50 }, (_, i): KeyRecord => ({ ...grant, projectId: i + 1 }));
    expect(parseKeyRecords(serializeKeyRecords(many, t0, 20), 20)).toHaveLength(20);
    const big: KeyRecord[] = Array.from({ length: 20 }, (_, i) => ({
      type: 'principal',
      ...times,
      digest: i.toString(16).padStart(64, '0'),
      principal: { label: 'x'.repeat(256), scopes: Array.from({ length: 64 }, (_, j) => `scope:${j}`.padEnd(128, 'x')), projects: null, legacy: false },
    }));
    const text = serializeKeyRecords(big, t0, 10);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(maxRecordsFileBytes(10));
    expect(parseKeyRecords(text, 10).length).toBeGreaterThan(0);
  });

  it('leaves out a record that is not valid rather than writing it', () => {
    const text = serializeKeyRecords([{ ...grant, digest: 'phs_thekeyitself' }, refused], t0, 10);
    expect(text).not.toContain('phs_');
    expect(parseKeyRecords(text, 10)).toEqual([refused]);
  });

  it.each([
    ['empty', ''],
    ['truncated', serializeKeyRecords([principal, grant], t0, 10).slice(0, 100)],
    ['another version', JSON.stringify({ flag_sidecar_key_records: 2, records: [] })],
    ['a snapshot file', JSON.stringify({ flag_sidecar_snapshot: 1, projects: [] })],
    ['records not a list', JSON.stringify({ flag_sidecar_key_records: 1, records: {} })],
    ['one bad record among good ones', JSON.stringify({ flag_sidecar_key_records: 1, records: [json(grant), { ...json(grant), digest: 'x' }] })],
  ])('refuses a file that is %s, as a whole', (_name, text) => expect(() => parseKeyRecords(text, 10)).toThrow());

  it('keeps the first of duplicates and the first maxRecords records', () => {
    const text = JSON.stringify({ flag_sidecar_key_records: 1, records: [json(grant), json({ ...grant, expiresAt: t0 + minute }), json(refused), json({ ...refused, digest: other })] });
    expect(parseKeyRecords(text, 2)).toEqual([grant, refused]);
  });
});

describe('principal facts', () => {
  it.each([
    { scopes: ['feature_flag:read'], scoped_teams: [1, 2], label: 'ci' },
    { scopes: null, scoped_teams: null },
    { scopes: ['*'], scoped_teams: [] },
  ])('rebuild the principal introspection built from %j', (upstreamRecord) => {
    const built = principalFromRecord(upstreamRecord, digest);
    if (built === null || built === 'refused') throw new Error('unexpected');
    expect(principalFromFacts(digest, principalFacts(built))).toEqual({ ...built, legacy: built.legacy === true });
  });
});
