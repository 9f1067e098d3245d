/**
 * The OFREP mapping (src/eval/ofrep.ts), table-driven: contexts as PostHog's OpenFeature providers split them, the
 * error codes of bad contexts, variant values, reasons, and the evaluation objects of local and upstream results.
 */
import { describe, expect, it } from 'vitest';
import { compileDefinitions } from '../../src/eval/compile.js';
import { evaluateQuery } from '../../src/eval/flags-response.js';
import { decidedJson, ofrepContext, ofrepReason, OfrepError, remoteJson, variantValue } from '../../src/eval/ofrep.js';

describe('ofrepContext', () => {
  it.each([
    [{ context: { targetingKey: 'u1' } }, { targetingKey: 'u1', personProperties: {}, groups: {}, groupProperties: {} }],
    [
      { context: { targetingKey: 'u1', email: 'a@b.c', age: 31, groups: { company: 'acme' }, group_properties: { company: { plan: 'pro' } } } },
      { targetingKey: 'u1', personProperties: { email: 'a@b.c', age: 31 }, groups: { company: 'acme' }, groupProperties: { company: { plan: 'pro' } } },
    ],
    // posthog-js names the reserved attribute groupProperties
    [
      { context: { targetingKey: 'u1', groupProperties: { company: { plan: 'pro' } } } },
      { targetingKey: 'u1', personProperties: {}, groups: {}, groupProperties: { company: { plan: 'pro' } } },
    ],
  ])('splits %j', (body, expected) => {
    expect(ofrepContext(body)).toEqual(expected);
  });

  it('keeps an attribute named __proto__ as a person property, as /flags does, never as the prototype', () => {
    const { personProperties } = ofrepContext(JSON.parse('{"context":{"targetingKey":"u1","__proto__":{"email":"a@b.c"},"plan":"pro"}}'));
    expect(Object.getPrototypeOf(personProperties)).toBe(Object.prototype);
    expect(Object.entries(personProperties)).toEqual([['__proto__', { email: 'a@b.c' }], ['plan', 'pro']]);
    expect(JSON.stringify(personProperties)).toBe('{"__proto__":{"email":"a@b.c"},"plan":"pro"}');
  });

  it.each([
    [{}, 'TARGETING_KEY_MISSING'],
    [{ context: {} }, 'TARGETING_KEY_MISSING'],
    [{ context: { targetingKey: '' } }, 'TARGETING_KEY_MISSING'],
    [{ context: { targetingKey: null } }, 'TARGETING_KEY_MISSING'],
    [{ context: { targetingKey: 7 } }, 'INVALID_CONTEXT'],
    [{ context: 'u1' }, 'INVALID_CONTEXT'],
    [[], 'INVALID_CONTEXT'],
    ['text', 'INVALID_CONTEXT'],
    [{ context: { targetingKey: 'u1', groups: 'acme' } }, 'INVALID_CONTEXT'],
    [{ context: { targetingKey: 'u1', group_properties: { company: 'pro' } } }, 'INVALID_CONTEXT'],
    [{ context: { targetingKey: 'u1', group_properties: [] } }, 'INVALID_CONTEXT'],
  ])('refuses %j with %s (400)', (body, code) => {
    let thrown: unknown;
    try {
      ofrepContext(body);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(OfrepError);
    expect({ status: (thrown as OfrepError).status, code: (thrown as OfrepError).errorCode }).toEqual({ status: 400, code });
  });
});

describe('variantValue', () => {
  it.each([
    ['control', 'control'],
    ['2', 2],
    ['-1.5', -1.5],
    ['1e3', 1000],
    ['', ''],
    [' ', ' '],
    ['Infinity', 'Infinity'],
    ['0x10', 16],
    ['12abc', '12abc'],
  ])('%j → %j', (variant, value) => {
    expect(variantValue(variant)).toBe(value);
  });
});

const defs = compileDefinitions({
  flags: [
    { id: 1, key: 'full', version: 2, active: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '{"a": 1}' } } },
    { id: 2, key: 'half', version: 1, active: true, filters: { groups: [{ properties: [], rollout_percentage: 50 }] } },
    {
      id: 3,
      key: 'mv',
      version: 5,
      active: true,
      filters: {
        groups: [{ properties: [{ key: 'plan', type: 'person', value: ['pro'], operator: 'exact' }], rollout_percentage: 100, variant: 'b' }, { properties: [], rollout_percentage: 100 }],
        multivariate: { variants: [{ key: 'a', rollout_percentage: 50 }, { key: 'b', rollout_percentage: 50 }] },
        payloads: { b: '{"color": "blue"}' },
      },
    },
    { id: 4, key: 'numbers', version: 1, active: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }], multivariate: { variants: [{ key: '10', rollout_percentage: 100 }] } } },
    { id: 5, key: 'off', version: 1, active: false, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } },
    { id: 6, key: 'targeted', version: 1, active: true, filters: { groups: [{ properties: [{ key: 'plan', type: 'person', value: ['pro'], operator: 'exact' }], rollout_percentage: 100 }] } },
  ],
  group_type_mapping: {},
  cohorts: {},
});

const ofrepOf = (key: string, distinctId: string, person: Record<string, unknown> = {}): Record<string, unknown> => {
  const answer = evaluateQuery(defs, { distinctId, personProperties: person, groups: {}, groupProperties: {}, flagKeys: [key], runtime: 'all', contexts: null }, 0);
  const decided = answer.decided[0];
  if (decided === undefined) throw new Error(`${key} undecided`);
  return JSON.parse(decidedJson(decided)) as Record<string, unknown>;
};

// Users found by evaluating: 'half' is on for user-1 and off for user-2; 'mv' splits user-1 to variant a.
describe('decidedJson: values, variants, payloads and reasons of local results', () => {
  it.each([
    ['full', 'user-1', {}, { value: true, reason: 'TARGETING_MATCH', metadata: { flagId: 1, version: 2, payload: '{"a": 1}', posthogReason: 'condition_match' } }],
    ['half', 'user-1', {}, { value: true, reason: 'SPLIT', metadata: { flagId: 2, version: 1, posthogReason: 'condition_match' } }],
    ['half', 'user-2', {}, { value: false, reason: 'SPLIT', metadata: { flagId: 2, version: 1, posthogReason: 'out_of_rollout_bound' } }],
    ['mv', 'user-1', { plan: 'pro' }, { value: 'b', variant: 'b', reason: 'TARGETING_MATCH', metadata: { flagId: 3, version: 5, payload: '{"color": "blue"}', posthogReason: 'condition_match' } }],
    ['mv', 'user-1', {}, { value: 'a', variant: 'a', reason: 'SPLIT', metadata: { flagId: 3, version: 5, posthogReason: 'condition_match' } }],
    ['numbers', 'user-1', {}, { value: 10, variant: '10', reason: 'TARGETING_MATCH', metadata: { flagId: 4, version: 1, posthogReason: 'condition_match' } }],
    ['targeted', 'user-1', { plan: 'free' }, { value: false, reason: 'DEFAULT', metadata: { flagId: 6, version: 1, posthogReason: 'no_condition_match' } }],
    ['targeted', 'user-1', { plan: 'pro' }, { value: true, reason: 'TARGETING_MATCH', metadata: { flagId: 6, version: 1, posthogReason: 'condition_match' } }],
  ])('%s for %s %j', (key, user, person, expected) => {
    expect(ofrepOf(key, user, person)).toEqual({ key, ...expected });
  });

  it('has no result for an inactive flag: upstream\'s /flags leaves it out, so the route answers FLAG_NOT_FOUND', () => {
    const answer = evaluateQuery(defs, { distinctId: 'user-1', personProperties: {}, groups: {}, groupProperties: {}, flagKeys: ['off'], runtime: 'all', contexts: null }, 0);
    expect(answer).toMatchObject({ decided: [], undecided: [] });
  });
});

describe('ofrepReason', () => {
  it.each([
    ['flag_disabled', null, null, 'DISABLED'],
    ['super_condition_value', 0, null, 'TARGETING_MATCH'],
    ['out_of_rollout_bound', 0, null, 'SPLIT'],
    ['holdout_condition_value', null, 'holdout', 'SPLIT'],
    ['no_condition_match', null, null, 'DEFAULT'],
    ['no_group_type', null, null, 'DEFAULT'],
    ['condition_match', null, null, 'TARGETING_MATCH'],
    ['something_new', null, null, 'DEFAULT'],
  ])('%s → %s', (code, index, variant, reason) => {
    expect(ofrepReason(undefined, code, index, variant)).toBe(reason);
  });
});

describe('remoteJson: results upstream decided', () => {
  it.each([
    [
      '"srv":{"key":"srv","enabled":true,"variant":null,"reason":{"code":"condition_match","condition_index":0},"metadata":{"id":9,"version":3,"payload":"{\\"x\\":1}"}}',
      { key: 'srv', value: true, reason: 'TARGETING_MATCH', metadata: { flagId: 9, version: 3, payload: '{"x":1}', posthogReason: 'condition_match' } },
    ],
    [
      '"srv":{"key":"srv","enabled":true,"variant":"3","reason":{"code":"condition_match","condition_index":0},"metadata":{"id":9,"version":3}}',
      { key: 'srv', value: 3, variant: '3', reason: 'TARGETING_MATCH', metadata: { flagId: 9, version: 3, posthogReason: 'condition_match' } },
    ],
    ['"srv":{"key":"srv","enabled":false,"reason":{"code":"flag_disabled"}}', { key: 'srv', value: false, reason: 'DISABLED', metadata: { posthogReason: 'flag_disabled' } }],
  ])('%s', (fragment, expected) => {
    const result = remoteJson(fragment, () => undefined);
    expect(result?.key).toBe('srv');
    expect(JSON.parse(result?.json ?? 'null')).toEqual(expected);
  });

  it('takes SPLIT from the definition the snapshot holds', () => {
    const fragment = '"half":{"key":"half","enabled":true,"variant":null,"reason":{"code":"condition_match","condition_index":0},"metadata":{"id":2,"version":1}}';
    expect(JSON.parse(remoteJson(fragment, (key) => defs.byKey.get(key))?.json ?? 'null').reason).toBe('SPLIT');
  });

  it('is null for an entry that is not a flag result', () => {
    expect(remoteJson('"srv":7', () => undefined)).toBeNull();
  });
});
