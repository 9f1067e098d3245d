/**
 * Whole /flags answers kept for a body sent again (src/http/answer-cache.ts), through the route without a socket:
 * a kept answer is the fresh one but for its stamp (a new request id, the request's own evaluatedAt), and it is
 * evaluated afresh whenever anything it was decided from may have changed: the definitions, the static cohorts'
 * membership, the token's project, the quota, the runtime the headers name, the path and query, or the clock past
 * a relative date filter's turning point.
 */
import { gzipSync } from 'node:zlib';
import { beforeEach, describe, expect, it } from 'vitest';
import { createAbsentKeys } from '../../src/eval/absent-keys.js';
import { compileDefinitions, type CompiledDefinitions } from '../../src/eval/compile.js';
import { AnswerCache, bytesDigest } from '../../src/http/answer-cache.js';
import type { SplitReply } from '../../src/http/respond.js';
import { createEvaluationRoutes, type EvaluationRouteDeps } from '../../src/http/routes/evaluate.js';
import type { Reply } from '../../src/http/router.js';
import { benchUser, makeEvalDefinitions } from '../bench/definitions.js';
import { runFlagsRoute } from '../support/flags-route.js';

const hour = 3_600_000;
const day = 24 * hour;
const start = Date.UTC(2026, 10, 26, 12);

/** What the route reads, changed by the tests between requests. */
interface World {
  defs: Map<number, CompiledDefinitions>;
  tokens: Map<string, number>;
  quotaBody: Buffer | null;
  membership: ReadonlyMap<string, ReadonlySet<string>>;
  now: number;
  readonly lookups: { hit: number; miss: number; coalesced: number; stale: number };
  readonly counted: Record<string, number>;
  readonly answers: AnswerCache;
}

/** An upstream answering every /flags call with nothing (the keys asked are absent there), counting the calls. */
const absentUpstream = (calls: { count: number }) => ({
  request: async () => {
    calls.count += 1;
    return { kind: 'response', status: 200, headers: {}, body: Buffer.from('{"flags":{},"errorsWhileComputingFlags":false}') };
  },
});

function routeFor(world: World, upstream: unknown = null) {
  const deps = {
    store: {
      projectIdForToken: (token: string) => world.tokens.get(token),
      get: () => ({ quotaBody: world.quotaBody, cohorts: { source: 'upstream' } }),
    },
    definitions: (id: number) => world.defs.get(id) ?? null,
    access: {},
    upstream,
    upstreamTimeoutMs: 1000,
    maxBodyBytes: 64 * 1024,
    metrics: {
      flagEvaluations: { add: (source: string, count: number) => void (world.counted[source] = (world.counted[source] ?? 0) + count) },
      cacheLookups: { of: () => world.lookups },
    },
    now: () => world.now,
    readThroughReasons: () => ({ status: 500, headers: {}, body: null }),
    absentKeys: createAbsentKeys({ maxKeys: 10, ttlMs: 1000 }),
    staticCohorts: { membership: () => world.membership },
    answers: world.answers,
  } as unknown as EvaluationRouteDeps;
  return createEvaluationRoutes(deps).routes.find((r) => r.name === 'flags_evaluate');
}

let world: World;
let route: ReturnType<typeof routeFor>;

beforeEach(() => {
  world = {
    defs: new Map([[1, compileDefinitions(makeEvalDefinitions(30))]]),
    tokens: new Map([['phc_one', 1]]),
    quotaBody: null,
    membership: new Map(),
    now: start,
    lookups: { hit: 0, miss: 0, coalesced: 0, stale: 0 },
    counted: {},
    answers: new AnswerCache(1024 * 1024),
  };
  route = routeFor(world);
});

interface Answer {
  readonly reply: Reply;
  /** The whole body as the socket gets it (a kept answer's head and its fresh stamp). */
  readonly text: string;
  readonly json: Record<string, unknown>;
  /** The reply reused a kept answer. */
  readonly kept: boolean;
}

async function ask(body: unknown, options: { headers?: Record<string, string>; path?: string; rawQuery?: string; gzip?: boolean } = {}): Promise<Answer> {
  const raw = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  const headers = { ...options.headers, ...(options.gzip ? { 'content-encoding': 'gzip' } : {}) };
  const { answers, errors } = await runFlagsRoute(route, [options.gzip ? gzipSync(raw) : raw], { headers, path: options.path, rawQuery: options.rawQuery });
  expect(errors).toEqual([]);
  expect(answers).toHaveLength(1);
  const reply = await (answers[0] as Reply | Promise<Reply>);
  const tail = (reply as Partial<SplitReply>).tail;
  const bytes = tail === undefined ? (reply.body as Buffer) : Buffer.concat([reply.body as Buffer, tail]);
  expect(reply.headers['content-length']).toBe(String(bytes.length));
  const text = bytes.toString('utf8');
  return { reply, text, json: JSON.parse(text) as Record<string, unknown>, kept: tail !== undefined };
}

/** The answer without its stamp (what a kept answer must share with a fresh one). */
const unstamped = (answer: Answer): string => answer.text.replace(/"requestId":"[^"]*","evaluatedAt":\d+/, '"requestId":…');

const benchBody = { token: 'phc_one', distinct_id: benchUser.distinctId, person_properties: benchUser.personProperties, groups: benchUser.groups, group_properties: benchUser.groupProperties };
const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Ask three times (the third is the first a kept answer can serve): the three answers. */
async function thrice(body: unknown, options: Parameters<typeof ask>[1] = {}): Promise<Answer[]> {
  return [await ask(body, options), await ask(body, options), await ask(body, options)];
}

describe('kept /flags answers', () => {
  it('answers a body met twice before from its kept answer: the same flags, a fresh request id, its own evaluatedAt', async () => {
    const first = await ask(benchBody);
    world.now += 5;
    const second = await ask(benchBody);
    world.now += 5;
    const third = await ask(benchBody);
    expect([first.kept, second.kept, third.kept]).toEqual([false, false, true]);
    expect(unstamped(third)).toBe(unstamped(first));
    // 30 flags, two of them inactive: left out, as upstream's flags service evaluates only active flags.
    expect(Object.keys(third.json.flags as object)).toHaveLength(28);
    const ids = [first, second, third].map((a) => a.json.requestId as string);
    for (const id of ids) expect(id).toMatch(uuidV4);
    expect(new Set(ids).size).toBe(3);
    expect([first, second, third].map((a) => a.json.evaluatedAt)).toEqual([start, start + 5, start + 10]);
    expect(third.reply.headers['x-flag-sidecar-source']).toBe('upstream');
    expect(world.lookups).toMatchObject({ hit: 1, miss: 2 });
    // The evaluations are counted as when evaluated: every decided flag, each time.
    expect(world.counted.local).toBe(84);
    // Each reuse gets its own stamp.
    const more = await Promise.all([ask(benchBody), ask(benchBody)]);
    expect(more.every((a) => a.kept)).toBe(true);
    expect(more[0]?.json.requestId).not.toBe(more[1]?.json.requestId);
  });

  it('evaluates a body differing by one byte afresh', async () => {
    await thrice(benchBody);
    const other = await ask({ ...benchBody, distinct_id: `${benchUser.distinctId}x` });
    expect(other.kept).toBe(false);
    const spaced = await ask(` ${JSON.stringify(benchBody)}`);
    expect(spaced.kept).toBe(false);
    expect(unstamped(spaced)).toBe(unstamped(await ask(benchBody)));
  });

  it.each([
    [
      'new definitions (a re-poll, a write made visible)',
      () => {
        const raw = makeEvalDefinitions(30) as { flags: Array<{ active: boolean }> };
        for (const flag of raw.flags) flag.active = false;
        world.defs.set(1, compileDefinitions(raw));
      },
      // Every flag inactive now: none is in the answer (upstream evaluates only active flags).
      (a: Answer) => Object.keys(a.json.flags as object).length === 0,
    ],
    [
      'the token now naming another project',
      () => {
        world.tokens.set('phc_one', 2);
        world.defs.set(2, compileDefinitions(makeEvalDefinitions(4)));
      },
      (a: Answer) => Object.keys(a.json.flags as object).length === 4,
    ],
    [
      'a quota limit',
      () => void (world.quotaBody = Buffer.from('{}')),
      (a: Answer) => JSON.stringify(a.json.quotaLimited) === '["feature_flags"]' && Object.keys(a.json.flags as object).length === 0,
    ],
    ['new static cohort membership', () => void (world.membership = new Map([['7', new Set(['someone'])]])), (a: Answer) => Object.keys(a.json.flags as object).length === 28],
  ])('evaluates afresh after %s', async (_name, change, fresh) => {
    const before = await thrice(benchBody);
    expect(before[2]?.kept).toBe(true);
    change();
    const after = await ask(benchBody);
    expect(after.kept).toBe(false);
    expect(fresh(after)).toBe(true);
    expect(world.lookups.miss).toBe(3);
    // The stale answer is gone: nothing of the old definitions or members is held; what is kept now is current.
    const raw = Buffer.from(JSON.stringify(benchBody));
    const kept = world.answers.get(bytesDigest(raw), raw);
    if (world.quotaBody !== null) expect(kept).toBeUndefined();
    else {
      expect(kept?.defs.deref()).toBe(world.defs.get(kept?.projectId ?? 0));
      expect(kept?.membership?.deref()).toBe(world.membership);
    }
  });

  it('keeps answers apart by path and query: a legacy body is never a v2 answer', async () => {
    await thrice(benchBody);
    // One answer per body: the v2 one is not the legacy one, which then takes its place.
    const legacy = await thrice(benchBody, { rawQuery: 'v=1' });
    expect(legacy.map((a) => a.kept)).toEqual([false, true, true]);
    expect(Object.keys(legacy[2]?.json ?? {})).toEqual(['featureFlags', 'featureFlagPayloads', 'errorsWhileComputingFlags', 'requestId', 'evaluatedAt']);
    expect(unstamped(legacy[2] as Answer)).toBe(unstamped(legacy[0] as Answer));
    const decide = await thrice(benchBody, { path: '/decide', rawQuery: 'v=4' });
    expect(decide[2]?.kept).toBe(true);
    expect(decide[2]?.json.flags).toBeDefined();
  });

  it('ends a kept v2 answer with the slim-events opt-in when the project has it; a legacy one never', async () => {
    world.defs.set(1, compileDefinitions({ ...(makeEvalDefinitions(10) as object), minimal_flag_called_events: true }));
    const v2 = await thrice(benchBody);
    expect(v2[2]?.kept).toBe(true);
    expect(v2[2]?.json.minimalFlagCalledEvents).toBe(true);
    expect(v2[2]?.text.endsWith(',"minimalFlagCalledEvents":true}')).toBe(true);
    const legacy = await thrice(benchBody, { rawQuery: 'v=1' });
    expect(legacy[2]?.kept).toBe(true);
    expect(legacy[2]?.json.minimalFlagCalledEvents).toBeUndefined();
  });

  it('reuses an answer only for the runtime its headers named, when a flag is limited to one', async () => {
    const flag = (key: string, runtime: string) => ({ id: key.length, key, active: true, evaluation_runtime: runtime, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
    world.defs.set(1, compileDefinitions({ flags: [flag('server-only', 'server'), flag('everywhere', 'all')], group_type_mapping: {}, cohorts: {} }));
    const body = { token: 'phc_one', distinct_id: 'someone' };
    const server = await thrice(body, { headers: { 'user-agent': 'posthog-node/5.0.0' } });
    expect(server[2]?.kept).toBe(true);
    expect(Object.keys(server[2]?.json.flags as object)).toEqual(['server-only', 'everywhere']);
    const browser = await ask(body, { headers: { 'user-agent': 'Mozilla/5.0 Chrome/120.0' } });
    expect(browser.kept).toBe(false);
    expect(Object.keys(browser.json.flags as object)).toEqual(['everywhere']);
    // A runtime the body names makes the headers irrelevant.
    const named = await thrice({ ...body, evaluation_runtime: 'server' }, { headers: { 'user-agent': 'posthog-node/5.0.0' } });
    expect((await ask({ ...body, evaluation_runtime: 'server' }, { headers: { 'user-agent': 'Mozilla/5.0' } })).kept).toBe(true);
    expect(named[2]?.kept).toBe(true);
  });

  it('never keeps an answer with a key answered absent from memory of upstream\'s answer (that memory expires)', async () => {
    const calls = { count: 0 };
    route = routeFor(world, absentUpstream(calls));
    const body = { ...benchBody, flag_keys_to_evaluate: ['gone-flag', (makeEvalDefinitions(30) as { flags: Array<{ key: string }> }).flags[0]?.key] };
    const answers = await thrice(body);
    expect(calls.count).toBe(1);
    expect(answers.map((a) => a.kept)).toEqual([false, false, false]);
    expect(Object.keys(answers[2]?.json.flags as object)).toHaveLength(1);
    expect(world.answers.size).toBe(0);
  });

  it('never keeps an answer with flags only upstream could decide, nor a gzip body', async () => {
    const undecided = await thrice({ ...benchBody, flag_keys_to_evaluate: ['not-in-snapshot'] });
    expect(undecided.map((a) => a.kept)).toEqual([false, false, false]);
    expect(undecided[2]?.json.errorsWhileComputingFlags).toBe(true);
    const gzip = await thrice(benchBody, { gzip: true });
    expect(gzip.map((a) => a.kept)).toEqual([false, false, false]);
    expect(world.answers.size).toBe(0);
  });
});

describe('kept answers and date filters relative to now', () => {
  const onDate = (operator: string, value: string) => ({
    flags: [{ id: 1, key: 'dated', active: true, filters: { groups: [{ properties: [{ key: 'signup', type: 'person', operator, value }], rollout_percentage: 100 }] } }],
    group_type_mapping: {},
    cohorts: {},
  });
  const person = (signup: number) => ({ token: 'phc_one', distinct_id: 'p', person_properties: { signup: new Date(signup).toISOString() } });
  const enabled = (a: Answer): boolean => (a.json.flags as Record<string, { enabled: boolean }>).dated?.enabled as boolean;

  it('reuses a verdict that will turn only until the instant it turns', async () => {
    // Signed up 29 days and 1 hour ago: "after -30d" holds for 23 more hours.
    world.defs.set(1, compileDefinitions(onDate('is_date_after', '-30d')));
    const body = person(start - 29 * day - hour);
    const first = await thrice(body);
    expect(first.map(enabled)).toEqual([true, true, true]);
    expect(first[2]?.kept).toBe(true);
    world.now = start + 23 * hour - 1;
    const last = await ask(body);
    expect([last.kept, enabled(last)]).toEqual([true, true]);
    world.now = start + 23 * hour;
    const turned = await ask(body);
    expect([turned.kept, enabled(turned)]).toEqual([false, false]);
  });

  it.each([
    ['a "before" verdict that holds', 'is_date_before', '-30d', start - 60 * day, true],
    ['an "after" verdict that does not hold', 'is_date_after', '-30d', start - 60 * day, false],
  ])('reuses %s for good (hours, days and weeks move only one way)', async (_name, operator, value, signup, verdict) => {
    world.defs.set(1, compileDefinitions(onDate(operator, value)));
    const answers = await thrice(person(signup));
    expect(answers.map(enabled)).toEqual([verdict, verdict, verdict]);
    world.now = start + 400 * day;
    const later = await ask(person(signup));
    expect([later.kept, enabled(later)]).toEqual([true, verdict]);
  });

  it('evaluates afresh when the clock is set back before the kept answer was evaluated', async () => {
    world.defs.set(1, compileDefinitions(onDate('is_date_before', '-30d')));
    // Signed up 30 days and 1 s ago: "before -30d" holds from now on, and did not 2 s ago.
    const body = person(start - 30 * day - 1000);
    world.now = start;
    const kept = await thrice(body);
    expect([kept[2]?.kept, enabled(kept[2] as Answer)]).toEqual([true, true]);
    world.now = start - 2000;
    const earlier = await ask(body);
    expect([earlier.kept, enabled(earlier)]).toEqual([false, false]);
  });

  it('reuses a verdict on months or years until the end of the UTC day at most', async () => {
    world.defs.set(1, compileDefinitions(onDate('is_date_before', '-1m')));
    const body = person(start - 90 * day);
    expect((await thrice(body))[2]?.kept).toBe(true);
    world.now = Date.UTC(2026, 10, 26, 23, 59, 59, 999);
    expect((await ask(body)).kept).toBe(true);
    world.now = Date.UTC(2026, 10, 27);
    const nextDay = await ask(body);
    expect([nextDay.kept, enabled(nextDay)]).toEqual([false, true]);
  });
});

describe('AnswerCache', () => {
  const answer = (bytes: number) => () => ({ head: Buffer.alloc(bytes), path: '', rawQuery: '' }) as never;
  const raw = (body: string): Buffer => Buffer.from(body, 'latin1');
  /** As the route calls it: the body's digest and its bytes. */
  const offer = (cache: AnswerCache, body: string, made: () => never, digest = bytesDigest(raw(body))): void => cache.offer(digest, raw(body), made);
  const get = (cache: AnswerCache, body: string, digest = bytesDigest(raw(body))) => cache.get(digest, raw(body));

  it('keeps a body from its second offer on', () => {
    const cache = new AnswerCache(64 * 1024);
    offer(cache, 'a', answer(10));
    expect(get(cache, 'a')).toBeUndefined();
    offer(cache, 'a', answer(10));
    expect(get(cache, 'a')?.head.length).toBe(10);
    // Kept already: replaced at once.
    offer(cache, 'a', answer(20));
    expect(get(cache, 'a')?.head.length).toBe(20);
    cache.drop(bytesDigest(raw('a')), raw('a'));
    expect([get(cache, 'a'), cache.size]).toEqual([undefined, 0]);
  });

  it('is bounded by bytes, least recently used first; one answer takes a quarter at most', () => {
    const cache = new AnswerCache(16 * 1024);
    for (const body of ['a', 'a', 'b', 'b', 'c', 'c']) offer(cache, body, answer(4000 - 400 - 1));
    expect([get(cache, 'a'), get(cache, 'b'), get(cache, 'c')].every((a) => a !== undefined)).toBe(true);
    get(cache, 'a');
    for (const body of ['d', 'd', 'e', 'e']) offer(cache, body, answer(4000 - 400 - 1));
    expect(cache.bytes).toBeLessThanOrEqual(16 * 1024);
    expect(get(cache, 'b')).toBeUndefined();
    expect(get(cache, 'a')).toBeDefined();
    for (const body of ['big', 'big']) offer(cache, body, answer(4 * 1024));
    expect(get(cache, 'big')).toBeUndefined();
  });

  it('counts the body, path and query an answer is kept for', () => {
    const cache = new AnswerCache(64 * 1024);
    const entry = (rawQuery: string) => () => ({ head: Buffer.alloc(10), path: '/flags', rawQuery }) as never;
    for (const body of ['a', 'a']) offer(cache, body, entry('v=2'));
    const small = cache.bytes;
    for (const body of ['b', 'b']) offer(cache, body, entry(`v=2&pad=${'x'.repeat(10_000)}`));
    expect(cache.bytes - small).toBeGreaterThan(small + 10_000 - 10);
    const long = 'y'.repeat(5_000);
    for (const body of [long, long]) offer(cache, body, entry('v=2'));
    expect(get(cache, long)).toBeDefined();
    expect(cache.bytes).toBeGreaterThan(small * 2 + 10_000 + 5_000 - 20);
  });

  it('gives an answer only to the very bytes it was kept for: two bodies with one digest never share one', () => {
    const cache = new AnswerCache(64 * 1024);
    const digest = 12345;
    offer(cache, 'one', answer(11), digest);
    offer(cache, 'one', answer(11), digest);
    expect(get(cache, 'one', digest)?.head.length).toBe(11);
    // Another body with the same digest: never the first one's answer, and dropping it leaves the first one's.
    expect(get(cache, 'two', digest)).toBeUndefined();
    expect(get(cache, 'onf', digest)).toBeUndefined();
    cache.drop(digest, raw('two'));
    expect(get(cache, 'one', digest)?.head.length).toBe(11);
    // Offered, it takes the place (the digest was met: a sight early, as SeenOnce says of two keys with one hash).
    offer(cache, 'two', answer(12), digest);
    expect([get(cache, 'one', digest), get(cache, 'two', digest)?.head.length, cache.size]).toEqual([undefined, 12, 1]);
  });

  it('keeps its own copy of a body: the buffer the socket handed over may be reused', () => {
    const cache = new AnswerCache(64 * 1024);
    const socketBuffer = Buffer.from('xx{"distinct_id":"a"}yy');
    const body = socketBuffer.subarray(2, socketBuffer.length - 2);
    const digest = bytesDigest(body);
    cache.offer(digest, body, answer(10));
    cache.offer(digest, body, answer(10));
    const copy = Buffer.from(body);
    socketBuffer.fill(0x20);
    expect(cache.get(digest, copy)?.head.length).toBe(10);
    expect(cache.get(digest, body)).toBeUndefined();
  });
});

describe('bytesDigest', () => {
  const body = Buffer.from(JSON.stringify({ token: 'phc_bench', distinct_id: benchUser.distinctId, person_properties: benchUser.personProperties }));

  it('is the same for the same bytes wherever they sit in memory, and differs for a byte changed or added', () => {
    const digest = bytesDigest(body);
    for (let offset = 0; offset < 4; offset++) {
      const moved = Buffer.alloc(body.length + offset);
      body.copy(moved, offset);
      expect(bytesDigest(moved.subarray(offset))).toBe(digest);
    }
    const others = new Set<number>([digest]);
    for (const at of [0, 1, 2, 3, body.length - 5, body.length - 1]) {
      const changed = Buffer.from(body);
      changed[at] = (changed[at] as number) ^ 1;
      others.add(bytesDigest(changed));
    }
    for (let extra = 1; extra <= 4; extra++) others.add(bytesDigest(Buffer.concat([body, Buffer.alloc(extra, 0x20)])));
    expect(others.size).toBe(1 + 6 + 4);
  });

  it('spreads one-off bodies over the admission table: 10,000 new persons, few places shared', () => {
    const places = new Set<number>();
    const digests = new Set<number>();
    for (let n = 0; n < 10_000; n++) {
      const digest = bytesDigest(Buffer.from(JSON.stringify({ token: 'phc_bench', distinct_id: `person-${n}` })));
      digests.add(digest);
      places.add(digest & 4095);
    }
    expect(digests.size).toBeGreaterThan(9_990);
    // 10,000 keys thrown into 4,096 places fill ~91% of them when the hash is uniform.
    expect(places.size).toBeGreaterThan(3_600);
  });
});
