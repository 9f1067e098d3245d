import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bearer, exampleDefinitions, get, upstreamKey } from '../support/fixtures.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { pollingEnv, projectOneToken as token, snapshotPath as path, startProjectOneUpstream, status, withFlag } from '../support/polling-env.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';
import { tempDir } from '../support/temp-dir.js';

// A sidecar polling a fake upstream: swaps, 304s, 402, persistence, with real sockets. Every upstream fault
// (down, slow, 5xx, 429, truncated, garbage, huge…) is in the one table of test/faults/upstream-faults.test.ts.
let upstream: FakeUpstream;
let sidecar: TestSidecar | null = null;

beforeEach(async () => {
  upstream = await startProjectOneUpstream();
});
afterEach(async () => {
  await sidecar?.stop();
  sidecar = null;
  await upstream.close();
});

const start = (extra: Record<string, string> = {}) => startTestSidecar({ ...pollingEnv(upstream), ...extra }, { random: () => 0.5 });

const read = (s: TestSidecar, headers: Record<string, string> = {}) => get(s.apiUrl + path, { ...bearer(upstreamKey), ...headers });

describe('polling', () => {
  it('becomes ready from the first poll and serves upstream bytes and ETag verbatim', async () => {
    const s = (sidecar = await start());
    expect((await fetch(`${s.opsUrl}/readyz`)).status).toBe(503);
    await waitFor(() => s.store.ready(), 'first poll');
    const res = await read(s);
    expect(res.status).toBe(200);
    expect(res.text).toBe(JSON.stringify(exampleDefinitions()));
    expect(res.headers.get('etag')).toBe(upstream.etag(1));
    expect(res.headers.get('x-flag-sidecar-source')).toBe('upstream');
    expect((await fetch(`${s.opsUrl}/readyz`)).status).toBe(200);
    const first = upstream.polls()[0];
    expect(first?.url).toBe('/api/projects/1/feature_flags/local_evaluation/?send_cohorts');
    expect(first?.headers.authorization).toBe(`Bearer ${upstreamKey}`);
    expect(first?.headers['user-agent']).toBe('flag-sidecar/test');
  });

  it('sends If-None-Match, keeps the snapshot on 304, swaps when upstream changes', async () => {
    const s = (sidecar = await start());
    await waitFor(() => upstream.polls().length >= 3, 'three polls');
    expect(upstream.polls()[2]?.headers['if-none-match']).toBe(upstream.etag(1));
    const before = s.store.get(1)?.cohorts?.body;
    upstream.setDefinitions(1, withFlag('brand-new'));
    await waitFor(() => s.store.get(1)?.cohorts?.body !== before, 'swap');
    const res = await read(s);
    expect(res.text).toContain('brand-new');
    expect(res.headers.get('etag')).toBe(upstream.etag(1));
    expect((await read(s, { 'if-none-match': upstream.etag(1) })).status).toBe(304);
    expect(await s.registry.metrics()).toMatch(/flag_sidecar_polls_total\{project="1",variant="cohorts",outcome="not_modified"\} [1-9]/);
  });

  it("answers a quota-limited project's 402 on each definitions path as upstream's service for that path does, until a poll succeeds again", async () => {
    const s = (sidecar = await start());
    await waitFor(() => s.store.ready(), 'first poll');
    upstream.setQuotaLimited(1, true);
    await waitFor(async () => (await read(s)).status === 402, '402');
    // Each path's answer is the fake upstream's own for it: Django's body on local_evaluation (project and legacy
    // paths), the flags service's on /flags/definitions (its field order and `attr`), even with a matching ETag.
    const paths = [path, `/api/feature_flag/local_evaluation?token=${token}&send_cohorts`, `/flags/definitions?token=${token}`];
    const answers = async (base: string) =>
      Promise.all(paths.map(async (p) => get(base + p, { ...bearer(upstreamKey), 'if-none-match': upstream.etag(1) }).then((r) => [r.status, r.headers.get('content-type'), r.text])));
    const direct = await answers(upstream.url);
    expect(await answers(s.apiUrl)).toEqual(direct);
    const django = '{"type":"quota_limited","detail":"You have exceeded your feature flag request quota","code":"payment_required"}';
    const flagsService = '{"type":"quota_limited","code":"payment_required","detail":"You have exceeded your feature flag request quota","attr":null}';
    expect(direct.map(([, , text]) => text)).toEqual([django, django, flagsService]);
    expect((await fetch(`${s.opsUrl}/readyz`)).status).toBe(200);
    const st = (await status(s)).projects[0] as Record<string, any>;
    expect(st.quota_limited).toBe(true);
    expect(st.last_poll.outcome).toBe('quota_limited');
    expect(st.last_poll.consecutive_failures).toBeGreaterThanOrEqual(1);
    upstream.setQuotaLimited(1, false);
    await waitFor(async () => (await read(s)).status === 200, 'recovery');
    expect((await status(s)).projects[0]?.quota_limited).toBe(false);
  });

  it('fetches the variant without cohorts on first request, then keeps it polled', async () => {
    const s = (sidecar = await start());
    await waitFor(() => s.store.ready(), 'first poll');
    const plainPath = '/api/projects/1/feature_flags/local_evaluation/';
    const res = await get(s.apiUrl + plainPath, bearer(upstreamKey));
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text).cohorts).toEqual({});
    expect(res.headers.get('etag')).toBe(upstream.etag(1, false));
    const count = () => upstream.polls().filter((r) => r.url === plainPath).length;
    const seen = count();
    await waitFor(() => count() > seen, 'plain variant polled by the loop');
    await waitFor(async () => (await status(s)).projects[0]?.last_poll?.without_cohorts?.outcome === 'not_modified', 'plain status');
  });

  it('serves the with-cohorts body, marked, when the variant without cohorts cannot be fetched; waits only while a fetch runs', async () => {
    const s = (sidecar = await start());
    await waitFor(() => s.store.ready(), 'first poll');
    upstream.setMode({ kind: 'slow', delayMs: 2000 });
    const plainPath = '/api/projects/1/feature_flags/local_evaluation/';
    const [first, concurrent] = await Promise.all([get(s.apiUrl + plainPath, bearer(upstreamKey)), get(s.apiUrl + plainPath, bearer(upstreamKey))]);
    expect(concurrent.headers.get('x-flag-sidecar-variant')).toBe('with-cohorts');
    expect(first.status).toBe(200);
    expect(first.headers.get('x-flag-sidecar-variant')).toBe('with-cohorts');
    expect(JSON.parse(first.text).cohorts).not.toEqual({});
    // Once that fetch has failed, later requests do not wait: the poll loop keeps trying.
    await waitFor(async () => /variant="plain",outcome="failed"\} [1-9]/.test(await s.registry.metrics()), 'the failed fetch');
    const started = performance.now();
    const second = await get(s.apiUrl + plainPath, bearer(upstreamKey));
    expect(performance.now() - started).toBeLessThan(150);
    expect(second.headers.get('x-flag-sidecar-variant')).toBe('with-cohorts');
  });

  it('persists the last good snapshot and starts from it with upstream down, ready at once', async () => {
    const dir = tempDir('flag-sidecar-');
    const s = (sidecar = await start({ FLAG_SIDECAR_SNAPSHOT_DIR: dir }));
    await waitFor(() => readdirSync(dir).includes('project-1.json'), 'persisted file');
    const served = await read(s);
    await s.stop();
    await upstream.goDown();
    const started = performance.now();
    const again = (sidecar = await start({ FLAG_SIDECAR_SNAPSHOT_DIR: dir }));
    expect(again.store.ready()).toBe(true);
    expect(performance.now() - started).toBeLessThan(1000);
    const res = await read(again);
    expect(res.text).toBe(served.text);
    expect(res.headers.get('etag')).toBe(served.headers.get('etag'));
    expect(res.headers.get('x-flag-sidecar-source')).toBe('disk');
    const file = readFileSync(join(dir, 'project-1.json'), 'utf8');
    expect(file).not.toContain(upstreamKey);
  });

  it('ignores a corrupt persisted file and says so', async () => {
    const dir = tempDir('flag-sidecar-');
    writeFileSync(join(dir, 'project-1.json'), '{"flag_sidecar_snapshot":1,"projects":[{"project_id":1,"varia');
    await upstream.goDown();
    const s = (sidecar = await start({ FLAG_SIDECAR_SNAPSHOT_DIR: dir }));
    expect(s.store.ready()).toBe(false);
    expect((await read(s)).status).toBe(503);
    expect(s.logs.some((l) => l.msg === 'ignoring unusable persisted snapshot')).toBe(true);
  });
});
