import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { upstreamKey } from '../support/fixtures.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { projectOneToken as token, startProjectOneUpstream, withFlag } from '../support/polling-env.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

// Persistence cannot fail silently (issue 15 item 5): a snapshot directory that cannot be written shows on
// /status and in the metrics, and the write is retried, even while upstream only answers 304, until it succeeds.
// Tests run as root, where file modes do not stop writes: the directory is made unusable by putting a regular
// file where it (or its parent) should be, which fails for root too (EEXIST / ENOTDIR).
let upstream: FakeUpstream;
let sidecar: TestSidecar | null = null;
let root: string;

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'flag-sidecar-faults-persist-'));
  upstream = await startProjectOneUpstream();
});
afterEach(async () => {
  await sidecar?.stop();
  sidecar = null;
  await upstream.close();
  rmSync(root, { recursive: true, force: true });
});

const start = (dir: string) =>
  startTestSidecar(
    {
      FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
      FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
      FLAG_SIDECAR_PROJECTS: `1:${token}`,
      FLAG_SIDECAR_POLL_INTERVAL: '200ms',
      FLAG_SIDECAR_SNAPSHOT_DIR: dir,
    },
    { random: () => 0.5 },
  );

interface PersistenceView {
  ok: boolean;
  pending: boolean;
  last_success_at: string | null;
  last_error: { message: string; at: string } | null;
  consecutive_failures: number;
  next_retry_at: string | null;
}
const persistence = async (s: TestSidecar): Promise<PersistenceView> => {
  const body = (await (await fetch(`${s.opsUrl}/status`)).json()) as { projects: Array<{ persistence: PersistenceView }> };
  return body.projects[0]?.persistence as PersistenceView;
};
const metric = async (s: TestSidecar, pattern: RegExp): Promise<number | null> => {
  const match = pattern.exec(await (await fetch(`${s.opsUrl}/metrics`)).text());
  return match ? Number(match[1]) : null;
};
const pendingGauge = /^flag_sidecar_snapshot_persist_pending\{project="1"\} (\S+)$/m;
const failuresCounter = /^flag_sidecar_snapshot_persist_failures_total\{project="1"\} (\S+)$/m;
const notModifiedPolls = /^flag_sidecar_polls_total\{project="1",variant="cohorts",outcome="not_modified"\} (\S+)$/m;
const updatedPolls = /^flag_sidecar_polls_total\{project="1",variant="cohorts",outcome="updated"\} (\S+)$/m;

describe('an unwritable snapshot directory', () => {
  it('shows on /status and in the metrics, and is retried under 304s until the write succeeds', async () => {
    const dir = join(root, 'snapshots');
    const s = (sidecar = await start(dir));
    await waitFor(async () => (await persistence(s))?.last_success_at !== null, 'the first snapshot on disk', 10_000);
    const healthy = await persistence(s);
    expect(healthy).toMatchObject({ ok: true, pending: false, last_error: null, consecutive_failures: 0, next_retry_at: null });
    expect(await metric(s, pendingGauge)).toBe(0);
    expect(await metric(s, /^flag_sidecar_snapshot_persist_last_success_timestamp_seconds\{project="1"\} (\S+)$/m)).toBeGreaterThan(0);

    // The directory is replaced by a regular file; upstream changes once, then answers 304 to every poll.
    rmSync(dir, { recursive: true });
    writeFileSync(dir, 'not a directory');
    upstream.setDefinitions(1, withFlag('written-after-the-outage'));
    await waitFor(async () => (await persistence(s)).consecutive_failures >= 1, 'a failed write on /status', 10_000);
    const failing = await persistence(s);
    expect(failing.ok).toBe(false);
    expect(failing.pending).toBe(true);
    expect(failing.last_error?.message).toMatch(/EEXIST|ENOTDIR/);
    expect(failing.next_retry_at).not.toBeNull();
    expect(failing.last_success_at).toBe(healthy.last_success_at);
    expect(await metric(s, pendingGauge)).toBe(1);
    expect(await metric(s, failuresCounter)).toBeGreaterThanOrEqual(1);
    expect(s.logs.some((l) => l.msg === 'could not persist snapshot' && l.project === 1)).toBe(true);

    // Still failing: retried (more failures counted) while upstream answers 304 and nothing new is saved.
    const updated = await metric(s, updatedPolls);
    const notModified = (await metric(s, notModifiedPolls)) ?? 0;
    await waitFor(async () => (await persistence(s)).consecutive_failures >= 3, 'three failed attempts', 10_000);
    await waitFor(async () => ((await metric(s, notModifiedPolls)) ?? 0) >= notModified + 2, 'two 304 polls', 10_000);
    expect(await metric(s, updatedPolls)).toBe(updated);

    // Writable again: the retry lands the newest snapshot, with upstream still answering 304.
    rmSync(dir);
    mkdirSync(dir);
    await waitFor(async () => (await persistence(s)).ok, 'the retried write', 10_000);
    const recovered = await persistence(s);
    expect(recovered).toMatchObject({ ok: true, pending: false, consecutive_failures: 0, next_retry_at: null });
    expect(recovered.last_error?.message).toMatch(/EEXIST|ENOTDIR/);
    expect(Date.parse(recovered.last_success_at ?? '')).toBeGreaterThan(Date.parse(recovered.last_error?.at ?? ''));
    expect(await metric(s, updatedPolls)).toBe(updated);
    expect(readFileSync(join(dir, 'project-1.json'), 'utf8')).toContain('written-after-the-outage');
    expect(await metric(s, pendingGauge)).toBe(0);
    expect(s.logs.some((l) => l.msg === 'snapshot persisted again')).toBe(true);
  });

  it('whose parent is a regular file from the start: reported at once, served from memory, written once possible', async () => {
    const parent = join(root, 'volume');
    writeFileSync(parent, 'a file where the volume should be');
    const dir = join(parent, 'snapshots');
    const s = (sidecar = await start(dir));
    await waitFor(() => s.store.ready(), 'the first poll', 10_000);
    await waitFor(async () => (await persistence(s)).consecutive_failures >= 1, 'a failed write on /status', 10_000);
    const failing = await persistence(s);
    expect(failing).toMatchObject({ ok: false, pending: true, last_success_at: null });
    expect(failing.last_error?.message).toMatch(/ENOTDIR|EEXIST/);
    expect((await fetch(`${s.opsUrl}/readyz`)).status).toBe(200);

    rmSync(parent);
    await waitFor(async () => (await persistence(s)).ok, 'the retried write', 10_000);
    expect(existsSync(join(dir, 'project-1.json'))).toBe(true);
    expect((await persistence(s)).last_success_at).not.toBeNull();
  });

  it('a sidecar without a snapshot directory says so (persistence null) and exports no persistence gauges', async () => {
    const s = (sidecar = await startTestSidecar({
      FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
      FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
      FLAG_SIDECAR_PROJECTS: `1:${token}`,
    }));
    expect(await persistence(s)).toBeNull();
    expect(await metric(s, pendingGauge)).toBeNull();
  });
});
