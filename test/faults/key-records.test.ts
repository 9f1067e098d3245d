import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { childEnv } from '../support/child-env.js';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { startFakeUpstream, type FakeProject, type FakeUpstream } from '../support/fake-upstream.js';
import { rootDir, startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

// Issue 15 item 4: a sidecar restarted from its snapshot directory while upstream is down keeps accepting the
// keys upstream had vouched for, within FLAG_SIDECAR_AUTH_GRACE, from digests persisted beside the snapshot.
const token = 'phc_keyrecords';
const secretKey = 'phs_keyrecordsprojectone';
const personalKey = 'phx_keyrecordsreader';
const path = '/api/projects/1/feature_flags/local_evaluation/?send_cohorts';
const minute = 60_000;
const ttl = 5 * minute; // the defaults: FLAG_SIDECAR_AUTH_CACHE_TTL 5m, FLAG_SIDECAR_AUTH_GRACE 1h
const grace = 60 * minute;
const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

let dir: string;
let upstream: FakeUpstream;
let project: FakeProject;
const running: TestSidecar[] = [];
const processes: ChildProcess[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'flag-sidecar-keyrec-'));
  project = { token, definitions: exampleDefinitions(), secretKey };
  upstream = await startFakeUpstream({
    projects: { 1: project },
    keys: [upstreamKey],
    personalKeys: { [personalKey]: { scopes: ['feature_flag:read'], scoped_teams: [1] } },
  });
});
afterEach(async () => {
  for (const child of processes.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(running.splice(0).map((s) => s.stop()));
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A sidecar on the test's snapshot dir; `offsetMs` shifts its clock (a restart that long after the first run). */
async function start(offsetMs = 0, extra: Record<string, string> = {}): Promise<TestSidecar> {
  const s = await startTestSidecar(
    {
      FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
      FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
      FLAG_SIDECAR_PROJECTS: `1:${token}`,
      FLAG_SIDECAR_SNAPSHOT_DIR: dir,
      FLAG_SIDECAR_POLL_INTERVAL: '30s',
      FLAG_SIDECAR_UPSTREAM_TIMEOUT: '300ms',
      FLAG_SIDECAR_UPSTREAM_CONNECT_TIMEOUT: '300ms',
      ...extra,
    },
    { now: () => Date.now() + offsetMs },
  );
  running.push(s);
  await waitFor(() => s.store.ready(), 'a snapshot to serve');
  return s;
}

async function stop(s: TestSidecar): Promise<void> {
  running.splice(running.indexOf(s), 1);
  await s.stop();
}

/** The real entry point as a process on the test's snapshot dir; resolves with its API URL once ready. */
async function startProcess(): Promise<{ child: ChildProcess; api: string; exited: Promise<unknown> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: rootDir,
    env: childEnv({
      FLAG_SIDECAR_LISTEN: '127.0.0.1:0',
      FLAG_SIDECAR_OPS_LISTEN: '127.0.0.1:0',
      FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
      FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
      FLAG_SIDECAR_PROJECTS: `1:${token}`,
      FLAG_SIDECAR_SNAPSHOT_DIR: dir,
      FLAG_SIDECAR_UPSTREAM_TIMEOUT: '300ms',
      FLAG_SIDECAR_UPSTREAM_CONNECT_TIMEOUT: '300ms',
    }),
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  processes.push(child);
  const exited = once(child, 'exit');
  let out = '';
  const api = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.includes('"flag-sidecar listening"'));
      if (line) resolve((JSON.parse(line) as { api: string }).api);
    });
    void exited.then(() => reject(new Error(`exited before listening: ${out}`)));
  });
  return { child, api, exited };
}

/** Status of a GET of local_evaluation with `key`, on a connection of its own (no per-connection memo). */
function statusFor(s: TestSidecar | string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${typeof s === 'string' ? s : s.apiUrl}${path}`, { agent: false, headers: { authorization: `Bearer ${key}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

const statuses = (s: TestSidecar | string, keys: string[]): Promise<number[]> => Promise.all(keys.map((k) => statusFor(s, k)));
const recordsFile = (): string => join(dir, 'key-records.json');

/** A first run: upstream vouches for both keys; the sidecar stops (and writes what it knows). */
async function verifyBothAndStop(): Promise<void> {
  const first = await start();
  expect(await statuses(first, [secretKey, personalKey])).toEqual([200, 200]);
  await stop(first);
}

describe('verified keys across a restart while upstream is down', () => {
  it('serves the keys it had verified within the grace, 503 for others, and 503 once the grace is over', async () => {
    await verifyBothAndStop();
    await upstream.goDown();

    const withinTtl = await start(minute);
    expect(await statuses(withinTtl, [secretKey, personalKey])).toEqual([200, 200]);
    await stop(withinTtl);

    const withinGrace = await start(ttl + 10 * minute);
    expect(await statuses(withinGrace, [secretKey, personalKey])).toEqual([200, 200]);
    expect(await statuses(withinGrace, ['phs_keyrecordsneverseen', 'phx_keyrecordsneverseen'])).toEqual([503, 503]);
    await stop(withinGrace);

    const pastGrace = await start(ttl + grace + minute);
    expect(await statuses(pastGrace, [secretKey, personalKey])).toEqual([503, 503]);
  });

  it('writes the records while running (a kill -9 loses no more than a few seconds), digests only, mode 0600', async () => {
    const first = await start();
    expect(await statuses(first, [secretKey, personalKey])).toEqual([200, 200]);
    await waitFor(() => existsSync(recordsFile()) && readFileSync(recordsFile(), 'utf8').includes(sha256(personalKey)), 'records written', 15_000);
    const text = readFileSync(recordsFile(), 'utf8');
    expect(text).toContain(sha256(secretKey));
    expect(text).not.toContain(secretKey);
    expect(text).not.toContain(personalKey);
    expect(text).not.toContain(sha256(secretKey).slice(0, 12) + '"'); // no prefix field stands in for a key either
    expect(statSync(recordsFile()).mode & 0o777).toBe(0o600);

    // A second instance on the same directory, the first never stopped (as after a kill -9), upstream down.
    await upstream.goDown();
    const second = await start(ttl + minute);
    expect(await statuses(second, [secretKey, personalKey])).toEqual([200, 200]);
  });

  it('re-verifies a persisted key once upstream answers again: a key rotated meanwhile gets 401', async () => {
    await verifyBothAndStop();
    project.secretKey = 'phs_keyrecordsrotated';
    const restarted = await start(ttl + minute);
    expect(await statuses(restarted, [secretKey, personalKey])).toEqual([401, 200]);
    await stop(restarted);
    expect(readFileSync(recordsFile(), 'utf8')).not.toContain(sha256(secretKey));

    await upstream.goDown();
    const again = await start(ttl + 2 * minute);
    expect(await statuses(again, [secretKey, personalKey])).toEqual([503, 200]);
  });
});

describe('the real process', () => {
  it('killed with SIGKILL once the records are written, restarts with upstream down and serves the verified keys', async () => {
    const first = await startProcess();
    await waitFor(async () => (await statusFor(first.api, secretKey)) === 200, 'the first poll and the key verified', 15_000);
    expect(await statusFor(first.api, personalKey)).toBe(200);
    await waitFor(() => existsSync(recordsFile()) && readFileSync(recordsFile(), 'utf8').includes(sha256(personalKey)), 'records written', 15_000);
    first.child.kill('SIGKILL');
    await first.exited;

    await upstream.goDown();
    const second = await startProcess();
    expect(await statuses(second.api, [secretKey, personalKey, 'phx_keyrecordsneverseen'])).toEqual([200, 200, 503]);
    second.child.kill('SIGTERM');
    expect(await second.exited).toEqual([0, null]);
  });
});

describe('a key upstream revokes', () => {
  it('is dropped from memory and from the file: no grace and no restart revives it', async () => {
    let offset = 0;
    const s = await startTestSidecar(
      {
        FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
        FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
        FLAG_SIDECAR_PROJECTS: `1:${token}`,
        FLAG_SIDECAR_SNAPSHOT_DIR: dir,
        FLAG_SIDECAR_UPSTREAM_TIMEOUT: '300ms',
        FLAG_SIDECAR_UPSTREAM_CONNECT_TIMEOUT: '300ms',
      },
      { now: () => Date.now() + offset },
    );
    running.push(s);
    await waitFor(() => s.store.ready(), 'first poll');
    expect(await statusFor(s, personalKey)).toBe(200);

    // Upstream forgets the key (same address, no such key any more), then goes down.
    const port = Number(new URL(upstream.url).port);
    await upstream.close();
    upstream = await startFakeUpstream({ projects: { 1: project }, keys: [upstreamKey], port });
    offset = ttl + minute;
    expect(await statusFor(s, personalKey)).toBe(401);
    await upstream.goDown();
    offset = ttl + 2 * minute; // past the negative TTL, well within the grace of the old answer
    expect(await statusFor(s, personalKey)).toBe(503);
    await stop(s);
    expect(readFileSync(recordsFile(), 'utf8')).not.toContain(`"type":"principal","digest":"${sha256(personalKey)}"`);

    const restarted = await start(ttl + 3 * minute);
    expect(await statusFor(restarted, personalKey)).toBe(503);
  });
});

describe('an unusable records file', () => {
  const future = new Date(Date.now() + 24 * 60 * minute).toISOString();
  const forged = (vouchedAt: string) =>
    JSON.stringify({
      flag_sidecar_key_records: 1,
      written_at: vouchedAt,
      records: [{ type: 'grant', digest: sha256(secretKey), project_id: 1, vouched_at: vouchedAt, expires_at: future, grace_until: future }],
    });
  it.each([
    ['truncated', (text: string) => text.slice(0, Math.floor(text.length / 2))],
    ['garbage', () => '\u0000\u00ff not json at all'],
    ['a snapshot file', () => readFileSync(join(dir, 'project-1.json'), 'utf8')],
    ['a record vouched for in the future', () => forged(future)],
    ['a record of another shape', (text: string) => text.replace(/"type":"grant"/, '"type":"admin"')],
    ['empty', () => ''],
  ])('%s: ignored with a log line, start-up goes on, and nothing is granted from it', async (_name, spoil) => {
    await verifyBothAndStop();
    writeFileSync(recordsFile(), spoil(readFileSync(recordsFile(), 'utf8')), { mode: 0o600 });
    await upstream.goDown();
    const restarted = await start(ttl + minute);
    expect(restarted.logs.some((l) => l.msg === 'ignoring unusable key records')).toBe(true);
    expect(await statuses(restarted, [secretKey, personalKey])).toEqual([503, 503]);
  });

  it('a file over its size bound (FLAG_SIDECAR_AUTH_CACHE_MAX KiB + 64 KiB) is not read', async () => {
    await verifyBothAndStop();
    writeFileSync(recordsFile(), readFileSync(recordsFile(), 'utf8') + ' '.repeat(80 * 1024), { mode: 0o600 });
    await upstream.goDown();
    const restarted = await start(ttl + minute, { FLAG_SIDECAR_AUTH_CACHE_MAX: '10' });
    expect(restarted.logs.some((l) => l.msg === 'ignoring unusable key records' && String(l.err).includes('bytes'))).toBe(true);
    expect(await statuses(restarted, [secretKey, personalKey])).toEqual([503, 503]);
  });

  it('a file others may write is not trusted', async () => {
    await verifyBothAndStop();
    chmodSync(recordsFile(), 0o666);
    await upstream.goDown();
    const restarted = await start(ttl + minute);
    expect(restarted.logs.some((l) => l.msg === 'ignoring unusable key records')).toBe(true);
    expect(await statuses(restarted, [secretKey, personalKey])).toEqual([503, 503]);
  });
});
