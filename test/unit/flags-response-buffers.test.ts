/**
 * The memory of /flags bodies (flags-response.ts assemble): bodies are cut from shared slabs and their stamp is
 * written into room for its longest UTF-8. Each body's bytes are exactly its JSON text's UTF-8, whatever the stamp
 * holds, and stay so while later bodies are assembled (a socket may still be writing one).
 */
import { describe, expect, it } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { legacyBody, reasonsBody, v2Body, type Decided } from '../../src/eval/flags-response.js';
import { noRemote, type RemotePart } from '../../src/eval/remote-part.js';

const defs = compileDefinitions({
  flags: Array.from({ length: 40 }, (_, i) => ({
    id: i,
    key: `flag-${i}-ключ`,
    version: 1,
    name: `Flag ${i} — «名前»`,
    active: true,
    filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: JSON.stringify({ n: i, text: 'x'.repeat(i * 7) }) } },
  })),
  cohorts: {},
});
const decidedFor = (count: number, value: boolean): Decided[] =>
  defs.flags.slice(0, count).map((flag) => ({ flag, value, reason: value ? ('condition_match' as const) : ('no_condition_match' as const), conditionIndex: 0 }));

/** The body's text as the JSON it must be (parsed back and compared), and its bytes as that text's UTF-8. */
function expectUtf8Json(body: Buffer): unknown {
  const text = body.toString('utf8');
  expect(Buffer.compare(body, Buffer.from(text, 'utf8'))).toBe(0);
  return JSON.parse(text);
}

describe('/flags bodies', () => {
  it('write a stamp that is not ASCII byte for byte (request id, quota names)', () => {
    const remote: RemotePart = { ...noRemote(false), quotaLimited: ['feature_flags', 'ünïcode 😀 \ud800'] };
    for (const requestId of ['plain', 'ид-😀', 'lone \udc00 surrogate', 'quote " and \\ and \n']) {
      const stamp = { requestId, evaluatedAt: 1_764_000_000_123 };
      const v2 = v2Body(decidedFor(3, true), remote, stamp);
      const parsed = expectUtf8Json(v2) as Record<string, unknown>;
      expect(parsed.requestId).toBe(JSON.parse(JSON.stringify(requestId)));
      expect(parsed.quotaLimited).toEqual(JSON.parse(JSON.stringify(remote.quotaLimited)));
      expect(v2.toString('utf8').endsWith(`,"requestId":${JSON.stringify(requestId)},"evaluatedAt":1764000000123}`)).toBe(true);
      expectUtf8Json(legacyBody(decidedFor(3, true), remote, stamp));
    }
  });

  it('keep every body intact while many later bodies are assembled, past several slabs', () => {
    const kept: Array<[Buffer, Buffer]> = [];
    for (let round = 0; round < 400; round++) {
      const count = (round * 7) % 41;
      const stamp = { requestId: `request-${round}`, evaluatedAt: round };
      const body = round % 3 === 0 ? legacyBody(decidedFor(count, round % 2 === 0), noRemote(false), stamp) : v2Body(decidedFor(count, round % 2 === 0), noRemote(false), stamp);
      kept.push([body, Buffer.from(body)]);
      expect((expectUtf8Json(body) as { requestId: string }).requestId).toBe(`request-${round}`);
    }
    for (const [body, copy] of kept) expect(Buffer.compare(body, copy)).toBe(0);
    expectUtf8Json(reasonsBody(decidedFor(40, true)));
  });

  it('writes a fresh request id (stamp requestId null) as a random UUID v4, the rest of the body as with that id given', () => {
    const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    const remote: RemotePart = { ...noRemote(true), quotaLimited: ['feature_flags'] };
    const seen = new Set<string>();
    const digits = Array.from({ length: 36 }, () => new Set<string>());
    // 600 ids: past several refills of the 128-id pool of random bytes, both body shapes, with and without quota.
    for (let round = 0; round < 600; round++) {
      const part = round % 2 === 0 ? remote : noRemote(false);
      const stamp = { requestId: null, evaluatedAt: 1_764_000_000_000 + round, minimalFlagCalledEvents: round % 3 === 0 };
      const legacy = round % 5 === 0;
      const decided = decidedFor(round % 7, round % 4 === 0);
      const body = legacy ? legacyBody(decided, part, stamp) : v2Body(decided, part, stamp);
      const id = (expectUtf8Json(body) as { requestId: string }).requestId;
      expect(id).toMatch(uuidV4);
      seen.add(id);
      for (let i = 0; i < 36; i++) digits[i]?.add(id[i] as string);
      const given = { ...stamp, requestId: id };
      expect(body.toString('utf8')).toBe((legacy ? legacyBody(decided, part, given) : v2Body(decided, part, given)).toString('utf8'));
    }
    expect(seen.size).toBe(600);
    // Every free hex digit takes all 16 values over 600 ids; the version digit only 4, the variant's 8, 9, a, b.
    for (let i = 0; i < 36; i++) {
      const expected = [8, 13, 18, 23].includes(i) ? 1 : i === 14 ? 1 : i === 19 ? 4 : 16;
      expect(digits[i]?.size, `position ${i}`).toBe(expected);
    }
  });

  it('gives a body larger than a slab its own memory, exactly its length', () => {
    const many = compileDefinitions({
      flags: Array.from({ length: 600 }, (_, i) => ({ id: i, key: `big-${i}`, version: 1, name: 'n'.repeat(200), active: true, filters: { groups: [] } })),
      cohorts: {},
    });
    const decided = many.flags.map((flag) => ({ flag, value: false, reason: 'no_condition_match' as const, conditionIndex: null }));
    const body = v2Body(decided, noRemote(false), { requestId: 'big', evaluatedAt: 2 });
    expect(body.length).toBeGreaterThan(256 * 1024);
    expect(Object.keys((expectUtf8Json(body) as { flags: object }).flags)).toHaveLength(600);
  });
});
