import { createHash } from 'node:crypto';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { authenticate as authenticateAny, authMemoMs, newAuthMemo, type Caller } from '../../src/auth/authenticate.js';
import { parseKeysFile } from '../../src/auth/keys-file.js';
import { createPrincipalResolver, type PrincipalResolver } from '../../src/auth/principal.js';
import { ApiError } from '../../src/errors.js';
import { emptyQuery, parseQuery } from '../../src/http/query.js';
import { createMetrics } from '../../src/metrics/metrics.js';

const sha = (key: string) => createHash('sha256').update(key).digest('hex');

function setup() {
  const real = createPrincipalResolver({
    ownKey: null,
    ownProjects: [],
    staticKeys: parseKeysFile(JSON.stringify({ keys: [{ sha256: sha('phx_a'), label: 'a', scopes: ['*'] }, { sha256: sha('phx_b'), label: 'b', scopes: ['*'] }] }), 'k'),
  });
  let calls = 0;
  const resolver: PrincipalResolver = {
    describe: real.describe,
    resolve: real.resolve,
    resolveDigest: (digest) => {
      calls++;
      return real.resolveDigest(digest);
    },
  };
  let now = 1_000_000;
  const deps = { resolver, introspector: null, metrics: createMetrics(new Registry(), { version: 't', commit: 't' }), now: () => now };
  return { deps, calls: () => calls, advance: (ms: number) => (now += ms) };
}

/** With static keys only, authentication never waits. */
const authenticate = (...args: Parameters<typeof authenticateAny>): Caller => authenticateAny(...args) as Caller;

const status = (fn: () => unknown): number | null => {
  try {
    fn();
    return null;
  } catch (error) {
    return error instanceof ApiError ? error.status : -1;
  }
};

describe('authenticate with a per-connection memo', () => {
  it('reuses the last answer for the same header on the same connection, for a few seconds', () => {
    const { deps, calls, advance } = setup();
    const memo = newAuthMemo();
    expect(authenticate('Bearer phx_a', emptyQuery, memo, deps).principal.label).toBe('a');
    expect(authenticate('Bearer phx_a', emptyQuery, memo, deps).principal.label).toBe('a');
    expect(calls()).toBe(1);
    advance(authMemoMs);
    authenticate('Bearer phx_a', emptyQuery, memo, deps);
    expect(calls()).toBe(2);
  });

  it('resolves again when the header changes, and never remembers a refused key', () => {
    const { deps, calls } = setup();
    const memo = newAuthMemo();
    authenticate('Bearer phx_a', emptyQuery, memo, deps);
    expect(authenticate('Bearer phx_b', emptyQuery, memo, deps).principal.label).toBe('b');
    expect(status(() => authenticate('Bearer phx_bad', emptyQuery, memo, deps))).toBe(401);
    expect(status(() => authenticate('Bearer phx_bad', emptyQuery, memo, deps))).toBe(401);
    expect(calls()).toBe(4);
    expect(authenticate('Bearer phx_b', emptyQuery, memo, deps).principal.label).toBe('b');
    expect(calls()).toBe(4);
  });

  it('does not share memos between connections and does not memoize query credentials', () => {
    const { deps, calls } = setup();
    authenticate('Bearer phx_a', emptyQuery, newAuthMemo(), deps);
    authenticate('Bearer phx_a', emptyQuery, newAuthMemo(), deps);
    const memo = newAuthMemo();
    authenticate(undefined, parseQuery('personal_api_key=phx_a'), memo, deps);
    authenticate(undefined, parseQuery('personal_api_key=phx_a'), memo, deps);
    expect(calls()).toBe(4);
    expect(status(() => authenticate(undefined, emptyQuery, memo, deps))).toBe(401);
  });
});
