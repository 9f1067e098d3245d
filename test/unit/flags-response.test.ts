/**
 * The prebuilt /flags response fragments: valid JSON whatever the stored payload holds. The stored payload (JSON
 * text in a string, as upstream keeps it) is sent as that string, as upstream's flags service does.
 */
import { describe, expect, it } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { legacyValueEntry, reasonsEntry, v2Entry } from '../../src/eval/flag-fragments.js';
import { answerEvaluatedAt, evaluateQuery, legacyBody, v2Body, type FlagsQuery } from '../../src/eval/flags-response.js';
import { noRemote, remotePart } from '../../src/eval/remote-part.js';

describe('v2 and legacy fragments', () => {
  it.each([
    ['$&'],
    ['$$'],
    ['$`'],
    ["$'"],
    ['"payload":null}}'],
    ['{"nested":{"a":"$1"}}'],
  ])('splice the payload %j verbatim', (text) => {
    const payload = JSON.stringify(text.startsWith('{') ? JSON.parse(text) : text);
    const defs = compileDefinitions({
      flags: [{ id: 5, key: 'k$&', version: 2, name: 'n', active: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: payload } } }],
      cohorts: {},
    });
    const flag = defs.flags[0] as (typeof defs.flags)[number];
    const decided = { flag, value: true, reason: 'condition_match' as const, conditionIndex: 0 };
    const stamp = { requestId: 'r', evaluatedAt: 1 };
    const parsed = JSON.parse(v2Body([decided], noRemote(false), stamp).toString()).flags;
    expect(parsed).toEqual({
      'k$&': {
        key: 'k$&',
        enabled: true,
        variant: null,
        reason: { code: 'condition_match', condition_index: 0, description: 'Matched condition set 1' },
        metadata: { id: 5, version: 2, description: 'n', has_experiment: true, payload },
      },
    });
    expect(JSON.parse(legacyBody([decided], noRemote(false), stamp).toString()).featureFlagPayloads).toEqual({ 'k$&': payload });
  });
});

describe('remotePart (upstream\'s answer for the undecided keys)', () => {
  const body = (value: unknown) => Buffer.from(JSON.stringify(value));
  const detail = (key: string, variant: string | null, payload: unknown = null) => ({ key, enabled: true, variant, metadata: { payload } });

  it('keeps the wanted keys in both shapes, payloads included', () => {
    const part = remotePart(body({ flags: { a: detail('a', null, '{"x":1}'), b: detail('b', 'test'), c: detail('c', null) }, errorsWhileComputingFlags: false }), ['a', 'b']);
    expect(part.errors).toBe(false);
    expect(JSON.parse(`{${part.details.join(',')}}`)).toEqual({ a: detail('a', null, '{"x":1}'), b: detail('b', 'test') });
    expect(JSON.parse(`{${part.values.join(',')}}`)).toEqual({ a: true, b: 'test' });
    expect(JSON.parse(`{${part.payloads.join(',')}}`)).toEqual({ a: '{"x":1}' });
  });

  it.each<[string, Record<string, unknown>, string[], string[]]>([
    ['a wanted key missing', { flags: {}, errorsWhileComputingFlags: false }, ['a'], ['a']],
    ['a key named like an Object.prototype member', { flags: {} }, ['__proto__', 'toString', 'constructor'], ['__proto__', 'toString', 'constructor']],
    ['a key missing while upstream reports errors', { flags: {}, errorsWhileComputingFlags: true }, ['a'], []],
    ['a key missing from a quota-limited answer', { flags: {}, quotaLimited: ['feature_flags'] }, ['a'], []],
  ])('lists %s as missing (upstream left it out), guessing nothing', (_name, answer, wanted, missing) => {
    const part = remotePart(body(answer), wanted);
    expect(part.missing).toEqual(missing);
    expect(part.errors).toBe(answer.errorsWhileComputingFlags === true);
    expect(part.details).toEqual([]);
  });

  it.each([
    ['an entry that is not an object', { flags: { a: 'yes' } }, ['a']],
    ['no flags map', { featureFlags: {} }, ['a']],
    ['upstream\'s own errors', { flags: { a: detail('a', null) }, errorsWhileComputingFlags: true }, ['a']],
  ])('counts %s as an error and guesses nothing', (_name, answer, wanted) => {
    const part = remotePart(body(answer), wanted);
    expect(part.errors).toBe(true);
    expect(part.details.every((d) => !d.startsWith('"__proto__"') && !d.startsWith('"toString"'))).toBe(true);
    if (!Object.hasOwn(answer, 'errorsWhileComputingFlags')) expect(part.details).toEqual([]);
  });

  it('refuses a body that is not JSON', () => expect(remotePart(Buffer.from('<html>'), null)).toMatchObject({ errors: true, details: [] }));
});

describe('has_experiment and evaluatedAt (what the SDKs put in $feature_flag_called)', () => {
  const defs = compileDefinitions({
    flags: [
      { id: 1, key: 'exp', version: 3, active: true, has_experiment: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } },
      { id: 2, key: 'plain', version: 1, active: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '"p"' } } },
      { id: 3, key: 'none', version: 1, active: true, has_experiment: false, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } },
    ],
    cohorts: {},
  });
  const decided = defs.flags.map((flag) => ({ flag, value: true, reason: 'condition_match' as const, conditionIndex: 0 }));
  const upstreamAt = 1_764_000_000_123;
  const remote = remotePart(Buffer.from(JSON.stringify({ flags: { r: { key: 'r', enabled: true } }, evaluatedAt: upstreamAt })), ['r']);

  // Upstream's flags service reads has_experiment with `#[serde(default = "default_has_experiment")]`, true
  // (rust/feature-flags src/flags/flag_models.rs, FeatureFlag): a definition without it over-preserves events.
  it('says has_experiment in each local flag\'s metadata, as upstream (true when the definition does not say)', () => {
    const flags = JSON.parse(v2Body(decided, noRemote(false), { requestId: 'id', evaluatedAt: 1 }).toString()).flags;
    expect(flags.exp.metadata.has_experiment).toBe(true);
    expect(flags.plain.metadata).toEqual({ id: 2, version: 1, description: null, has_experiment: true, payload: '"p"' });
    expect(flags.none.metadata.has_experiment).toBe(false);
  });

  it.each([
    ['an integer of ms', upstreamAt, upstreamAt],
    ['a string', String(upstreamAt), null],
    ['a fraction', 1.5, null],
    ['zero', 0, null],
    ['negative', -5, null],
    ['beyond a safe integer', 1e300, null],
    ['absent', undefined, null],
  ])('takes upstream\'s evaluatedAt only when it is a plausible ms time: %s', (_name, given, expected) => {
    expect(remotePart(Buffer.from(JSON.stringify({ flags: {}, evaluatedAt: given })), []).evaluatedAt).toBe(expected);
  });

  it.each([
    ['every flag upstream\'s: upstream\'s time', [], remote, upstreamAt],
    ['some flag decided here: the time the sidecar evaluated', decided, remote, 42_000],
    ['upstream sent no usable time', [], { ...remote, evaluatedAt: null }, 42_000],
    ['no flag at all', [], noRemote(false), 42_000],
  ])('stamps the answer with %s', (_name, local, part, expected) => {
    expect(answerEvaluatedAt(local, part, 42_000.7)).toBe(expected);
  });

  it('says minimalFlagCalledEvents in v2 bodies only, and only when true, as upstream', () => {
    const stamp = { requestId: 'r', evaluatedAt: 1 };
    expect(JSON.parse(v2Body(decided, noRemote(false), { ...stamp, minimalFlagCalledEvents: true }).toString()).minimalFlagCalledEvents).toBe(true);
    expect(Object.keys(JSON.parse(v2Body(decided, noRemote(false), { ...stamp, minimalFlagCalledEvents: false }).toString()))).not.toContain('minimalFlagCalledEvents');
    expect(Object.keys(JSON.parse(legacyBody(decided, noRemote(false), { ...stamp, minimalFlagCalledEvents: true }).toString()))).not.toContain('minimalFlagCalledEvents');
    expect(compileDefinitions({ flags: [], minimal_flag_called_events: true }).minimalFlagCalledEvents).toBe(true);
    expect(compileDefinitions({ flags: [], minimal_flag_called_events: 'yes' }).minimalFlagCalledEvents).toBe(false);
    expect(remotePart(Buffer.from('{"flags":{},"minimalFlagCalledEvents":true}'), []).minimalFlagCalledEvents).toBe(true);
  });

  it.each([
    ['v2', v2Body],
    ['legacy', legacyBody],
  ])('puts requestId and evaluatedAt at the top level of the %s body', (_name, build) => {
    const body = JSON.parse(build(decided, remote, { requestId: 'req-1', evaluatedAt: 1_764_000_000_999 }).toString());
    expect(body).toMatchObject({ errorsWhileComputingFlags: false, requestId: 'req-1', evaluatedAt: 1_764_000_000_999 });
  });
});

describe('inactive flags (upstream\'s flags service evaluates only active ones)', () => {
  const defs = compileDefinitions({
    flags: [
      { id: 1, key: 'on', active: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } },
      { id: 2, key: 'off', active: false, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } },
      { id: 3, key: 'unset', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } },
    ],
  });
  const query = (flagKeys: string[] | null, listInactive?: boolean): FlagsQuery => ({
    distinctId: 'u',
    personProperties: {},
    groups: {},
    groupProperties: {},
    flagKeys,
    runtime: 'all',
    contexts: null,
    ...(listInactive === undefined ? {} : { listInactive }),
  });
  const keysOf = (q: FlagsQuery) => {
    const local = evaluateQuery(defs, q, 0);
    return { decided: local.decided.map((d) => `${d.flag.key}:${d.reason}`), undecided: local.undecided };
  };

  it.each<[string, FlagsQuery, unknown]>([
    ['every flag: the inactive ones (active false or absent, as serde\'s default) left out', query(null), { decided: ['on:condition_match'], undecided: [] }],
    ['asked by key: absent, not asked of upstream either', query(['off', 'unset', 'on']), { decided: ['on:condition_match'], undecided: [] }],
    ['evaluation_reasons lists them (Django appends them as "disabled")', query(null, true), { decided: ['on:condition_match', 'off:flag_disabled', 'unset:flag_disabled'], undecided: [] }],
  ])('%s', (_name, q, expected) => expect(keysOf(q)).toEqual(expected));

  it('leaves them out of the v2 and legacy bodies', () => {
    const local = evaluateQuery(defs, query(null), 0).decided;
    const stamp = { requestId: 'r', evaluatedAt: 1 };
    expect(Object.keys(JSON.parse(v2Body(local, noRemote(false), stamp).toString()).flags)).toEqual(['on']);
    expect(Object.keys(JSON.parse(legacyBody(local, noRemote(false), stamp).toString()).featureFlags)).toEqual(['on']);
  });
});

describe('fragment table entries', () => {
  it('hold their own memory, never a slice of node\'s shared Buffer pool (a kept slice keeps its 8 KB slab alive)', () => {
    const defs = compileDefinitions({ flags: [{ id: 1, key: 'k', active: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } }] });
    const fragments = (defs.flags[0] as (typeof defs.flags)[number]).fragments;
    const outcome = { value: true, reason: 'condition_match' as const, conditionIndex: 0 };
    for (const entry of [v2Entry(fragments, outcome), legacyValueEntry(fragments, outcome), reasonsEntry(fragments, outcome)]) {
      expect(entry.buffer.byteLength).toBe(entry.length);
    }
  });
});
