import { describe, expect, it } from 'vitest';
import { createRouter, type Route } from '../../src/http/router.js';

const reply = { status: 200, headers: {}, body: null };
const routes: Route[] = [
  { name: 'list', methods: ['GET', 'POST'], template: '/api/projects/:project_id/feature_flags', handler: () => reply },
  { name: 'one', methods: ['GET', 'PATCH'], template: '/api/projects/:project_id/feature_flags/:id', handler: () => reply },
  { name: 'local', methods: ['GET'], template: '/api/projects/:project_id/feature_flags/local_evaluation', handler: () => reply },
];
const match = createRouter([routes[2] as Route, routes[0] as Route, routes[1] as Route]);

describe('router', () => {
  it.each([
    ['GET', '/api/projects/1/feature_flags', 'list', ['1']],
    ['GET', '/api/projects/1/feature_flags/', 'list', ['1']],
    ['POST', '/api/projects/@current/feature_flags/', 'list', ['@current']],
    ['GET', '/api/projects/1/feature_flags/7/', 'one', ['1', '7']],
    ['HEAD', '/api/projects/1/feature_flags/7', 'one', ['1', '7']],
    ['GET', '/api/projects/1/feature_flags/local_evaluation/', 'local', ['1']],
    ['GET', '/api/projects/a%20b/feature_flags', 'list', ['a b']],
  ])('%s %s → %s %j', (method, path, name, params) => {
    const m = match(method, path);
    expect(m.kind).toBe('found');
    if (m.kind === 'found') {
      expect(m.route.name).toBe(name);
      expect(m.params).toEqual(params);
    }
  });

  it.each([
    ['GET', '/api/projects/1', 'not_found'],
    ['GET', '/api/projects//feature_flags', 'not_found'],
    ['GET', '/api/projects/1/feature_flags/7/extra', 'not_found'],
    ['DELETE', '/api/projects/1/feature_flags', 'method_not_allowed'],
    ['POST', '/api/projects/1/feature_flags/local_evaluation', 'method_not_allowed'],
    // The first template matching the path decides, as in upstream's resolver: not an update of flag "local_evaluation".
    ['PATCH', '/api/projects/1/feature_flags/local_evaluation/', 'method_not_allowed'],
  ])('%s %s → %s', (method, path, kind) => expect(match(method, path).kind).toBe(kind));
});

describe('router with fixed paths', () => {
  const fixedMatch = createRouter([
    { name: 'defs', methods: ['GET'], template: '/flags/definitions', handler: () => reply },
    { name: 'flags-post', methods: ['POST'], template: '/flags', handler: () => reply },
    { name: 'flags-get', methods: ['GET'], template: '/flags', handler: () => reply },
  ]);
  it.each([
    ['GET', '/flags/definitions', 'defs'],
    ['GET', '/flags/definitions/', 'defs'],
    ['HEAD', '/flags/definitions', 'defs'],
    ['POST', '/flags/', 'flags-post'],
    ['GET', '/flags', 'flags-get'],
  ])('%s %s → %s', (method, path, name) => {
    const m = fixedMatch(method, path);
    expect(m.kind === 'found' && m.route.name).toBe(name);
  });
  it('refuses other methods and paths', () => {
    expect(fixedMatch('DELETE', '/flags').kind).toBe('method_not_allowed');
    expect(fixedMatch('GET', '/flags//').kind).toBe('not_found');
    expect(fixedMatch('GET', '/').kind).toBe('not_found');
  });
});
