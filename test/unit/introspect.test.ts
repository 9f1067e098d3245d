import { describe, expect, it } from 'vitest';
import { principalFromRecord } from '../../src/auth/introspect.js';

describe('principal from upstream key record', () => {
  it.each([
    [{ scopes: ['feature_flag:read'], scoped_teams: [1, 2], label: 'ci' }, ['feature_flag:read'], [1, 2], 'ci'],
    [{ scopes: [], scoped_teams: [] }, ['*'], null, 'personal API key'],
    [{ scopes: null, scoped_teams: null }, ['*'], null, 'personal API key'],
    [{ scopes: ['*'], scoped_organizations: [] }, ['*'], null, 'personal API key'],
  ])('%j', (record, scopes, projects, label) => {
    const principal = principalFromRecord(record, 'abcdef0123456789');
    if (principal === 'refused') throw new Error('unexpected refusal');
    expect(principal && [...principal.scopes]).toEqual(scopes);
    expect(principal?.projects === null ? null : principal && [...(principal.projects ?? [])]).toEqual(projects);
    expect(principal?.label).toBe(label);
    expect(principal?.keyPrefix).toBe('abcdef012345');
    expect(principal?.kind).toBe('introspected');
  });

  it.each([
    null,
    'x',
    [1],
    { scopes: 'feature_flag:read' },
    { scopes: [7] },
    { scopes: ['*'], scoped_teams: ['1'] },
    { scopes: ['*'], scoped_teams: 1 },
    { scopes: ['*'], scoped_organizations: 'org' },
  ])('never reads a malformed record %j as unrestricted', (record) => expect(principalFromRecord(record, 'ab')).toBeNull());

  it('leaves keys scoped to organizations to grants', () => {
    expect(principalFromRecord({ scopes: ['*'], scoped_organizations: ['org-1'] }, 'ab')).toBe('refused');
  });
});
