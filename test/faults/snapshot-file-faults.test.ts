import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createPersistence } from '../../src/store/persist.js';
import { bearer, exampleDefinitions, get, upstreamKey } from '../support/fixtures.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { pollingEnv, projectOneToken as token, snapshotPath as path, startProjectOneUpstream } from '../support/polling-env.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';
import { tempDir } from '../support/temp-dir.js';

// The persisted snapshot (FLAG_SIDECAR_SNAPSHOT_DIR) damaged or foreign, and a directory that cannot be written:
// the sidecar starts from the bootstrap file (upstream down) or from upstream, says why in its log and metrics,
// never serves the bad file, and replaces it with a good one once upstream answers.
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

const start = (env: Record<string, string>) => startTestSidecar({ ...pollingEnv(upstream), ...env });

/** A file exactly as the sidecar persists it for project 1 (written by a real sidecar). */
async function persistedFile(): Promise<string> {
  const dir = tempDir('flag-sidecar-faults-');
  const s = await start({ FLAG_SIDECAR_SNAPSHOT_DIR: dir });
  await waitFor(() => s.store.get(1)?.cohorts?.source === 'upstream', 'first poll');
  await s.stop();
  return readFileSync(join(dir, 'project-1.json'), 'utf8');
}

/** A bootstrap file for project 1 whose definitions carry the flag `from-bootstrap`. */
function bootstrapFile(dir: string): string {
  const definitions = exampleDefinitions();
  (definitions.flags as unknown[]).push({ id: 98, key: 'from-bootstrap', active: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
  const file = join(dir, 'bootstrap.json');
  writeFileSync(file, JSON.stringify({ flag_sidecar_snapshot: 1, projects: [{ project_id: 1, token, fetched_at: '2020-01-01T00:00:00Z', local_evaluation: definitions }] }));
  return file;
}

/** Project 1's file in `dir`, read with the sidecar's own loader (null when it would not be used). */
async function loadProjectFile(dir: string) {
  const metrics = createMetrics(new Registry(), { version: 't', commit: 't' });
  const loaded = await createPersistence({ dir, integrity: null, logger: createLogger('silent'), metrics, now: Date.now }).loadAll(null);
  return loaded.find((p) => p.projectId === 1) ?? null;
}

/** [name, the damaged project-1.json made from a good one]. */
const damages: Array<[string, (good: string) => string | Buffer]> = [
  ['truncated', (good) => good.slice(0, Math.floor(good.length / 2))],
  ['empty', () => ''],
  ['zero-filled (a crash before the data reached the disk)', () => Buffer.alloc(4096)],
  ['not JSON', () => '{flags: oops'],
  ['a JSON array', () => '[]'],
  ['the wrong shape', () => JSON.stringify({ flag_sidecar_snapshot: 1, projects: [{ project_id: 1, variants: { cohorts: { body: '{"flags":"nope"}' } } }] })],
  ['a body that does not match its sha256', (good) => good.replace('new-checkout', 'from-bad-file')],
  ['a future format version', (good) => good.replace('"flag_sidecar_snapshot": 1', '"flag_sidecar_snapshot": 2')],
  ["another project's snapshot", (good) => good.replace('"project_id": 1', '"project_id": 2')],
  ["another project's token", (good) => good.replace(token, 'phc_someoneelsesproject')],
];

describe('a damaged or foreign persisted snapshot', () => {
  it.each(damages)('%s: starts from the bootstrap file with upstream down, says why, then heals from upstream', async (_name, damage) => {
    const good = await persistedFile();
    const dir = tempDir('flag-sidecar-faults-');
    writeFileSync(join(dir, 'project-1.json'), damage(good));
    await upstream.goDown();
    const s = (sidecar = await start({ FLAG_SIDECAR_SNAPSHOT_DIR: dir, FLAG_SIDECAR_BOOTSTRAP_FILE: bootstrapFile(dir) }));
    expect(s.store.ready()).toBe(true);
    const served = await get(s.apiUrl + path, bearer(upstreamKey));
    expect(served.status).toBe(200);
    expect(served.headers.get('x-flag-sidecar-source')).toBe('bootstrap');
    expect(served.text).toContain('from-bootstrap');
    expect(served.text).not.toContain('from-bad-file');
    expect(s.logs.some((l) => l.msg === 'ignoring unusable persisted snapshot' && typeof l.err === 'string')).toBe(true);
    expect(await s.registry.metrics()).toMatch(/flag_sidecar_snapshot_loads_total\{source="disk",outcome="rejected"\} 1/);
    // Upstream back: served from upstream, and the file on disk is a good snapshot again.
    await upstream.comeBack();
    await waitFor(() => s.store.get(1)?.cohorts?.source === 'upstream', 'first poll', 8000);
    await waitFor(async () => (await loadProjectFile(dir))?.cohorts?.body.equals(s.store.get(1)?.cohorts?.body as Buffer) === true, 'a good file', 8000);
  }, 20_000);
});

describe('a snapshot directory that cannot be used', () => {
  it.each([
    ['under a regular file (ENOTDIR)', (dir: string) => join(dir, 'not-a-dir', 'snapshots')],
    ['a regular file itself', (dir: string) => join(dir, 'not-a-dir')],
  ])('%s: starts from upstream, serves, counts and logs every failed write', async (_name, snapshotDir) => {
    const dir = tempDir('flag-sidecar-faults-');
    writeFileSync(join(dir, 'not-a-dir'), 'a file');
    const s = (sidecar = await start({ FLAG_SIDECAR_SNAPSHOT_DIR: snapshotDir(dir) }));
    await waitFor(() => s.store.ready(), 'first poll');
    expect((await get(s.apiUrl + path, bearer(upstreamKey))).status).toBe(200);
    await waitFor(async () => /flag_sidecar_snapshot_persist_failures_total\{project="1"\} [1-9]/.test(await s.registry.metrics()), 'a counted failure');
    expect(s.logs.some((l) => l.msg === 'could not persist snapshot' && /ENOTDIR|EEXIST/.test(String(l.err)))).toBe(true);
    expect((await fetch(`${s.opsUrl}/readyz`)).status).toBe(200);
    expect(readFileSync(join(dir, 'not-a-dir'), 'utf8')).toBe('a file');
  });
});

describe("a bootstrap file of another project's token", () => {
  it('is not served as the configured project: not ready with upstream down, says why', async () => {
    const dir = tempDir('flag-sidecar-faults-');
    const file = join(dir, 'bootstrap.json');
    writeFileSync(file, JSON.stringify({ flag_sidecar_snapshot: 1, projects: [{ project_id: 1, token: 'phc_someoneelsesproject', local_evaluation: exampleDefinitions() }] }));
    await upstream.goDown();
    const s = (sidecar = await start({ FLAG_SIDECAR_BOOTSTRAP_FILE: file }));
    expect(s.store.ready()).toBe(false);
    expect((await get(s.apiUrl + path, bearer(upstreamKey))).status).toBe(503);
    expect(s.logs.some((l) => l.msg === 'ignoring unusable bootstrap file' && String(l.err).includes('phc_some'))).toBe(true);
    expect(await s.registry.metrics()).toMatch(/flag_sidecar_snapshot_loads_total\{source="bootstrap",outcome="rejected"\} 1/);
  });
});
