/**
 * The /flags route answers from the body's callback: a request every flag of which the snapshot decides is answered
 * with a reply, not a promise (no promise chain on the hot path); only a gzip body (or upstream) makes it wait.
 * Refusals are the flags service's, thrown or not; a stream error before the body is whole is the answer.
 */
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { createAbsentKeys } from '../../src/eval/absent-keys.js';
import { compileDefinitions } from '../../src/eval/compile.js';
import { later, type Reply } from '../../src/http/router.js';
import { createEvaluationRoutes, type EvaluationRouteDeps } from '../../src/http/routes/evaluate.js';
import { benchUser, makeEvalDefinitions } from '../bench/definitions.js';
import { runFlagsRoute, type RouteOutcome } from '../support/flags-route.js';

const defs = compileDefinitions(makeEvalDefinitions(6));
const counted: Record<string, number> = {};
const deps = {
  store: { projectIdForToken: (token: string) => (token === 'phc_one' ? 1 : undefined), get: () => ({ quotaBody: null, cohorts: { source: 'bootstrap' } }) },
  definitions: () => defs,
  access: {},
  upstream: null,
  upstreamTimeoutMs: 1000,
  maxBodyBytes: 1000,
  metrics: {
    flagEvaluations: { add: (source: string, count: number) => void (counted[source] = (counted[source] ?? 0) + count) },
    cacheLookups: { of: () => ({ hit: 0, miss: 0, coalesced: 0, stale: 0 }) },
  },
  now: () => Date.UTC(2026, 10, 26),
  readThroughReasons: () => ({ status: 500, headers: {}, body: null }),
  absentKeys: createAbsentKeys({ maxKeys: 10, ttlMs: 1000 }),
  staticCohorts: null,
  answers: null,
} as unknown as EvaluationRouteDeps;
const route = createEvaluationRoutes(deps).routes.find((r) => r.name === 'flags_evaluate');

const run = (chunks: Buffer[], headers: Record<string, string> = {}, fail?: Error): Promise<RouteOutcome> => runFlagsRoute(route, chunks, { headers, fail });

// The bench user: the snapshot decides every flag for it (nothing goes upstream).
const body = Buffer.from(
  JSON.stringify({ token: 'phc_one', distinct_id: benchUser.distinctId, person_properties: benchUser.personProperties, groups: benchUser.groups, group_properties: benchUser.groupProperties }),
);

describe('POST /flags, answered from the body callback', () => {
  it('answers a request the snapshot decides with a reply, not a promise', async () => {
    const { returned, answers, errors } = await run([body.subarray(0, 10), body.subarray(10)]);
    expect(returned).toBe(later);
    expect(errors).toEqual([]);
    expect(answers).toHaveLength(1);
    const reply = answers[0] as Reply;
    expect(reply).not.toBeInstanceOf(Promise);
    expect(reply.status).toBe(200);
    expect(reply.headers['x-flag-sidecar-source']).toBe('bootstrap');
    expect(Object.keys((JSON.parse(String(reply.body)) as { flags: object }).flags)).toHaveLength(6);
  });

  it('waits for a gzip body, with the same answer', async () => {
    const { answers } = await run([gzipSync(body)], { 'content-encoding': 'gzip' });
    expect(answers).toHaveLength(1);
    expect(answers[0]).toBeInstanceOf(Promise);
    const reply = await (answers[0] as Promise<Reply>);
    expect(reply.status).toBe(200);
    expect(Object.keys((JSON.parse(String(reply.body)) as { flags: object }).flags)).toHaveLength(6);
  });

  it.each([
    ['malformed JSON', [Buffer.from('{"token":')], {}, 400, /^Failed to decode request: invalid JSON/],
    ['no distinct_id', [Buffer.from('{"token":"phc_one"}')], {}, 400, /^The distinct_id field is missing/],
    ['a body over the limit', [Buffer.alloc(1001, 0x20)], {}, 413, /^Failed to buffer the request body/],
    ['gzip that is not', [Buffer.from('nope')], { 'content-encoding': 'gzip' }, 400, /IO error: unexpected end of file/],
  ] as const)('refuses %s with the flags service\'s plain text', async (_name, chunks, headers, status, text) => {
    const { answers, errors } = await run([...chunks], { ...headers });
    expect(errors).toEqual([]);
    expect(answers).toHaveLength(1);
    const reply = await answers[0];
    expect(reply?.status).toBe(status);
    expect(String(reply?.body)).toMatch(text);
  });

  it('answers a stream error before the body is whole with that error, once', async () => {
    const broken = new Error('aborted');
    const { answers, errors } = await run([body.subarray(0, 10)], {}, broken);
    expect(answers).toEqual([]);
    expect(errors).toEqual([broken]);
  });
});
