import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { call, json, startFlagSidecar, startFlagUpstream, tokenOne } from '../support/flag-api-env.js';
import { upstreamKey } from '../support/fixtures.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

// remote_config through the sidecar: upstream's body verbatim (double-encoded JSON string, empty 200, empty
// 404), by id or key; flags callers read are kept warm with the sidecar's own key (a project secret key here),
// so callers of that kind never wait on upstream again; personal keys read through per key.
let upstream: FakeUpstream;
let sidecar: TestSidecar | null = null;

beforeEach(async () => {
  upstream = await startFlagUpstream();
  upstream.flagApi.setRemoteConfig(1, 3, { payload: '{"banner": "staff"}' });
  upstream.flagApi.setRemoteConfig(1, 'empty-config', { payload: null });
  upstream.flagApi.setRemoteConfig(1, 'sealed', { payload: '{"secret": 42}', encrypted: true });
});
afterEach(async () => {
  await sidecar?.stop();
  sidecar = null;
  await upstream.close();
});

const path = (flag: string | number) => `/api/projects/1/feature_flags/${flag}/remote_config/`;
/** remote_config requests upstream saw with `key`. */
const asked = (key: string) => upstream.requests.filter((r) => r.url.includes('/remote_config') && r.headers.authorization === `Bearer ${key}`).length;

describe('remote_config', () => {
  it('passes upstream bodies through verbatim: double-encoded payloads, empty 200, empty 404, by id or key', async () => {
    sidecar = await startFlagSidecar(upstream);
    for (const flag of [3, 'internal-tools', 'empty-config', 'new-checkout', 'no-such-flag']) {
      const direct = await call(`${upstream.url}${path(flag)}`, 'phx_reader');
      const through = await call(`${sidecar.apiUrl}${path(flag)}`, 'phx_reader');
      expect([through.status, through.text], String(flag)).toEqual([direct.status, direct.text]);
    }
    expect((await call(`${sidecar.apiUrl}${path(3)}`, 'phx_reader')).text).toBe(JSON.stringify('{"banner": "staff"}'));
    expect((await call(`${sidecar.apiUrl}${path('no-such-flag')}`, 'phx_reader')).text).toBe('');
  });

  it('keeps a flag warm for secret-key callers: fetched with the sidecar key, refreshed after a poll that changed it', async () => {
    sidecar = await startFlagSidecar(upstream, { FLAG_SIDECAR_CACHE_TTL: '50ms' });
    const sdkPath = `/api/projects/@current/feature_flags/internal-tools/remote_config?token=${tokenOne}`;
    const first = await call(`${sidecar.apiUrl}${sdkPath}`, 'phs_projectone');
    expect([first.status, first.text]).toEqual([200, JSON.stringify('{"banner": "staff"}')]);
    expect(asked('phs_projectone')).toBe(1);
    await waitFor(() => asked(upstreamKey) === 1, 'the sidecar key to fetch the flag');
    await new Promise((r) => setTimeout(r, 100)); // past the read-through TTL
    const warm = await call(`${sidecar.apiUrl}${sdkPath}`, 'phs_projectone');
    expect([warm.text, warm.headers.get('x-flag-sidecar-source')]).toEqual([first.text, 'cache']);
    expect(asked('phs_projectone')).toBe(1);

    upstream.flagApi.setRemoteConfig(1, 'internal-tools', { payload: '{"banner": "everyone"}' });
    await sidecar.poller?.pollNow(1);
    await waitFor(() => asked(upstreamKey) === 2, 'the refresh after the poll');
    await waitFor(async () => (await call(`${sidecar?.apiUrl}${sdkPath}`, 'phs_projectone')).text === JSON.stringify('{"banner": "everyone"}'), 'the new payload');
    expect(asked('phs_projectone')).toBe(1);
    // Another project's secret key is refused by the sidecar itself, though the answer is in memory.
    const foreign = await call(`${sidecar.apiUrl}${sdkPath}`, 'phs_projecttwo');
    expect(foreign.status).toBe(403);
  });

  it("never keeps a caller's answer for others: what upstream resolved for one key stays that key's", async () => {
    // A sidecar serving project 1 only resolves @current to 1; upstream resolves it to project 2 for project 2's key.
    upstream.flagApi.setRemoteConfig(2, 'internal-tools', { payload: '{"banner": "project two"}' });
    sidecar = await startTestSidecar({
      FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
      FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
      FLAG_SIDECAR_PROJECTS: `1:${tokenOne}`,
    });
    await sidecar.poller?.pollNow(1);
    const other = await call(`${sidecar.apiUrl}/api/projects/@current/feature_flags/internal-tools/remote_config`, 'phs_projecttwo');
    expect(other.text).toBe(JSON.stringify('{"banner": "project two"}'));
    await waitFor(() => asked(upstreamKey) === 1, 'the sidecar key to fetch the flag');
    const own = await call(`${sidecar.apiUrl}${path('internal-tools')}`, 'phs_projectone');
    expect(own.text).toBe(JSON.stringify('{"banner": "staff"}'));
  });

  it('answers encrypted payloads by key kind: plaintext for personal keys, redacted for secret keys', async () => {
    sidecar = await startFlagSidecar(upstream);
    const personal = await call(`${sidecar.apiUrl}${path('sealed')}`, 'phx_reader');
    const secret = await call(`${sidecar.apiUrl}${path('sealed')}`, 'phs_projectone');
    expect(personal.text).toBe(JSON.stringify('{"secret": 42}'));
    expect(secret.text).toBe(JSON.stringify('********* (encrypted)'));
    // Personal keys are not the sidecar key's kind: each reads through with its own key.
    await call(`${sidecar.apiUrl}${path('sealed')}`, 'phx_writer');
    expect([asked('phx_reader'), asked('phx_writer')]).toEqual([1, 1]);
  });

  it('drops warm entries after a write through the sidecar, so the next read asks upstream', async () => {
    sidecar = await startFlagSidecar(upstream);
    await call(`${sidecar.apiUrl}${path(3)}`, 'phs_projectone');
    const patched = await call(`${sidecar.apiUrl}/api/projects/1/feature_flags/3/`, 'phx_writer', {
      method: 'PATCH',
      body: JSON.stringify({ filters: { ...upstream.flagApi.flags(1).find((f) => f.id === 3)?.filters, payloads: { true: '{"banner": "new"}' } } }),
    });
    expect(patched.status).toBe(200);
    const after = await call(`${sidecar.apiUrl}${path(3)}`, 'phs_projectone');
    expect(after.text).toBe(JSON.stringify('{"banner": "new"}'));
    expect(json(patched.text).is_remote_configuration).toBe(true);
    expect(asked('phs_projectone')).toBe(2);
  });

  it('costs no more than the reads: 165 reads of flags that are no remote config, or missing, over 10 polls', async () => {
    sidecar = await startFlagSidecar(upstream);
    const flags = ['new-checkout', 'pricing-experiment', 'beta-programme', 'enterprise-dashboards', 'fast-search', ...Array.from({ length: 10 }, (_, i) => `no-such-flag-${i}`)];
    const before = upstream.requests.filter((r) => r.url.includes('/remote_config')).length;
    const round = async (): Promise<void> => {
      for (const flag of flags) expect((await call(`${sidecar?.apiUrl}${path(flag)}`, 'phs_projectone')).status).toBe(404);
    };
    await round();
    await waitFor(() => asked(upstreamKey) === flags.length, 'the sidecar key to fetch each flag once');
    for (let poll = 0; poll < 10; poll++) {
      await sidecar.poller?.pollNow(1);
      await round();
    }
    await new Promise((r) => setTimeout(r, 100)); // any refresh a poll started has had time to ask
    const cost = upstream.requests.filter((r) => r.url.includes('/remote_config')).length - before;
    expect(flags.length * 11).toBe(165);
    expect(cost).toBeLessThanOrEqual(165);
    // Each flag: the first read through with the caller's key, one fetch with the sidecar's; no 404 asked again.
    expect([asked('phs_projectone'), asked(upstreamKey), cost]).toEqual([flags.length, flags.length, 2 * flags.length]);
  });

  it("refreshes a remote-config flag once when its definition changes, never on polls that change nothing of it", async () => {
    sidecar = await startFlagSidecar(upstream);
    const read = async () => (await call(`${sidecar?.apiUrl}${path('internal-tools')}`, 'phs_projectone')).text;
    expect(await read()).toBe(JSON.stringify('{"banner": "staff"}'));
    await waitFor(() => asked(upstreamKey) === 1, 'the sidecar key to fetch the flag');
    for (let poll = 0; poll < 5; poll++) await sidecar.poller?.pollNow(1);
    // Another flag's edit changes the definitions, not this flag's.
    upstream.flagApi.setRemoteConfig(1, 'empty-config', { payload: '"now set"' });
    await sidecar.poller?.pollNow(1);
    await new Promise((r) => setTimeout(r, 100));
    expect(asked(upstreamKey)).toBe(1);
    upstream.flagApi.setRemoteConfig(1, 'internal-tools', { payload: '{"banner": "everyone"}' });
    await sidecar.poller?.pollNow(1);
    await waitFor(() => asked(upstreamKey) === 2, 'the refresh after the changed definition');
    await waitFor(async () => (await read()) === JSON.stringify('{"banner": "everyone"}'), 'the new payload');
    for (let poll = 0; poll < 5; poll++) await sidecar.poller?.pollNow(1);
    await new Promise((r) => setTimeout(r, 100));
    expect([asked(upstreamKey), asked('phs_projectone')]).toEqual([2, 1]);
  });

  it('asks again about a flag it found missing once the definitions change (it may exist now), not before', async () => {
    sidecar = await startFlagSidecar(upstream);
    const read = async () => call(`${sidecar?.apiUrl}${path('later-config')}`, 'phs_projectone');
    expect((await read()).status).toBe(404);
    await waitFor(() => asked(upstreamKey) === 1, 'the sidecar key to fetch the flag');
    for (let poll = 0; poll < 3; poll++) await sidecar.poller?.pollNow(1);
    await new Promise((r) => setTimeout(r, 100));
    expect(asked(upstreamKey)).toBe(1);
    upstream.flagApi.setRemoteConfig(1, 'later-config', { payload: '"here"' });
    await sidecar.poller?.pollNow(1);
    await waitFor(() => asked(upstreamKey) === 2, 'the fetch after the definitions changed');
    const now = await read();
    expect([now.status, now.text, now.headers.get('x-flag-sidecar-source')]).toEqual([200, JSON.stringify('"here"'), 'cache']);
  });
});
