import { describe, expect, it } from 'vitest';
import { principalFromRecord } from '../../src/auth/introspect.js';

describe('principal from upstream key record', () => {
  it.each([
    [{ scopes: ['feature_flag:read'], scoped_teams: [1, 2], label: 'ci' }, ['feature_flag:read'], [1, 2], 'ci'],
    [{ scopes: [], scoped_teams: [] }, ['*'], null, 'personal API key'],
    [{ scopes: null, scoped_teams: null }, ['*'], null, 'personal API key'],
    [{ scopes: ['*'], scoped_teams: ['x', 3] }, ['*'], [3], 'personal API key'],
  ])('%j', (record, scopes, projects, label) => {
    const principal = principalFromRecord(record, 'abcdef0123456789');
    expect(principal && [...principal.scopes]).toEqual(scopes);
    expect(principal?.projects === null ? null : principal && [...(principal.projects ?? [])]).toEqual(projects);
    expect(principal?.label).toBe(label);
    expect(principal?.keyPrefix).toBe('abcdef012345');
    expect(principal?.kind).toBe('introspected');
  });

  it.each([null, 'x', [1]])('refuses %j', (record) => expect(principalFromRecord(record, 'ab')).toBeNull());
});
