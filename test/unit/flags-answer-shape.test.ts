/**
 * The answer's shape by path, `v` and `config`, as upstream's flags service picks it (PostHog/posthog
 * rust/feature-flags/src/handler/flags.rs: `flags` defaults a request naming neither `v` nor `config` to v2,
 * `get_versioned_response`), and the legacy /decide bodies (api/types.rs DecideV1Response, DecideV2Response: enabled
 * flags only, no errorsWhileComputingFlags), checked against whole expected bodies.
 */
import { describe, expect, it } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { answerShape, decideBody, evaluateQuery, legacyBody, v2Body, type FlagsQuery } from '../../src/eval/flags-response.js';
import { noRemote, remotePart } from '../../src/eval/remote-part.js';

describe('answerShape', () => {
  it.each<[boolean, string | undefined, string | undefined, string]>([
    // /flags (not legacy decide)
    [false, undefined, undefined, 'v2'], // neither v nor config: the newest shape
    [false, '', undefined, 'v2'], // an empty v is none
    [false, undefined, 'true', 'legacy'], // config named: no default version
    [false, undefined, '', 'legacy'], // `?config` alone names it too
    [false, '1', undefined, 'legacy'],
    [false, '2', undefined, 'v2'],
    [false, '3', undefined, 'v2'],
    [false, '2.5', undefined, 'legacy'], // not an i32: 1
    [false, 'abc', undefined, 'legacy'],
    [false, '+2', undefined, 'v2'], // Rust's i32 parse takes a sign
    [false, '99999999999', undefined, 'legacy'], // out of i32: 1
    // /decide
    [true, undefined, undefined, 'decideV1'],
    [true, '1', undefined, 'decideV1'],
    [true, '2', undefined, 'decideV2'],
    [true, '3', undefined, 'legacy'],
    [true, '4', undefined, 'v2'],
    [true, '7', undefined, 'v2'],
    [true, '0', undefined, 'decideV1'],
    [true, '-3', undefined, 'decideV1'],
    [true, 'x', undefined, 'decideV1'],
  ])('decide %s, v %j, config %j → %s', (decide, v, config, shape) => {
    expect(answerShape(decide, v, config)).toBe(shape);
  });
});

describe('legacy /decide bodies', () => {
  const flag = (id: number, key: string, rollout: number, extra: Record<string, unknown> = {}) => ({
    id,
    key,
    version: 1,
    name: key,
    active: true,
    filters: { groups: [{ properties: [], rollout_percentage: rollout }], payloads: { true: '{"p":1}' }, ...extra },
  });
  const defs = compileDefinitions({
    flags: [flag(1, 'on', 100), flag(2, 'off', 0), flag(3, 'multi', 100, { multivariate: { variants: [{ key: 'only', rollout_percentage: 100 }] } })],
    cohorts: {},
  });
  const query: FlagsQuery = { distinctId: 'u1', personProperties: {}, groups: {}, groupProperties: {}, flagKeys: null, runtime: 'all', contexts: null };
  const { decided } = evaluateQuery(defs, query, 0);
  const upstreamAnswer = {
    flags: {
      up: { key: 'up', enabled: true, variant: 'blue', metadata: { payload: null } },
      down: { key: 'down', enabled: false, variant: null, metadata: { payload: null } },
    },
    errorsWhileComputingFlags: false,
  };
  const remote = remotePart(Buffer.from(JSON.stringify(upstreamAnswer)), ['up', 'down']);
  const stamp = { requestId: 'req-1', evaluatedAt: 1700000000000 };

  it('v1 lists the enabled keys, the sidecar\'s and upstream\'s', () => {
    expect(decideBody(1, decided, remote, stamp).toString()).toBe('{"featureFlags":["on","multi","up"],"requestId":"req-1","evaluatedAt":1700000000000}');
  });

  it('v2 maps the enabled keys to their values', () => {
    expect(decideBody(2, decided, remote, stamp).toString()).toBe('{"featureFlags":{"on":true,"multi":"only","up":"blue"},"requestId":"req-1","evaluatedAt":1700000000000}');
  });

  it('carries quotaLimited before the request id, and a fresh request id when none is given', () => {
    const body = decideBody(1, [], { ...noRemote(false), quotaLimited: ['feature_flags'] }, { requestId: null, evaluatedAt: 5 }).toString();
    expect(body).toMatch(/^\{"featureFlags":\[\],"quotaLimited":\["feature_flags"\],"requestId":"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}","evaluatedAt":5\}$/);
  });

  it('v3 and v4 keep the flags shapes', () => {
    expect(Object.keys(JSON.parse(legacyBody(decided, noRemote(false), stamp).toString())).sort()).toEqual(['errorsWhileComputingFlags', 'evaluatedAt', 'featureFlagPayloads', 'featureFlags', 'requestId']);
    expect(Object.keys(JSON.parse(v2Body(decided, noRemote(false), stamp).toString())).sort()).toEqual(['errorsWhileComputingFlags', 'evaluatedAt', 'flags', 'requestId']);
  });
});
