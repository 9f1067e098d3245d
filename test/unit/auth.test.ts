import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { extractCredential, keyKind } from '../../src/auth/credential.js';
import { parseQuery } from '../../src/http/query.js';
import { parseKeysFile } from '../../src/auth/keys-file.js';
import { createPrincipalResolver } from '../../src/auth/principal.js';

const sha = (key: string) => createHash('sha256').update(key).digest('hex');

describe('credential extraction', () => {
  it.each([
    ['Bearer phx_a', null, { key: 'phx_a', source: 'header' }],
    ['  Bearer    phx_a  ', null, { key: 'phx_a', source: 'header' }],
    ['bearer phx_a', null, null],
    ['Basic abc', 'personal_api_key=phx_q', { key: 'phx_q', source: 'query' }],
    [undefined, 'personal_api_key=phx_q', { key: 'phx_q', source: 'query' }],
    ['Bearer phx_h', 'personal_api_key=phx_q', { key: 'phx_h', source: 'header' }],
    [undefined, 'token=phc_x', null],
    [undefined, null, null],
  ])('Authorization %j, query %j → %j', (header, query, expected) => {
    expect(extractCredential(header, query === null ? null : parseQuery(query))).toEqual(expected);
  });

  it.each([
    ['phs_abc', 'secret'],
    ['pha_abc', 'oauth'],
    ['phx_abc', 'personal'],
    ['legacy-no-prefix', 'personal'],
  ])('%s is a %s key', (key, kind) => expect(keyKind(key)).toBe(kind));
});

describe('keys file', () => {
  it('parses entries', () => {
    const keys = parseKeysFile(JSON.stringify({ keys: [{ sha256: sha('k'), label: 'app', scopes: ['feature_flag:read', '*'], projects: [1] }, { sha256: sha('j'), label: 'all', scopes: [] }] }), 'keys.json');
    expect(keys[0]?.digest).toBe(sha('k'));
    expect(keys[0]?.projects).toEqual([1]);
    expect(keys[1]?.projects).toBeNull();
  });

  it('reports every problem with the file name', () => {
    const text = JSON.stringify({ keys: [{ sha256: 'zz', label: '', scopes: ['read everything'], projects: [0] }] });
    expect(() => parseKeysFile(text, 'keys.json')).toThrow(/keys\.json: .*sha256.*label.*scopes.*projects/);
    expect(() => parseKeysFile('{', 'keys.json')).toThrow('keys.json: not valid JSON');
    expect(() => parseKeysFile(JSON.stringify({ keys: [{ sha256: sha('a'), label: 'x', scopes: [] }, { sha256: sha('a'), label: 'y', scopes: [] }] }), 'k')).toThrow('listed twice');
  });
});

describe('principal resolution', () => {
  const resolver = createPrincipalResolver({
    ownKey: 'phs_own',
    ownProjects: [1, 2],
    staticKeys: parseKeysFile(JSON.stringify({ keys: [{ sha256: sha('phx_app'), label: 'app', scopes: ['feature_flag:write'], projects: [2] }] }), 'k'),
  });

  it('knows its own key and the static keys, by digest', () => {
    expect(resolver.resolve('phs_own')).toMatchObject({ kind: 'own', projects: new Set([1, 2]), keyPrefix: sha('phs_own').slice(0, 12) });
    expect(resolver.resolve('phx_app')).toMatchObject({ kind: 'static', label: 'app', projects: new Set([2]) });
    expect(resolver.resolve('phx_other')).toBeNull();
    expect(resolver.resolve('')).toBeNull();
  });

  it('describes keys by label and digest prefix only', () => {
    const shown = JSON.stringify(resolver.describe());
    expect(shown).not.toContain('phs_own');
    expect(shown).toContain(sha('phx_app').slice(0, 12));
  });
});
