import { describe, expect, it } from 'vitest';
import { parseDefinitions, validateDefinitions } from '../../src/upstream/payload.js';
import { exampleDefinitions } from '../support/fixtures.js';

const flag = (extra: Record<string, unknown> = {}) => ({ id: 1, key: 'a', active: true, filters: { groups: [] }, ...extra });

describe('payload validation', () => {
  it('accepts the example local_evaluation body and keeps every field', () => {
    const result = validateDefinitions(exampleDefinitions());
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.flags.map((f) => f.key)).toContain('pricing-experiment');
    expect(result.value.groupTypeMapping).toEqual({ '0': 'company', '1': 'team' });
    expect(Object.keys(result.value.cohorts)).toEqual(['7']);
    expect(result.value.flags[0]?.raw.evaluation_runtime).toBe('all');
  });

  it.each([
    ['no cohorts or mapping (defaults to empty)', { flags: [flag()] }],
    ['null filters', { flags: [flag({ filters: null })] }],
    ['no id', { flags: [{ key: 'a', active: false }] }],
    ['extra top-level fields', { flags: [], property_matching_version: 2, minimal_flag_called_events: true }],
  ])('accepts %s', (_name, body) => expect(validateDefinitions(body).ok).toBe(true));

  it.each([
    ['an array', [], 'not a JSON object'],
    ['no flags', { detail: 'x' }, 'no "flags" array'],
    ['flags not an array', { flags: {} }, 'no "flags" array'],
    ['a flag that is not an object', { flags: [1] }, 'flags[0] is not an object'],
    ['a flag without key', { flags: [flag({ key: '' })] }, 'flags[0].key'],
    ['a non-integer id', { flags: [flag({ id: '7' })] }, 'flags[0].id'],
    ['active not boolean', { flags: [flag({ active: 'yes' })] }, 'flags[0].active'],
    ['deleted not boolean', { flags: [flag({ deleted: 1 })] }, 'flags[0].deleted'],
    ['filters not an object', { flags: [flag({ filters: [] })] }, 'filters is not an object'],
    ['groups not an array', { flags: [flag({ filters: { groups: {} } })] }, 'groups is not an array'],
    ['a group not an object', { flags: [flag({ filters: { groups: [null] } })] }, 'groups[0] is not an object'],
    ['properties not an array', { flags: [flag({ filters: { groups: [{ properties: 'x' }] } })] }, 'properties is not an array'],
    ['variants not an array', { flags: [flag({ filters: { multivariate: { variants: 'x' } } })] }, 'variants is not an array'],
    ['payloads not an object', { flags: [flag({ filters: { payloads: [] } })] }, 'payloads is not an object'],
    ['a bad group_type_mapping', { flags: [], group_type_mapping: { '0': 1 } }, 'group_type_mapping["0"]'],
    ['cohorts not an object', { flags: [], cohorts: [] }, '"cohorts" is not an object'],
    ['a cohort not an object', { flags: [], cohorts: { '1': 'x' } }, 'cohorts["1"]'],
  ])('refuses %s', (_name, body, reason) => {
    const result = validateDefinitions(body);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toContain(reason);
  });

  it.each([
    ['truncated JSON', Buffer.from('{"flags":[{"key":"a"')],
    ['HTML', Buffer.from('<html></html>')],
    ['invalid UTF-8', Buffer.from([0x7b, 0xff, 0x7d])],
    ['empty', Buffer.alloc(0)],
  ])('refuses a raw body that is %s', (_name, body) => {
    const result = parseDefinitions(body);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(/^body is not valid JSON/);
  });
});
