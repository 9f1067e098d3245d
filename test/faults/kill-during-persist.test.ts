import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createPersistence } from '../../src/store/persist.js';
import { builtEntry } from '../support/built-entry.js';
import { upstreamKey } from '../support/fixtures.js';
import { startFakeUpstream } from '../support/fake-upstream.js';
import { startProcess, stopAfterEach } from '../support/sidecar-process.js';
import { waitFor } from '../support/start-sidecar.js';
import { tempDir } from '../support/temp-dir.js';

// kill -9 during persistence: real sidecar processes persist a large snapshot (300 KB) that changes on every poll
// (100 ms), and are SIGKILLed at random moments, 50 times. After every kill the file in the snapshot dir is a
// complete snapshot upstream served (read with the sidecar's own loader: JSON, shape and sha256 checked), and the
// next process starts ready from it. Three lanes run side by side to keep the test under a minute (its timeout
// leaves room for a loaded machine: it took over 90 s while six other test runs shared the two cores). The
// processes run the built entry point (what the image runs, built from src/ for this file): 50 starts under tsx
// were most of the test's time (~0.75 s of CPU each against ~0.2 s).
const entry = builtEntry();
const token = 'phc_killtoken';
const kills = 50;
const lanes = 3;
const started = stopAfterEach();

/** About 300 KB of definitions; flags[0].key carries the version. */
function bigDefinitions(): { flags: Array<Record<string, unknown>>; group_type_mapping: object; cohorts: object } {
  const flags = Array.from({ length: 1000 }, (_, i) => ({
    id: i + 1,
    key: `flag-${i}`,
    active: true,
    filters: { groups: [{ properties: [{ key: 'email', type: 'person', value: `someone-${i}@example.com`, operator: 'exact' }], rollout_percentage: 50 }] },
  }));
  return { flags, group_type_mapping: {}, cohorts: {} };
}

/** The persisted file's inode (each write renames a new file into place), or null. */
function fileId(dir: string): number | null {
  try {
    return statSync(join(dir, 'project-1.json')).ino;
  } catch {
    return null;
  }
}

async function loadFile(dir: string) {
  const metrics = createMetrics(new Registry(), { version: 't', commit: 't' });
  const persistence = createPersistence({ dir, integrity: null, logger: createLogger('silent'), metrics, now: Date.now });
  return (await persistence.loadAll(null, new Map([[1, token]]))).find((p) => p.projectId === 1) ?? null;
}

describe('kill -9 during persistence', () => {
  it(`leaves a complete old or new snapshot after each of ${kills} SIGKILLs, and a restart serves it`, async () => {
    const definitions = bigDefinitions();
    const fake = started.upstream(await startFakeUpstream({ projects: { 1: { token, definitions } }, keys: [upstreamKey] }));
    // A new version every 30 ms: every poll of every process gets new content, so every poll is persisted.
    let version = 0;
    const first = definitions.flags[0] as Record<string, unknown>;
    const changer = setInterval(() => (first.key = `version-${++version}`), 30);
    const results = { killed: 0, midWrite: 0, restartsFromDisk: 0, versionsOnDisk: new Set<string>() };
    try {
      await Promise.all(
        Array.from({ length: lanes }, async (_, lane) => {
          const dir = tempDir('flag-sidecar-kill-');
          const env = {
            FLAG_SIDECAR_UPSTREAM_URL: fake.url,
            FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
            FLAG_SIDECAR_PROJECTS: `1:${token}`,
            FLAG_SIDECAR_POLL_INTERVAL: '100ms',
            FLAG_SIDECAR_SNAPSHOT_DIR: dir,
            FLAG_SIDECAR_LOG_LEVEL: 'info',
          };
          for (let round = lane; round < kills; round += lanes) {
            const hadFile = readdirSync(dir).includes('project-1.json');
            const before = fileId(dir);
            const proc = startProcess(env, entry);
            started.children.push(proc);
            const listening = await proc.listening;
            // A restart from a file that survived a kill: ready at once, from disk.
            if (hadFile) {
              expect(listening.ready, proc.output()).toBe(true);
              expect(proc.logs()).toContain('"source":"disk"');
              results.restartsFromDisk += 1;
            }
            // The first process of a lane lives until it has written once; the others die at random moments, every
            // other one only after it has replaced the file at least once (so the count of versions found on disk
            // below does not hang on how fast a loaded machine lets the processes write).
            if (!hadFile) await waitFor(() => readdirSync(dir).includes('project-1.json'), 'a first persisted file', 20_000);
            else if (round % 2 === 0) await waitFor(() => fileId(dir) !== before, 'a new persisted file', 20_000);
            await new Promise((r) => setTimeout(r, 100 + Math.random() * 400));
            proc.child.kill('SIGKILL');
            const [, signal] = await proc.exited;
            expect(signal).toBe('SIGKILL');
            results.killed += 1;
            const names = readdirSync(dir);
            if (names.some((n) => n.includes('.tmp-'))) results.midWrite += 1;
            if (!names.includes('project-1.json')) continue;
            const loaded = await loadFile(dir);
            expect(loaded, `after kill ${round}: ${names.join(', ')}`).not.toBeNull();
            const onDisk = JSON.parse((loaded?.cohorts?.body as Buffer).toString('utf8')) as ReturnType<typeof bigDefinitions>;
            expect(onDisk.flags).toHaveLength(1000);
            const key = String(onDisk.flags[0]?.key);
            expect(key === 'flag-0' || Number(key.replace('version-', '')) <= version, key).toBe(true);
            results.versionsOnDisk.add(key);
          }
        }),
      );
    } finally {
      clearInterval(changer);
    }
    console.log(`kill -9: ${results.killed} kills, ${results.midWrite} with a write in progress, ${results.restartsFromDisk} restarts from disk, ${results.versionsOnDisk.size} distinct versions found on disk`);
    expect(results.killed).toBe(kills);
    expect(results.restartsFromDisk).toBe(kills - lanes);
    // Processes did write between kills (a kill before a process's first write finds the previous file).
    expect(results.versionsOnDisk.size).toBeGreaterThanOrEqual(kills / 4);
  }, 240_000);
});
