import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { call, json, startFlagSidecar, startFlagUpstream, tokenOne } from '../support/flag-api-env.js';
import { exampleKey } from '../support/fixtures.js';
import { startTestSidecar, type TestSidecar } from '../support/start-sidecar.js';

// Reads of the flag API through the sidecar: the caller's key goes upstream once, answers are cached per key,
// concurrent misses share one request, paging links point at the sidecar, and upstream outages are bridged
// with stale answers.
let upstream: FakeUpstream;
let sidecar: TestSidecar | null = null;

beforeEach(async () => {
  upstream = await startFlagUpstream();
});
afterEach(async () => {
  await sidecar?.stop();
  sidecar = null;
  await upstream.close();
});

const flagsPath = '/api/projects/1/feature_flags';

describe('read-through', () => {
  it('lists flags with upstream body and paging links rewritten to the sidecar, then serves from cache', async () => {
    sidecar = await startFlagSidecar(upstream);
    const direct = await call(`${upstream.url}${flagsPath}/?limit=2&offset=2`, 'phx_reader');
    const first = await call(`${sidecar.apiUrl}${flagsPath}/?limit=2&offset=2`, 'phx_reader');
    expect(first.status).toBe(200);
    expect(first.headers.get('x-flag-sidecar-cache')).toBe('miss');
    const page = json(first.text);
    expect(page.next).toBe(`${sidecar.apiUrl}${flagsPath}/?limit=2&offset=4`);
    expect(page.previous).toBe(`${sidecar.apiUrl}${flagsPath}/?limit=2`);
    expect(page.results).toEqual(json(direct.text).results);
    expect(first.text.replaceAll(sidecar.apiUrl, upstream.url)).toBe(direct.text);

    const again = await call(`${sidecar.apiUrl}${flagsPath}?offset=2&limit=2`, 'phx_reader');
    expect([again.status, again.headers.get('x-flag-sidecar-cache'), again.headers.get('x-flag-sidecar-source')]).toEqual([200, 'hit', 'cache']);
    expect(again.text).toBe(first.text);
    expect(upstream.flagApi.counts().list).toBe(2); // one direct, one through the sidecar

    const next = await call(page.next as string, 'phx_reader');
    expect(json(next.text).previous).toBe(`${sidecar.apiUrl}${flagsPath}/?limit=2&offset=2`);
  });

  it('retrieves a flag, passes upstream 404s through and caches them briefly', async () => {
    sidecar = await startFlagSidecar(upstream);
    const flag = await call(`${sidecar.apiUrl}${flagsPath}/2/`, 'phx_reader');
    expect([flag.status, json(flag.text).key]).toEqual([200, 'pricing-experiment']);
    for (let i = 0; i < 5; i++) {
      const missing = await call(`${sidecar.apiUrl}${flagsPath}/999`, 'phx_reader');
      expect([missing.status, missing.text]).toEqual([404, '{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}']);
    }
    expect(upstream.flagApi.counts().retrieve).toBe(2);
  });

  it('sends 50 concurrent identical reads upstream once', async () => {
    sidecar = await startFlagSidecar(upstream);
    upstream.setMode({ kind: 'slow', delayMs: 100 });
    const url = `${sidecar.apiUrl}${flagsPath}/1/status`;
    const answers = await Promise.all(Array.from({ length: 50 }, () => call(url, 'phx_reader')));
    expect(new Set(answers.map((a) => `${a.status} ${a.text}`)).size).toBe(1);
    expect(answers[0]?.status).toBe(200);
    expect(upstream.flagApi.counts().status).toBe(1);
  });

  it('never serves one key the answer fetched with another (per-user can_edit)', async () => {
    sidecar = await startFlagSidecar(upstream);
    const asReader = await call(`${sidecar.apiUrl}${flagsPath}/1`, 'phx_reader');
    const asWriter = await call(`${sidecar.apiUrl}${flagsPath}/1`, 'phx_writer');
    expect(json(asReader.text).can_edit).toBe(false);
    expect(json(asWriter.text).can_edit).toBe(true);
    expect(asWriter.headers.get('x-flag-sidecar-cache')).toBe('miss');
    // The key in the query string is the same key: it shares the header's entry, and is never part of the entry's key.
    const viaQuery = await call(`${sidecar.apiUrl}${flagsPath}/1?personal_api_key=phx_reader`, null);
    expect([viaQuery.headers.get('x-flag-sidecar-cache'), json(viaQuery.text).can_edit]).toEqual(['hit', false]);
    expect(upstream.flagApi.counts().retrieve).toBe(2);
  });

  it('refuses locally what upstream would refuse, without asking it', async () => {
    sidecar = await startFlagSidecar(upstream);
    const otherProject = await call(`${sidecar.apiUrl}${flagsPath}/`, 'phx_project_two');
    expect([otherProject.status, json(otherProject.text).detail]).toEqual([403, 'API key does not have access to the requested project: ID 1.']);
    const activity = await call(`${sidecar.apiUrl}${flagsPath}/activity`, 'phx_reader');
    expect([activity.status, json(activity.text).detail]).toEqual([403, "API key missing required scope 'activity_log:read'"]);
    const myFlags = await call(`${sidecar.apiUrl}${flagsPath}/my_flags`, 'phx_reader');
    expect([myFlags.status, json(myFlags.text).detail]).toEqual([403, 'This action does not support Personal API Key access']);
    const secret = await call(`${sidecar.apiUrl}${flagsPath}/`, 'phs_projectone');
    expect([secret.status, json(secret.text).detail]).toEqual([401, 'Personal API key found in request Authorization header is invalid.']);
    const counts = upstream.flagApi.counts();
    expect([counts.list, counts.all_activity, counts.my_flags]).toEqual([undefined, undefined, undefined]);
  });

  it('leaves keys upstream will not describe to upstream, and caches their answers per key', async () => {
    sidecar = await startFlagSidecar(upstream);
    const list = await call(`${sidecar.apiUrl}${flagsPath}/`, 'phx_old_reader');
    expect([list.status, json(list.text).count]).toEqual([200, 7]);
    const activity = await call(`${sidecar.apiUrl}${flagsPath}/activity`, 'phx_old_reader');
    expect([activity.status, json(activity.text).detail]).toEqual([403, "API key missing required scope 'activity_log:read'"]);
    expect(upstream.flagApi.counts().all_activity).toBe(1);
  });

  it('rewrites activity links and passes the empty-body 404 of an unknown flag', async () => {
    sidecar = await startFlagSidecar(upstream);
    for (const active of [false, true, false]) {
      await call(`${upstream.url}${flagsPath}/1/`, 'phx_writer', { method: 'PATCH', body: JSON.stringify({ active }) });
    }
    const page = await call(`${sidecar.apiUrl}${flagsPath}/1/activity?limit=2`, 'phx_writer');
    expect(page.status).toBe(200);
    expect(json(page.text).next).toBe(`${sidecar.apiUrl}${flagsPath}/1/activity?limit=2&page=2`);
    const missing = await call(`${sidecar.apiUrl}${flagsPath}/999/activity`, 'phx_writer');
    expect([missing.status, missing.text]).toEqual([404, '']);
  });

  it('serves a stale answer while upstream is down, marked as such, and a 502 past the stale limit', async () => {
    sidecar = await startFlagSidecar(upstream, { FLAG_SIDECAR_CACHE_TTL: '100ms', FLAG_SIDECAR_CACHE_STALE_MAX: '2s' });
    const url = `${sidecar.apiUrl}${flagsPath}/3`;
    const fresh = await call(url, 'phx_reader');
    await new Promise((r) => setTimeout(r, 150));
    await upstream.goDown();
    const stale = await call(url, 'phx_reader');
    expect(stale.status).toBe(200);
    expect(stale.text).toBe(fresh.text);
    expect(stale.headers.get('x-flag-sidecar-cache')).toBe('stale');
    expect(stale.headers.get('warning')).toBe('110 - "Response is Stale"');
    const never = await call(`${sidecar.apiUrl}${flagsPath}/4`, 'phx_reader');
    expect(never.status).toBe(502);
    expect(json(never.text)).toEqual({ type: 'server_error', code: 'upstream_unavailable', detail: 'Upstream could not be reached (connect).', attr: null });
    await new Promise((r) => setTimeout(r, 2000));
    expect((await call(url, 'phx_reader')).status).toBe(502);
  });

  it('answers 504 when upstream does not answer in time, and passes 429 through', async () => {
    sidecar = await startFlagSidecar(upstream, { FLAG_SIDECAR_UPSTREAM_TIMEOUT: '150ms' });
    await call(`${sidecar.apiUrl}${flagsPath}/1`, 'phx_reader'); // the key is known before upstream slows down
    upstream.setMode({ kind: 'slow', delayMs: 1000 });
    const slow = await call(`${sidecar.apiUrl}${flagsPath}/`, 'phx_reader');
    expect([slow.status, json(slow.text).code]).toEqual([504, 'upstream_timeout']);
    const throttled = '{"type":"throttled_error","code":"throttled","detail":"Request was throttled. Expected available in 62 seconds.","attr":null}';
    upstream.setMode({ kind: 'status', status: 429, body: throttled });
    expect(await call(`${sidecar.apiUrl}${flagsPath}/5`, 'phx_reader').then((r) => [r.status, r.text])).toEqual([429, throttled]);
  });

  it('resolves @current from the token, and forwards it when several projects leave it open', async () => {
    sidecar = await startFlagSidecar(upstream);
    const byToken = await call(`${sidecar.apiUrl}/api/projects/@current/feature_flags/?token=${tokenOne}`, 'phx_reader');
    expect(json(byToken.text).count).toBe(7);
    const open = await call(`${sidecar.apiUrl}/api/projects/@current/feature_flags/`, 'phx_writer');
    expect(open.status).toBe(200);
    expect(upstream.requests.some((r) => r.url === '/api/projects/@current/feature_flags/')).toBe(true);
  });

  it('drops cached reads when the snapshot changes', async () => {
    sidecar = await startFlagSidecar(upstream);
    const before = json((await call(`${sidecar.apiUrl}${flagsPath}/4`, 'phx_reader')).text);
    await call(`${upstream.url}${flagsPath}/4/`, 'phx_writer', { method: 'PATCH', body: JSON.stringify({ name: 'Renamed elsewhere' }) });
    await sidecar.poller?.pollNow(1);
    const after = json((await call(`${sidecar.apiUrl}${flagsPath}/4`, 'phx_reader')).text);
    expect([before.name === after.name, after.name]).toEqual([false, 'Renamed elsewhere']);
  });

  it('keeps the cache within its byte bound under many distinct requests, and reports it', async () => {
    sidecar = await startFlagSidecar(upstream, { FLAG_SIDECAR_CACHE_MAX_BYTES: '16KiB' });
    for (let i = 0; i < 60; i++) expect((await call(`${sidecar.apiUrl}${flagsPath}/?search=new&n=${i}`, 'phx_reader')).status).toBe(200);
    const status = json((await call(`${sidecar.opsUrl}/status`, null)).text);
    const cache = status.read_through_cache as { entries: number; bytes: number; max_bytes: number };
    expect(cache.max_bytes).toBe(16 * 1024);
    expect(cache.bytes).toBeLessThanOrEqual(16 * 1024);
    expect(cache.entries).toBeGreaterThan(0);
    expect(cache.entries).toBeLessThan(60);
    const metrics = (await call(`${sidecar.opsUrl}/metrics`, null)).text;
    expect(metrics).toMatch(/flag_sidecar_cache_lookups_total\{cache="read_through",result="miss"\} 60/);
    expect(metrics).toMatch(/flag_sidecar_cache_bytes \d+/);
  });

  it('answers 503 offline for reads that need upstream', async () => {
    sidecar = await startTestSidecar({});
    const list = await call(`${sidecar.apiUrl}${flagsPath}/`, exampleKey);
    expect([list.status, json(list.text).code]).toEqual([503, 'service_unavailable']);
  });
});
