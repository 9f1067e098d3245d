/**
 * A project configured without its token (`FLAG_SIDECAR_PROJECTS=1`): the sidecar learns the token from upstream
 * with its own key (`GET /api/projects/:id/`, needs project:read) — a token reset since it was stored included —
 * or, when upstream does not give it, from the stored snapshot, and otherwise
 * refuses to start with a message naming the fix — never a sidecar whose SDK paths all answer 401.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { perTestServers, projectOneToken, startProjectOneUpstream } from '../support/polling-env.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';
import { tempDir } from '../support/temp-dir.js';

const reader = 'phx_projectreader0123456789';
const flagsOnly = 'phx_flagsonly0123456789';
const held = perTestServers();

const env = (u: FakeUpstream, key: string, extra: Record<string, string> = {}): Record<string, string> => ({
  FLAG_SIDECAR_UPSTREAM_URL: u.url,
  FLAG_SIDECAR_UPSTREAM_KEY: key,
  FLAG_SIDECAR_PROJECTS: '1',
  FLAG_SIDECAR_UPSTREAM_TIMEOUT: '300ms',
  FLAG_SIDECAR_UPSTREAM_CONNECT_TIMEOUT: '300ms',
  ...extra,
});
const definitions = (s: TestSidecar, token: string) => fetch(`${s.apiUrl}/flags/definitions?token=${token}&send_cohorts`, { headers: { authorization: `Bearer ${reader}` } });
const startError = (e: Record<string, string>) => startTestSidecar(e).then(
  (s) => {
    held.sidecar = s;
    throw new Error('started');
  },
  (error: unknown) => error as Error,
);

/** Wait until `sidecar` has a snapshot upstream confirmed (written to its snapshot dir at once). */
const untilStored = (sidecar: TestSidecar): Promise<void> => waitFor(() => sidecar.store.get(1)?.cohorts?.source === 'upstream', 'the first poll');
/** Run a sidecar on `dir` until it stored a snapshot of `upstream`'s project 1 (with its token), then stop it. */
async function runUntilStored(upstream: FakeUpstream, dir: string): Promise<void> {
  const sidecar = await startTestSidecar(env(upstream, reader, { FLAG_SIDECAR_SNAPSHOT_DIR: dir }));
  await untilStored(sidecar);
  await sidecar.stop();
}

describe('a project configured without its token', () => {
  it('learns it from upstream with the sidecar\'s personal key, says so, and SDK paths work', async () => {
    const upstream = (held.upstream = await startProjectOneUpstream({ [reader]: { scopes: ['feature_flag:read', 'project:read'] } }));
    const sidecar = (held.sidecar = await startTestSidecar(env(upstream, reader)));
    expect(upstream.requests.filter((r) => r.url === '/api/projects/1/').map((r) => r.headers.authorization)).toEqual([`Bearer ${reader}`]);
    expect(sidecar.logs.find((l) => l.msg === 'project token learned from upstream (GET /api/projects/:id/)')).toMatchObject({ project: 1, from: 'upstream' });
    await waitFor(() => sidecar?.store.ready() === true, 'the first poll');
    expect((await definitions(sidecar, projectOneToken)).status).toBe(200);
    expect(JSON.stringify(sidecar.logs)).not.toContain(projectOneToken);
  });

  it('refuses to start (a ConfigError, exit 2) when upstream will not give it to the key, naming the fix', async () => {
    const upstream = (held.upstream = await startProjectOneUpstream({ [flagsOnly]: { scopes: ['feature_flag:read'] } }));
    const error = await startError(env(upstream, flagsOnly));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toContain('project 1 has no token');
    expect(error.message).toContain("API key missing required scope 'project:read'");
    expect(error.message).toContain('FLAG_SIDECAR_PROJECTS as 1:phc_…');
    expect(error.message).not.toContain(flagsOnly);
  });

  it('a project secret key cannot read projects: refused without asking upstream', async () => {
    const upstream = (held.upstream = await startProjectOneUpstream());
    const error = await startError(env(upstream, 'phs_sidecarownkey'));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toContain('a project secret key cannot read it');
    expect(upstream.requests.some((r) => r.url.startsWith('/api/projects/1/') && !r.url.includes('feature_flags'))).toBe(false);
  });

  it('upstream unreachable with nothing stored: a failed start (not a bad configuration), saying how to start without upstream', async () => {
    const upstream = (held.upstream = await startProjectOneUpstream({ [reader]: { scopes: ['*'] } }));
    upstream.setMode({ kind: 'status', status: 503, body: '{"detail":"down for maintenance"}' });
    const error = await startError(env(upstream, reader));
    expect(error).not.toBeInstanceOf(ConfigError);
    expect(error.message).toContain('upstream answered 503: down for maintenance');
    expect(error.message).toContain('set each token in FLAG_SIDECAR_PROJECTS');
  });

  it('a token learned once is persisted with the snapshot: the next start during an outage takes it from disk', async () => {
    const dir = tempDir('token-');
    const upstream = (held.upstream = await startProjectOneUpstream({ [reader]: { scopes: ['*'] } }));
    await runUntilStored(upstream, dir);
    upstream.setMode({ kind: 'reset' });
    const before = upstream.requests.length;
    const sidecar = (held.sidecar = await startTestSidecar(env(upstream, reader, { FLAG_SIDECAR_SNAPSHOT_DIR: dir })));
    expect(upstream.requests.slice(before).some((r) => r.url === '/api/projects/1/')).toBe(true);
    expect(sidecar.logs.find((l) => l.msg === 'project token taken from the stored snapshot; upstream did not confirm it')).toMatchObject({ project: 1, level: 'warn' });
    expect((await definitions(sidecar, projectOneToken)).status).toBe(200);
  });

  it('a token reset in PostHog since it was stored: the next start asks upstream and serves the new one', async () => {
    const dir = tempDir('token-');
    const before = (held.upstream = await startProjectOneUpstream({ [reader]: { scopes: ['*'] } }));
    await runUntilStored(before, dir);
    await before.close();
    const rotated = 'phc_resetinposthog0123456789';
    const upstream = (held.upstream = await startFakeUpstream({ projects: { 1: { token: rotated, definitions: exampleDefinitions() } }, keys: [upstreamKey], personalKeys: { [reader]: { scopes: ['*'] } } }));
    const sidecar = (held.sidecar = await startTestSidecar(env(upstream, reader, { FLAG_SIDECAR_SNAPSHOT_DIR: dir })));
    expect(sidecar.logs.find((l) => String(l.msg).startsWith('project token changed upstream'))).toMatchObject({ project: 1, level: 'warn' });
    expect((await definitions(sidecar, rotated)).status).toBe(200);
    expect((await definitions(sidecar, projectOneToken)).status).toBe(401);
    expect(JSON.stringify(sidecar.logs)).not.toContain(rotated);
    // The new token is stored with the first snapshot upstream confirms: a start during an outage keeps it.
    await untilStored(sidecar);
    await sidecar.stop();
    upstream.setMode({ kind: 'reset' });
    const later = (held.sidecar = await startTestSidecar(env(upstream, reader, { FLAG_SIDECAR_SNAPSHOT_DIR: dir })));
    expect((await definitions(later, rotated)).status).toBe(200);
  });

  it('offline: a bootstrap file without a token for a configured project is refused, naming the fix', async () => {
    const file = join(tempDir('token-'), 'bare.json');
    writeFileSync(file, JSON.stringify(exampleDefinitions()));
    const error = await startError({ FLAG_SIDECAR_BOOTSTRAP_FILE: file, FLAG_SIDECAR_PROJECTS: '1' });
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toContain('project 1 has no token (offline');
  });
});
