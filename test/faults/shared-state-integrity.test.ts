/**
 * Shared state written by someone without the fleet's secret (issue 37 item 6): a well-formed snapshot forged in
 * Redis (another project's flags, any generation; unsealed as an older version wrote it, or sealed with another
 * secret), a forged key-records.json and a forged shared key entry are ignored, counted and shown in /status; the
 * fleet converges on the leader's real snapshot at its next publish; a sidecar that finds the fleet's snapshot
 * unverifiable (a rolling upgrade from a version without seals) polls upstream itself instead of waiting.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync } from 'node:zlib';
import { describe, expect, it, onTestFinished } from 'vitest';
import { digestKey } from '../../src/auth/principal.js';
import { fleetKeys } from '../../src/fleet/keys.js';
import { encodeNotice } from '../../src/fleet/snapshot-head.js';
import { createSealer, sealHeaderBytes } from '../../src/seal.js';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { fleetRedisClient } from '../support/fleet-redis-client.js';
import { bearer, exampleDefinitions, exampleToken, upstreamKey } from '../support/fixtures.js';
import { pollingEnv, snapshotPath, startProjectOneUpstream, withFlag } from '../support/polling-env.js';
import { redisCall, runRedisPort, runRedisUrl, testPrefix } from '../support/redis.js';
import { principalJson, projectOnePath, redisReady, requestsWith, sharedNames, startFleetSidecar, startSharedKeysUpstream } from '../support/shared-keys-env.js';
import { rootDir, startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');
const iso = (ms: number): string => new Date(ms).toISOString();

/** The value of flag_sidecar_unverifiable_state_total for `kind` (0 when not counted yet). */
async function unverifiable(sidecar: TestSidecar, kind: string): Promise<number> {
  const text = await sidecar.registry.getSingleMetricAsString('flag_sidecar_unverifiable_state_total');
  const line = text.split('\n').find((l) => l.includes(`kind="${kind}"`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

/** The body under `key` in the run's Redis, as a follower reads it: seal line off, decompressed. */
async function storedBody(key: string): Promise<Buffer> {
  const redis = fleetRedisClient(runRedisUrl);
  await waitFor(() => redis.up(), 'a Redis client');
  const raw = await redis.command('test', ['GET', key], true);
  return brotliDecompressSync((raw as Buffer).subarray(sealHeaderBytes));
}

const statusOf = async (sidecar: TestSidecar) => (await (await fetch(`${sidecar.opsUrl}/status`)).json()) as Record<string, any>;
const roleOf = async (sidecar: TestSidecar): Promise<string> => (await statusOf(sidecar)).projects[0].fleet.role;
const served = async (sidecar: TestSidecar): Promise<string> => (await fetch(sidecar.apiUrl + snapshotPath, { headers: bearer(upstreamKey) })).text();

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'flag-sidecar-integrity-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A well-formed published snapshot of project 1 (as a version without seals wrote it: a version 1 head, a raw body). */
function forgedSnapshot(definitions: Record<string, unknown>, generation: number): { head: string; body: string } {
  const body = Buffer.from(JSON.stringify(definitions));
  const head = {
    v: 1,
    generation,
    leader: 'forger/1/deadbeef',
    quotaBody: null,
    plainWanted: false,
    poll: { outcome: 'updated', error: null, failures: 0, at: Date.now(), lastSuccessAt: Date.now() },
    cohorts: { sha256: sha256(body), bytes: body.length, upstreamEtag: '"forged"', servedEtag: null, fetchedAt: Date.now() + 60_000 },
    plain: null,
  };
  return { head: JSON.stringify(head), body: body.toString('utf8') };
}

async function startMember(upstream: FakeUpstream, prefix: string, extra: Record<string, string> = {}): Promise<TestSidecar> {
  const sidecar = await startTestSidecar({
    ...pollingEnv(upstream),
    FLAG_SIDECAR_POLL_INTERVAL: '30s',
    FLAG_SIDECAR_REDIS_URL: runRedisUrl,
    FLAG_SIDECAR_REDIS_PREFIX: prefix,
    FLAG_SIDECAR_LOG_LEVEL: 'warn',
    ...extra,
  });
  onTestFinished(() => sidecar.stop());
  return sidecar;
}

describe('integrity of shared state', () => {
  it('a forged snapshot in Redis is neither served nor persisted, is counted, and the fleet converges on the leader', async () => {
    const upstream = await startProjectOneUpstream();
    onTestFinished(() => upstream.close());
    const prefix = testPrefix();
    const names = fleetKeys(prefix, new URL(upstream.url));
    const leader = await startMember(upstream, prefix);
    await waitFor(async () => (await roleOf(leader)) === 'leader' && leader.store.ready(), 'a ready leader', 15_000);
    const dir = tempDir();
    const follower = await startMember(upstream, prefix, { FLAG_SIDECAR_SNAPSHOT_DIR: dir });
    await waitFor(async () => (await roleOf(follower)) === 'follower' && follower.store.ready(), 'a ready follower', 15_000);
    const generation = (await statusOf(leader)).projects[0].fleet.generation as number;

    const forgeries = [
      { name: 'unsealed (an older version, or a writer without the secret)', seal: (value: string) => value, flag: 'forged-unsealed' },
      {
        name: 'sealed with another secret',
        seal: (value: string, context: string) => createSealer('another-fleets-secret-of-32-characters', 'fleet_secret').seal(value, context).toString('utf8'),
        flag: 'forged-other-secret',
      },
    ];
    for (const [round, forgery] of forgeries.entries()) {
      const forged = forgedSnapshot(withFlag(forgery.flag), 1e12);
      const headKey = names.snapshotHead(1);
      const bodyKey = names.snapshot(1, 'cohorts');
      await redisCall(runRedisPort, 'SET', bodyKey, forgery.seal(forged.body, `snapshot-body\u0000${bodyKey}`), 'PX', '600000');
      await redisCall(runRedisPort, 'SET', headKey, forgery.seal(forged.head, `snapshot-head\u0000${headKey}`), 'PX', '600000');
      await redisCall(runRedisPort, 'PUBLISH', names.snapshotChannel, encodeNotice({ kind: 'snapshot', project: 1, generation: 1e12 }));

      await waitFor(async () => (await unverifiable(follower, 'snapshot_head')) > round, `the ${forgery.name} head counted`);
      expect(await served(follower), forgery.name).not.toContain(forgery.flag);
      const status = await statusOf(follower);
      expect(status.integrity).toEqual({ seal: 'upstream_key', unverifiable: { snapshot_head: round + 1 } });
      expect(status.projects[0].fleet.generation).toBe(generation);
      // The follower polls upstream itself while the fleet's snapshot does not verify.
      expect(status.projects[0].fleet.role).toBe('direct');

      // The leader's next publish (a 304: nothing changed upstream) replaces the forged head and body...
      await leader.poller?.pollNow(1);
      await waitFor(async () => !(await redisCall(runRedisPort, 'GET', bodyKey)).includes(forgery.flag), 'the forged body replaced');
      await waitFor(async () => (await roleOf(follower)) === 'follower', 'a follower again');
      expect(await redisCall(runRedisPort, 'GET', headKey)).not.toContain('forger');
      // ...and the fleet follows the leader's next change.
      upstream.setDefinitions(1, withFlag(`real-${round}`));
      await leader.poller?.pollNow(1);
      await waitFor(async () => (await served(follower)).includes(`real-${round}`), "the leader's snapshot on the follower");
      expect((await storedBody(bodyKey)).toString()).toContain(`real-${round}`);
    }
    await follower.stop();
    const persisted = readFileSync(join(dir, 'project-1.json'), 'utf8');
    expect(persisted).toContain('real-1');
    for (const forgery of forgeries) expect(persisted).not.toContain(forgery.flag);
  });

  it('a rolling upgrade: a sidecar finding an unsealed snapshot under an old leader polls itself once and is ready', async () => {
    const upstream = await startProjectOneUpstream();
    onTestFinished(() => upstream.close());
    const prefix = testPrefix();
    const names = fleetKeys(prefix, new URL(upstream.url));
    // An old-version leader holds the lease and has published its (valid, unsealed) snapshot.
    const old = forgedSnapshot(exampleDefinitions(), 7);
    await redisCall(runRedisPort, 'SET', names.lease(1), 'old-pod/1/abcdef01|7', 'PX', '60000');
    await redisCall(runRedisPort, 'SET', names.snapshot(1, 'cohorts'), old.body, 'PX', '600000');
    await redisCall(runRedisPort, 'SET', names.snapshotHead(1), old.head, 'PX', '600000');

    const sidecar = await startMember(upstream, prefix);
    await waitFor(() => sidecar.store.ready(), 'ready from its own poll', 15_000);
    expect(sidecar.store.get(1)?.cohorts?.source).toBe('upstream');
    expect(await roleOf(sidecar)).toBe('direct');
    expect(await unverifiable(sidecar, 'snapshot_head')).toBeGreaterThan(0);
    expect(upstream.requests.filter((r) => r.url?.includes('local_evaluation')).length).toBe(1);
  });

  it('a forged key-records.json grants nothing: the key is checked upstream', async () => {
    const token = exampleToken;
    const upstream = await startFakeUpstream({ projects: { 1: { token, definitions: exampleDefinitions(), secretKey: 'phs_integrityprojectone' } }, keys: [upstreamKey] });
    onTestFinished(() => upstream.close());
    const dir = tempDir();
    const forgedKey = 'phs_forgedbythevolumewriter';
    const now = Date.now();
    const record = { type: 'grant', digest: digestKey(forgedKey), vouched_at: iso(now), expires_at: iso(now + 300_000), grace_until: iso(now + 3_900_000), project_id: 1 };
    writeFileSync(join(dir, 'key-records.json'), `${JSON.stringify({ flag_sidecar_key_records: 1, written_at: iso(now), records: [record] })}\n`, { mode: 0o600 });

    await upstream.goDown();
    const sidecar = await startTestSidecar({
      FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
      FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
      FLAG_SIDECAR_PROJECTS: `1:${token}`,
      FLAG_SIDECAR_SNAPSHOT_DIR: dir,
      FLAG_SIDECAR_BOOTSTRAP_FILE: join(rootDir, 'config/snapshot.example.json'),
      FLAG_SIDECAR_UPSTREAM_TIMEOUT: '300ms',
      FLAG_SIDECAR_UPSTREAM_CONNECT_TIMEOUT: '300ms',
      FLAG_SIDECAR_LOG_LEVEL: 'warn',
    });
    onTestFinished(() => sidecar.stop());
    const status = async (): Promise<number> => (await fetch(sidecar.apiUrl + snapshotPath, { headers: bearer(forgedKey) })).status;
    // Nothing vouches for the key while upstream is down: 503, not the forged grant's 200.
    expect(await status()).toBe(503);
    expect(await unverifiable(sidecar, 'key_records_file')).toBe(1);
    expect((await statusOf(sidecar)).integrity.unverifiable).toEqual({ key_records_file: 1 });

    await upstream.comeBack();
    expect(await status()).toBe(401);
    expect(requestsWith(upstream, forgedKey)).toBeGreaterThan(0);
  });

  it('a forged shared key entry in Redis grants nothing: the key is checked upstream', async () => {
    const upstream = await startSharedKeysUpstream();
    onTestFinished(() => upstream.close());
    const prefix = testPrefix();
    const forgedKey = 'phx_forged_in_redis';
    const record = principalJson(digestKey(forgedKey), Date.now());
    await redisCall(runRedisPort, 'SET', sharedNames(upstream, prefix, forgedKey).key, record, 'PX', '600000');

    await upstream.goDown();
    const sidecar = await startFleetSidecar(upstream, runRedisUrl, prefix);
    await redisReady(sidecar);
    const status = async (): Promise<number> => (await fetch(sidecar.apiUrl + projectOnePath, { headers: bearer(forgedKey) })).status;
    expect(await status()).toBe(503);
    expect(await unverifiable(sidecar, 'key_entry')).toBe(1);

    await upstream.comeBack();
    expect(await status()).toBe(401);
    expect(requestsWith(upstream, forgedKey)).toBeGreaterThan(0);
  });
});
