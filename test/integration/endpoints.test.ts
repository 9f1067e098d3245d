/**
 * Named query endpoints through a real sidecar (port 0) in front of the fake upstream (issue 6; operations 19–27
 * of docs/api-compatibility.md): the shared run cache (one upstream run for many
 * identical callers, keyed without client_query_id and with variables in canonical order), forced refreshes,
 * per-key grants before a cached result is served, retirement of cached runs by PATCH and DELETE, cached version
 * records, upstream's throttling and error bodies passed through, stale-if-error, the alias prefix, the short
 * last_execution_times window and the run metrics.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakePersonalKey, type FakeUpstream } from '../support/fake-upstream.js';
import { bearer, upstreamKey } from '../support/fixtures.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

const empty = { flags: [], group_type_mapping: {}, cohorts: {} };
let upstream: FakeUpstream;
let sidecar: TestSidecar | null = null;
/** Added to the sidecar's clock (tests that make cached runs expire without waiting). */
let skewMs = 0;
/** A key whose project membership a test may take away upstream. */
let revocable: FakePersonalKey;

beforeEach(async () => {
  skewMs = 0;
  revocable = { scopes: ['endpoint:read'] };
  upstream = await startFakeUpstream({
    projects: { 1: { token: 'phc_endpointsone', definitions: empty }, 2: { token: 'phc_endpointstwo', definitions: empty } },
    keys: [upstreamKey],
    personalKeys: {
      phx_reader: { scopes: ['endpoint:read'] },
      phx_reader_two: { scopes: ['endpoint:read'] },
      phx_cold: { scopes: ['endpoint:read'] },
      phx_writer: { scopes: ['endpoint:write'] },
      phx_flags_only: { scopes: ['feature_flag:read'] },
      // Introspection refused (older upstreams): nothing can be decided locally, upstream refuses it.
      phx_flags_old: { scopes: ['feature_flag:read'], refuseIntrospection: true },
      // The right scope, but its user is no member of project 1: only upstream knows.
      phx_stranger: { scopes: ['endpoint:read'], member_of: [2] },
      phx_revocable: revocable,
    },
  });
  upstream.endpointsApi.seed(1, { name: 'daily', query: daily(), previousQueries: [{ kind: 'HogQLQuery', query: 'SELECT 0' }] });
});
afterEach(async () => {
  await sidecar?.stop();
  sidecar = null;
  await upstream.close();
});

/** A HogQL query with two variables (country, default US; n, default 1): run results show their values. */
function daily(sql = 'SELECT {variables.country}, {variables.n}'): Record<string, unknown> {
  return {
    kind: 'HogQLQuery',
    query: sql,
    variables: {
      'var-1': { variableId: 'var-1', code_name: 'country', value: 'US' },
      'var-2': { variableId: 'var-2', code_name: 'n', value: 1 },
    },
  };
}

async function start(extra: Record<string, string> = {}): Promise<TestSidecar> {
  const started = await startTestSidecar(
    {
      FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
      FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
      FLAG_SIDECAR_PROJECTS: '1:phc_endpointsone,2:phc_endpointstwo',
      FLAG_SIDECAR_POLL_INTERVAL: '30s',
      FLAG_SIDECAR_UPSTREAM_TIMEOUT: '500ms',
      FLAG_SIDECAR_UPSTREAM_CONNECT_TIMEOUT: '300ms',
      ...extra,
    },
    { now: () => Date.now() + skewMs },
  );
  await Promise.all([started.poller?.pollNow(1), started.poller?.pollNow(2)]);
  await waitFor(() => started.store.ready(), 'both snapshots');
  sidecar = started;
  return started;
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: Record<string, unknown>;
}

/** A request to the sidecar (`path` from the root) or to any `base`. Bodies that are strings go as they are. */
async function call(path: string, key: string | null, init: { method?: string; body?: unknown; base?: string } = {}): Promise<Answer> {
  const headers: Record<string, string> = key === null ? {} : bearer(key);
  let body: string | undefined;
  if (init.body !== undefined) {
    body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
    headers['content-type'] = 'application/json';
  }
  const response = await fetch(`${init.base ?? sidecar?.apiUrl}${path}`, { method: init.method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    json = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  } catch {
    // not JSON: the test looks at text
  }
  return { status: response.status, headers: response.headers, text, json };
}

const base = '/api/projects/1/endpoints';
const runPath = `${base}/daily/run`;
/** POST run with `body`, as `key`. */
const run = (key: string, body: unknown = {}, path = runPath): Promise<Answer> => call(path, key, { method: 'POST', body });
/** Upstream's run requests that got past its auth (one per upstream run request, cached by upstream or not). */
const upstreamRuns = (): number => upstream.endpointsApi.runCalls().length;
/** The result row of a run answer: [name, version, runNumber, variables, filters_override, query_override]. */
const row = (answer: Answer): unknown[] => (answer.json.results as unknown[][])[0] as unknown[];
const cacheHeader = (answer: Answer): string | null => answer.headers.get('x-flag-sidecar-cache');
const errorBody = (type: string, code: string, detail: string) => JSON.stringify({ type, code, detail, attr: null });

describe('run cache: one upstream run for identical requests', () => {
  it('20 sequential runs: 1 upstream run, same body; client_query_id and variable order do not split the entry', async () => {
    await start();
    const answers: Answer[] = [];
    for (let i = 0; i < 20; i += 1) {
      const variables = i % 2 === 0 ? { country: 'DE', n: 2 } : { n: 2, country: 'DE' };
      answers.push(await run('phx_reader', { client_query_id: `query-${i}`, variables }));
    }
    expect(upstreamRuns()).toBe(1);
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(row(answers[0] as Answer)).toEqual(['daily', 2, 1, '{"country":"DE","n":2}', 'null', 'null']);
    expect(answers.map(cacheHeader)).toEqual(['miss', ...Array(19).fill('hit')]);
    expect((answers[19] as Answer).headers.get('x-flag-sidecar-source')).toBe('cache');

    const other = await run('phx_reader', { variables: { country: 'FR', n: 2 } });
    expect([other.status, cacheHeader(other), upstreamRuns()]).toEqual([200, 'miss', 2]);
    expect(row(other)).toEqual(['daily', 2, 2, '{"country":"FR","n":2}', 'null', 'null']);
  });

  it('20 concurrent runs of a granted key share one upstream request', async () => {
    await start();
    expect((await run('phx_reader')).status).toBe(200); // the key's grant for this endpoint
    upstream.endpointsApi.setRunDelay(150);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => run('phx_reader', { client_query_id: `c${i}`, variables: i % 2 ? { country: 'SE', n: 3 } : { n: 3, country: 'SE' } })),
    );
    expect(upstreamRuns()).toBe(2);
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(row(answers[0] as Answer)).toEqual(['daily', 2, 2, '{"country":"SE","n":3}', 'null', 'null']);
  });

  it('20 concurrent runs of a key never seen before share one upstream request too', async () => {
    await start();
    upstream.endpointsApi.setRunDelay(150);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => run('phx_cold', { client_query_id: `c${i}`, variables: { country: 'NO' } })));
    expect(upstreamRuns()).toBe(1);
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    // And then it is a granted key served from the cache.
    const again = await run('phx_cold', { variables: { country: 'NO' } });
    expect([cacheHeader(again), again.text, upstreamRuns()]).toEqual(['hit', (answers[0] as Answer).text, 1]);
  });
});

describe('GET and POST run', () => {
  it('share entries: GET = POST {}, GET ?version=1 = POST {version: 1} = POST ?version=1', async () => {
    await start();
    const get = await call(runPath, 'phx_reader');
    expect([get.status, cacheHeader(get), row(get)]).toEqual([200, 'miss', ['daily', 2, 1, '{"country":"US","n":1}', 'null', 'null']]);
    const post = await run('phx_reader', {});
    const slash = await call(`${runPath}/`, 'phx_reader');
    expect([post, slash].map((a) => [a.status, cacheHeader(a), a.text])).toEqual(Array(2).fill([200, 'hit', get.text]));
    // Upstream's run view reads only ?version on GET (`run` in PostHog's `products/endpoints/backend/api.py`): other
    // parameters do not change the answer.
    const ignored = await call(`${runPath}?variables=${encodeURIComponent('{"country":"DE"}')}`, 'phx_reader');
    expect([ignored.status, cacheHeader(ignored), ignored.text]).toEqual([200, 'hit', get.text]);
    expect(upstreamRuns()).toBe(1);

    const v1 = await call(`${runPath}?version=1`, 'phx_reader');
    expect([v1.status, cacheHeader(v1), v1.json.endpoint_version, upstreamRuns()]).toEqual([200, 'miss', 1, 2]);
    const v1Post = await run('phx_reader', { version: 1 });
    const v1PostQuery = await run('phx_reader', {}, `${runPath}?version=1`);
    expect([v1Post, v1PostQuery].map((a) => [a.status, cacheHeader(a), a.text])).toEqual(Array(2).fill([200, 'hit', v1.text]));
    // The body's version wins over ?version, as upstream reads it.
    const bodyWins = await run('phx_reader', { version: 1 }, `${runPath}?version=2`);
    expect([cacheHeader(bodyWins), bodyWins.text]).toEqual(['hit', v1.text]);
    expect(upstreamRuns()).toBe(2);
  });

  it('leaves malformed versions and unknown keys to upstream, uncached', async () => {
    await start();
    const badQuery = await call(`${runPath}?version=abc`, 'phx_reader');
    expect([badQuery.status, badQuery.text]).toEqual([400, '{"error":"Invalid version parameter: abc"}']);
    const unknownKey = await run('phx_reader', { limit: 5 });
    expect(unknownKey.status).toBe(400);
    expect(unknownKey.json).toMatchObject({ type: 'invalid_request', code: 'parse_error' });
    const async = await run('phx_reader', { refresh: 'async' });
    expect([async.status, async.text]).toEqual([400, errorBody('validation_error', 'invalid_input', 'Only sync modes are supported (refresh param)')]);
    await call(`${runPath}?version=abc`, 'phx_reader');
    expect(upstreamRuns()).toBe(4);
  });
});

describe('refresh', () => {
  it('force_blocking runs upstream every time and replaces the entry the next plain run reads', async () => {
    await start();
    const first = await run('phx_reader', { variables: { country: 'DE' } });
    expect(row(first)[2]).toBe(1);
    const forced: Answer[] = [];
    for (let i = 0; i < 3; i += 1) forced.push(await run('phx_reader', { refresh: 'force_blocking', variables: { country: 'DE' } }));
    expect(upstreamRuns()).toBe(4);
    expect(forced.map((a) => [a.status, cacheHeader(a), row(a)[2], a.json.is_cached])).toEqual([
      [200, 'miss', 2, false],
      [200, 'miss', 3, false],
      [200, 'miss', 4, false],
    ]);
    const plain = await run('phx_reader', { variables: { country: 'DE' } });
    expect([plain.status, cacheHeader(plain), plain.text, upstreamRuns()]).toEqual([200, 'hit', (forced[2] as Answer).text, 4]);
    // Forced runs are never shared, even concurrent ones.
    const together = await Promise.all([1, 2, 3].map(() => run('phx_reader', { refresh: 'force_blocking', variables: { country: 'DE' } })));
    expect(together.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(upstreamRuns()).toBe(7);
  });
});

describe('who is served a cached run', () => {
  it('a second key goes upstream once before the cache serves it; keys without access never get a cached result', async () => {
    await start();
    const first = await run('phx_reader');
    expect(upstreamRuns()).toBe(1);

    const second = await run('phx_reader_two');
    expect([second.status, cacheHeader(second), upstreamRuns()]).toEqual([200, 'miss', 2]);
    expect(row(second)).toEqual(row(first)); // upstream's own cache answered it
    expect(second.json.is_cached).toBe(true);
    const secondAgain = await run('phx_reader_two');
    expect([secondAgain.status, cacheHeader(secondAgain), secondAgain.text, upstreamRuns()]).toEqual([200, 'hit', second.text, 2]);
    // The second key's answer refreshed the shared entry.
    const firstAgain = await run('phx_reader');
    expect([cacheHeader(firstAgain), firstAgain.text]).toEqual(['hit', second.text]);

    // Lacking the scope, known from introspection: refused here with upstream's body, nothing sent upstream.
    const runsCounted = upstream.endpointsApi.counts().run;
    const missingScope = errorBody('authentication_error', 'permission_denied', "API key missing required scope 'endpoint:read'");
    const flagsOnly = await run('phx_flags_only');
    expect([flagsOnly.status, flagsOnly.text]).toEqual([403, missingScope]);
    expect(upstream.endpointsApi.counts().run).toBe(runsCounted);
    // Introspection refused: upstream decides, its 403 comes through, twice (never the cached result).
    for (let i = 0; i < 2; i += 1) {
      const old = await run('phx_flags_old');
      expect([old.status, old.text]).toEqual([403, missingScope]);
    }
    // The scope but no membership: only upstream can tell, and does, every time.
    for (let i = 0; i < 2; i += 1) {
      const stranger = await run('phx_stranger');
      expect([stranger.status, stranger.text]).toEqual([403, errorBody('authentication_error', 'permission_denied', "You don't have access to the project.")]);
    }
    const direct = await call(runPath, 'phx_stranger', { method: 'POST', body: {}, base: upstream.url });
    expect([direct.status, direct.text]).toEqual([403, errorBody('authentication_error', 'permission_denied', "You don't have access to the project.")]);
    expect(upstreamRuns()).toBe(2);
    // No credential at all: upstream's 401.
    const anonymous = await call(runPath, null, { method: 'POST', body: {} });
    expect([anonymous.status, anonymous.text]).toEqual([401, errorBody('authentication_error', 'not_authenticated', 'Authentication credentials were not provided.')]);
  });
});

describe('grants', () => {
  it('a key upstream stops serving loses its grant at once: its next run is never served from the cache', async () => {
    await start();
    expect(cacheHeader(await run('phx_revocable'))).toBe('miss');
    expect(cacheHeader(await run('phx_revocable'))).toBe('hit');
    revocable.member_of = [2];
    const refused = errorBody('authentication_error', 'permission_denied', "You don't have access to the project.");
    const forced = await run('phx_revocable', { refresh: 'force_blocking' });
    expect([forced.status, forced.text]).toEqual([403, refused]);
    const asked = upstream.endpointsApi.counts().run ?? 0;
    for (let i = 0; i < 3; i += 1) {
      const again = await run('phx_revocable');
      expect([again.status, again.text]).toEqual([403, refused]);
    }
    // Each of them asked upstream (a 403 is never remembered as a grant).
    expect(upstream.endpointsApi.counts().run).toBe(asked + 3);
    // Another key's grant and the cached result are untouched.
    await run('phx_reader');
    expect(cacheHeader(await run('phx_reader'))).toBe('hit');
  });
});

describe('an error meant for one key', () => {
  it('does not reach another granted key that joined its run: that key runs with its own', async () => {
    await start();
    await run('phx_reader');
    await run('phx_reader_two');
    // Upstream throttles per key: phx_reader spends its budget (one run from now on), phx_reader_two keeps it.
    upstream.endpointsApi.setRunLimit(1);
    await run('phx_reader', { refresh: 'force_blocking' });
    upstream.endpointsApi.setRunErrorDelay(150);
    const fresh = { variables: { country: 'FR' } };
    const throttled = run('phx_reader', fresh);
    await new Promise((resolve) => setTimeout(resolve, 40));
    const other = await run('phx_reader_two', fresh);
    expect((await throttled).status).toBe(429);
    expect([other.status, row(other)[3]]).toEqual([200, JSON.stringify({ country: 'FR', n: 1 })]);
    upstream.endpointsApi.setRunErrorDelay(0);
    upstream.endpointsApi.setRunLimit(null);
  });
});

describe('what is never cached or shared', () => {
  it('HEAD is asked as GET upstream and never leaves an empty body for GET and POST callers', async () => {
    await start();
    const head = await call(runPath, 'phx_reader', { method: 'HEAD' });
    expect([head.status, head.text]).toEqual([200, '']);
    const get = await call(runPath, 'phx_reader');
    const post = await run('phx_reader');
    for (const answer of [get, post]) {
      expect(answer.status).toBe(200);
      expect(row(answer)[0]).toBe('daily');
    }
  });

  it('@current runs go upstream every time (upstream resolves it to the user\'s current project)', async () => {
    // Even with one project served: the key's current project upstream may be another one.
    await start({ FLAG_SIDECAR_PROJECTS: '1:phc_endpointsone' });
    const currentPath = '/api/projects/@current/endpoints/daily/run';
    const first = await run('phx_reader', {}, currentPath);
    const second = await run('phx_reader', {}, currentPath);
    expect([first.status, second.status, cacheHeader(second), upstreamRuns()]).toEqual([200, 200, 'miss', 2]);
    // Nor did they fill the numeric path's entry or grant it.
    expect(cacheHeader(await run('phx_reader'))).toBe('miss');
  });

  it('a body not declared JSON, or a literal null, goes upstream uncached', async () => {
    await start();
    await run('phx_reader');
    expect(cacheHeader(await run('phx_reader'))).toBe('hit');
    const before = upstreamRuns();
    for (const [body, type] of [['{}', undefined], ['{}', 'text/plain'], ['null', 'application/json']] as const) {
      const headers: Record<string, string> = { ...bearer('phx_reader'), ...(type ? { 'content-type': type } : {}) };
      const response = await fetch(`${sidecar?.apiUrl}${runPath}`, { method: 'POST', headers, body });
      expect(response.headers.get('x-flag-sidecar-cache'), `${body} ${type}`).toBe('miss');
      await response.arrayBuffer();
    }
    expect(upstream.endpointsApi.counts().run).toBeGreaterThanOrEqual(before);
  });

  it('a run whose key is in its body goes upstream uncached each time (upstream judges the body)', async () => {
    await start();
    const direct = await call(runPath, null, { method: 'POST', body: { personal_api_key: 'phx_reader' }, base: upstream.url });
    const before = upstream.endpointsApi.counts().run ?? 0;
    for (let i = 0; i < 2; i += 1) {
      const answer = await call(runPath, null, { method: 'POST', body: { personal_api_key: 'phx_reader' } });
      // Upstream's run model refuses the extra field after authenticating with it: its 400 comes through.
      expect([answer.status, cacheHeader(answer), answer.text]).toEqual([direct.status, 'miss', direct.text]);
    }
    expect(direct.status).toBe(400);
    expect((upstream.endpointsApi.counts().run ?? 0) - before).toBe(2);
  });

  it('latest runs are fresh for at most FLAG_SIDECAR_ENDPOINT_RUN_TTL; a pinned version for upstream\'s cache age', async () => {
    await start({ FLAG_SIDECAR_ENDPOINT_RUN_TTL: '5s' });
    await run('phx_reader');
    await run('phx_reader', { version: 1 });
    skewMs = 6_000;
    expect(cacheHeader(await run('phx_reader'))).toBe('miss');
    expect(cacheHeader(await run('phx_reader', { version: 1 }))).toBe('hit');
  });

  it('a 404 for the latest version retires every cached run of the endpoint and the key\'s grant', async () => {
    await start({ FLAG_SIDECAR_ENDPOINT_RUN_TTL: '5s' });
    await run('phx_reader');
    await run('phx_reader', { version: 1 });
    // Deleted outside the sidecar: the next latest run (expired) learns it from upstream.
    const direct = await call(`${base}/daily/`, 'phx_writer', { method: 'DELETE', base: upstream.url });
    expect(direct.status).toBe(204);
    skewMs = 6_000;
    expect((await run('phx_reader')).status).toBe(404);
    expect((await run('phx_reader', { version: 1 })).status).toBe(404);
  });
});

describe('writes retire cached runs and reads', () => {
  it('a PATCH that got no answer retires every cached run (it may have been applied)', async () => {
    await start();
    await run('phx_reader');
    await run('phx_reader', { version: 1 });
    expect((await call(`${base}/daily/`, 'phx_writer')).status).toBe(200); // the writer's key is known before upstream goes
    upstream.setMode({ kind: 'reset' });
    const patch = await call(`${base}/daily/`, 'phx_writer', { method: 'PATCH', body: { description: 'x' } });
    upstream.setMode({ kind: 'normal' });
    expect(patch.status).toBe(502);
    expect(cacheHeader(await run('phx_reader'))).toBe('miss');
    expect(cacheHeader(await run('phx_reader', { version: 1 }))).toBe('miss');
  });

  it('PATCH of the query: the next latest run is the new version; versions and retrieve are read again; version runs stay', async () => {
    await start();
    const latest = await run('phx_reader');
    expect(latest.json.endpoint_version).toBe(2);
    const v1 = await run('phx_reader', { version: 1 });
    const versions = await call(`${base}/daily/versions`, 'phx_reader');
    expect([versions.status, (versions.json as unknown as unknown[]).length]).toEqual([200, 2]);
    expect(cacheHeader(await call(`${base}/daily/versions`, 'phx_reader'))).toBe('hit');
    expect((await call(`${base}/daily`, 'phx_reader')).json.current_version).toBe(2);
    expect(upstream.endpointsApi.counts()).toMatchObject({ versions: 1, retrieve: 1 });
    expect(upstreamRuns()).toBe(2);

    const patched = await call(`${base}/daily`, 'phx_writer', { method: 'PATCH', body: { query: daily('SELECT {variables.country}, {variables.n}, 3') } });
    expect([patched.status, patched.json.current_version, patched.json.versions_count]).toEqual([200, 3, 3]);
    expect(upstream.endpointsApi.counts().partial_update).toBe(1);

    const after = await run('phx_reader');
    expect([after.status, cacheHeader(after), after.json.endpoint_version, row(after)[1], upstreamRuns()]).toEqual([200, 'miss', 3, 3, 3]);
    expect(cacheHeader(await run('phx_reader'))).toBe('hit');
    const v1After = await run('phx_reader', { version: 1 });
    expect([cacheHeader(v1After), v1After.text]).toEqual(['hit', v1.text]);
    expect(upstreamRuns()).toBe(3);

    const versionsAfter = await call(`${base}/daily/versions`, 'phx_reader');
    expect([versionsAfter.status, cacheHeader(versionsAfter)]).toEqual([200, 'miss']);
    expect((versionsAfter.json as unknown as Array<{ version: number }>).map((v) => v.version)).toEqual([3, 2, 1]);
    const retrieved = await call(`${base}/daily`, 'phx_reader');
    expect([cacheHeader(retrieved), retrieved.json.current_version]).toEqual(['miss', 3]);
    expect(upstream.endpointsApi.counts()).toMatchObject({ versions: 2, retrieve: 2 });
  });

  it('PATCH is_active false: every cached run is retired, a specific version too (upstream 404s inactive endpoints)', async () => {
    await start();
    await run('phx_reader');
    await run('phx_reader', { version: 1 });
    expect(cacheHeader(await run('phx_reader', { version: 1 }))).toBe('hit');
    const deactivated = await call(`${base}/daily`, 'phx_writer', { method: 'PATCH', body: { is_active: false } });
    expect([deactivated.status, deactivated.json.is_active]).toEqual([200, false]);
    const notFound = errorBody('invalid_request', 'not_found', 'Not found.');
    for (const body of [{}, { version: 1 }]) {
      const inactive = await run('phx_reader', body);
      expect([inactive.status, inactive.text]).toEqual([404, notFound]);
    }
    expect(upstreamRuns()).toBe(4);
    // A PATCH that leaves it active (a description) keeps version runs.
    expect((await call(`${base}/daily`, 'phx_writer', { method: 'PATCH', body: { is_active: true } })).status).toBe(200);
    await run('phx_reader', { version: 1 });
    expect((await call(`${base}/daily`, 'phx_writer', { method: 'PATCH', body: { description: 'still on' } })).status).toBe(200);
    expect(cacheHeader(await run('phx_reader', { version: 1 }))).toBe('hit');
    expect(upstreamRuns()).toBe(5);
  });

  it('a PATCH upstream refuses changes nothing cached', async () => {
    await start();
    await run('phx_reader');
    const refused = await call(`${base}/daily`, 'phx_writer', { method: 'PATCH', body: { cache_age_seconds: 5 } });
    expect([refused.status, refused.json.detail]).toEqual([400, 'Cache age must be between 300 and 86400 seconds.']);
    expect(cacheHeader(await run('phx_reader'))).toBe('hit');
    const readOnly = await call(`${base}/daily`, 'phx_reader', { method: 'PATCH', body: { description: 'x' } });
    expect([readOnly.status, readOnly.text]).toEqual([403, errorBody('authentication_error', 'permission_denied', "API key missing required scope 'endpoint:write'")]);
    expect(upstream.endpointsApi.counts().partial_update).toBe(1);
    // A PATCH that may have been applied (upstream 5xx): every cached run goes, a specific version's too.
    await run('phx_reader', { version: 1 });
    upstream.setMode({ kind: 'status', status: 500, body: errorBody('server_error', 'error', 'A server error occurred.') });
    expect((await call(`${base}/daily`, 'phx_writer', { method: 'PATCH', body: { description: 'x' } })).status).toBe(500);
    upstream.setMode({ kind: 'normal' });
    const runs = upstreamRuns();
    expect(cacheHeader(await run('phx_reader', { version: 1 }))).toBe('miss');
    expect(upstreamRuns()).toBe(runs + 1);
  });

  it('DELETE: 204 with no body; then run and retrieve are upstream\'s 404', async () => {
    await start();
    await run('phx_reader');
    await run('phx_reader', { version: 1 });
    expect((await call(`${base}/daily`, 'phx_reader')).status).toBe(200);
    expect(cacheHeader(await call(`${base}/daily`, 'phx_reader'))).toBe('hit');

    const deleted = await call(`${base}/daily/`, 'phx_writer', { method: 'DELETE' });
    expect([deleted.status, deleted.text]).toEqual([204, '']);
    expect(upstream.endpointsApi.counts().destroy).toBe(1);

    const notFound = errorBody('invalid_request', 'not_found', 'Not found.');
    const runs = upstreamRuns();
    for (const body of [{}, { version: 1 }]) {
      const gone = await run('phx_reader', body);
      expect([gone.status, gone.text]).toEqual([404, notFound]);
    }
    expect(upstreamRuns()).toBe(runs + 2);
    const retrieved = await call(`${base}/daily`, 'phx_reader');
    expect([retrieved.status, retrieved.text]).toEqual([404, notFound]);
    expect(upstream.endpointsApi.counts().retrieve).toBe(2);
  });
});

describe('versions', () => {
  it('versions/:n is read once; an unknown version is upstream\'s non-standard 404', async () => {
    await start();
    const one = await call(`${base}/daily/versions/1`, 'phx_reader');
    expect([one.status, one.json.version, (one.json.query as Record<string, unknown>).query]).toEqual([200, 1, 'SELECT 0']);
    const again = await call(`${base}/daily/versions/1/`, 'phx_reader');
    expect([again.status, cacheHeader(again), again.text]).toEqual([200, 'hit', one.text]);
    expect(upstream.endpointsApi.counts().version_detail).toBe(1);

    const unknown = await call(`${base}/daily/versions/9`, 'phx_reader');
    expect([unknown.status, unknown.text]).toEqual([404, '{"error":"Version 9 not found"}']);
    const unknownRun = await run('phx_reader', { version: 9 });
    expect([unknownRun.status, unknownRun.text]).toEqual([404, '{"error":"Version 9 not found for endpoint \'daily\'","current_version":2}']);
  });
});

describe('upstream failures', () => {
  it('passes a 429 on run through with its body and Retry-After, and does not keep it', async () => {
    await start();
    upstream.endpointsApi.setRunLimit(1);
    expect((await run('phx_reader')).status).toBe(200);
    const throttled = await run('phx_reader', { variables: { country: 'DE' } });
    expect([throttled.status, throttled.text]).toEqual([429, errorBody('throttled_error', 'throttled', 'Request was throttled. Expected available in 60 seconds.')]);
    expect(throttled.headers.get('retry-after')).toBe('60');
    // A cached result is still served while upstream throttles.
    expect(cacheHeader(await run('phx_reader'))).toBe('hit');
    upstream.endpointsApi.setRunLimit(null);
    const retried = await run('phx_reader', { variables: { country: 'DE' } });
    expect([retried.status, cacheHeader(retried), row(retried)[3]]).toEqual([200, 'miss', '{"country":"DE","n":1}']);
  });

  it('serves an expired run stale while upstream fails, to keys granted it only', async () => {
    upstream.endpointsApi.seed(1, { name: 'hourly', cache_age_seconds: 300, query: daily() });
    await start({ FLAG_SIDECAR_AUTH_CACHE_TTL: '1h' });
    const hourly = `${base}/hourly/run`;
    const fresh = await run('phx_reader', {}, hourly);
    expect([fresh.status, cacheHeader(fresh)]).toEqual([200, 'miss']);
    expect(cacheHeader(await run('phx_reader', {}, hourly))).toBe('hit');

    skewMs = 301_000; // past upstream's cache_target_age (300 s)
    upstream.endpointsApi.setRunLimit(0);
    const throttled = await run('phx_reader', {}, hourly);
    expect([throttled.status, throttled.text, cacheHeader(throttled)]).toEqual([200, fresh.text, 'stale']);
    upstream.endpointsApi.setRunLimit(null);
    upstream.setMode({ kind: 'status', status: 502, body: errorBody('server_error', 'error', 'A server error occurred.') });
    const stale = await run('phx_reader', {}, hourly);
    expect([stale.status, stale.text, cacheHeader(stale), stale.headers.get('x-flag-sidecar-source')]).toEqual([200, fresh.text, 'stale', 'stale']);
    expect(stale.headers.get('warning')).toBe('110 - "Response is Stale"');
    expect(Number(stale.headers.get('age'))).toBeGreaterThanOrEqual(301);

    await upstream.goDown();
    const down = await run('phx_reader', {}, hourly);
    expect([down.status, down.text, cacheHeader(down)]).toEqual([200, fresh.text, 'stale']);
    // A key without a grant is not served what another key was given.
    const other = await run('phx_reader_two', {}, hourly);
    expect(other.status).toBeGreaterThanOrEqual(500);
    expect(other.text).not.toBe(fresh.text);

    await upstream.comeBack();
    upstream.setMode({ kind: 'normal' });
    const back = await run('phx_reader', {}, hourly);
    expect([back.status, cacheHeader(back)]).toEqual([200, 'miss']);
  });
});

describe('request bodies', () => {
  it('malformed JSON on run and PATCH: upstream\'s 400 parse_error, nothing sent upstream', async () => {
    await start();
    const direct = await call(runPath, 'phx_reader', { method: 'POST', body: '{"variables":', base: upstream.url });
    expect(direct.status).toBe(400);
    upstream.endpointsApi.reset();
    upstream.endpointsApi.seed(1, { name: 'daily', query: daily() });

    const malformedRun = await run('phx_reader', '{"variables":');
    expect([malformedRun.status, malformedRun.text]).toEqual([400, direct.text]);
    expect(malformedRun.json).toMatchObject({ type: 'invalid_request', code: 'parse_error', attr: null });
    expect(String(malformedRun.json.detail)).toMatch(/^JSON parse error - /);
    const malformedPatch = await call(`${base}/daily`, 'phx_writer', { method: 'PATCH', body: '{"description":' });
    expect([malformedPatch.status, malformedPatch.text]).toEqual([400, direct.text]);
    expect(malformedPatch.json).toMatchObject({ type: 'invalid_request', code: 'parse_error', attr: null });
    expect(upstream.endpointsApi.counts()).toEqual({});
  });
});

describe('paths', () => {
  it('the /api/environments/ alias, with or without a trailing slash, is the same endpoint and the same run entry', async () => {
    await start();
    const alias = '/api/environments/1/endpoints';
    const first = await run('phx_reader');
    const viaAlias = await run('phx_reader', {}, `${alias}/daily/run/`);
    expect([viaAlias.status, cacheHeader(viaAlias), viaAlias.text, upstreamRuns()]).toEqual([200, 'hit', first.text, 1]);

    const list = await call(`${alias}/`, 'phx_reader');
    expect([list.status, (list.json.results as Array<{ name: string }>).map((e) => e.name)]).toEqual([200, ['daily']]);
    const retrieved = await call(`${alias}/daily/`, 'phx_reader');
    expect([retrieved.status, retrieved.json.name]).toEqual([200, 'daily']);
    const status = await call(`${alias}/daily/materialization_status`, 'phx_reader');
    expect([status.status, status.text]).toEqual([200, '{"can_materialize":false,"reason":"Queries with variables cannot be materialized."}']);
    const openapi = await call(`${alias}/daily/openapi.json/`, 'phx_reader');
    expect([openapi.status, openapi.json.openapi]).toEqual([200, '3.0.3']);
    const versions = await call(`${alias}/daily/versions/`, 'phx_reader');
    expect([versions.status, (versions.json as unknown as unknown[]).length]).toEqual([200, 2]);

    // A PATCH through the alias retires the runs cached through the other prefix.
    const patched = await call(`${alias}/daily/`, 'phx_writer', { method: 'PATCH', body: { query: daily('SELECT 9, {variables.country}, {variables.n}') } });
    expect([patched.status, patched.json.current_version]).toEqual([200, 3]);
    const after = await run('phx_reader');
    expect([cacheHeader(after), after.json.endpoint_version, upstreamRuns()]).toEqual(['miss', 3, 2]);

    const created = await call(`${alias}`, 'phx_writer', { method: 'POST', body: { name: 'weekly', query: { kind: 'HogQLQuery', query: 'SELECT 7' } } });
    expect([created.status, created.json.name, created.json.current_version]).toEqual([201, 'weekly', 1]);
    const listed = await call(`${alias}/`, 'phx_reader');
    expect([cacheHeader(listed), (listed.json.results as Array<{ name: string }>).map((e) => e.name)]).toEqual(['miss', ['daily', 'weekly']]);
  });
});

describe('last_execution_times', () => {
  it('identical bodies from one key within the window: one upstream call', async () => {
    await start();
    await run('phx_reader');
    const path = `${base}/last_execution_times`;
    const first = await call(path, 'phx_reader', { method: 'POST', body: { names: ['daily', 'weekly'] } });
    expect(first.status).toBe(200);
    expect((first.json.query_status as { results: unknown[][] }).results.map((r) => r[0])).toEqual(['daily']);
    const again = await call(`${path}/`, 'phx_reader', { method: 'POST', body: '{ "names" : ["daily", "weekly"] }' });
    expect([again.status, cacheHeader(again), again.text]).toEqual([200, 'hit', first.text]);
    expect(upstream.endpointsApi.counts().last_execution_times).toBe(1);

    const otherNames = await call(path, 'phx_reader', { method: 'POST', body: { names: ['weekly', 'daily'] } });
    expect(cacheHeader(otherNames)).toBe('miss');
    const otherKey = await call(path, 'phx_reader_two', { method: 'POST', body: { names: ['daily', 'weekly'] } });
    expect([otherKey.status, cacheHeader(otherKey)]).toEqual([200, 'miss']);
    expect(upstream.endpointsApi.counts().last_execution_times).toBe(3);
  });
});

describe('metrics', () => {
  it('counts runs by endpoint and source', async () => {
    await start();
    await run('phx_reader');
    for (let i = 0; i < 3; i += 1) await run('phx_reader', { client_query_id: `m${i}` });
    await run('phx_reader', { refresh: 'force_blocking' });
    upstream.endpointsApi.seed(1, { name: 'weekly' });
    await run('phx_reader', {}, `${base}/weekly/run`);
    const text = await (await fetch(`${sidecar?.opsUrl}/metrics`)).text();
    const count = (endpoint: string, source: string): number => {
      const line = text.split('\n').find((l) => l.startsWith('flag_sidecar_endpoint_runs_total{') && l.includes(`endpoint="${endpoint}"`) && l.includes(`source="${source}"`));
      return line === undefined ? 0 : Number(line.split(' ').pop());
    };
    expect([count('daily', 'upstream'), count('daily', 'cache'), count('weekly', 'upstream'), count('weekly', 'cache')]).toEqual([2, 3, 1, 0]);
  });

  it('gives a label slot only to endpoint names upstream confirmed: 25 typos answered 404 leave room for a real one', async () => {
    await start();
    for (let i = 0; i < 25; i += 1) expect((await run('phx_reader', {}, `${base}/dialy-${i}/run`)).status).toBe(404);
    expect((await run('phx_reader')).status).toBe(200);
    expect((await run('phx_reader', { client_query_id: 'again' })).status).toBe(200);
    const text = await (await fetch(`${sidecar?.opsUrl}/metrics`)).text();
    const runs = text.split('\n').filter((l) => l.startsWith('flag_sidecar_endpoint_runs_total{'));
    expect(runs.sort()).toEqual([
      'flag_sidecar_endpoint_runs_total{endpoint="daily",source="cache"} 1',
      'flag_sidecar_endpoint_runs_total{endpoint="daily",source="upstream"} 1',
      'flag_sidecar_endpoint_runs_total{endpoint="other",source="upstream"} 25',
    ]);
  });
});
