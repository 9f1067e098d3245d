import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createPersistence, writeFileAtomic } from '../../src/store/persist.js';
import { createVariant, emptyProject, withChanges } from '../../src/store/snapshot.js';
import { tempDir } from '../support/temp-dir.js';

const setup = () => {
  const dir = tempDir('flag-sidecar-persist-');
  const metrics = createMetrics(new Registry(), { version: 't', commit: 't' });
  const persistence = createPersistence({ dir, integrity: null, logger: createLogger('silent'), metrics, now: () => 0 });
  return { dir, persistence, metrics };
};
const project = (id: number, body: string) =>
  withChanges(emptyProject(id, null), {
    cohorts: createVariant({ body: Buffer.from(body), definitions: { flags: [], groupTypeMapping: {}, cohorts: {}, parsed: { flags: [] } }, upstreamEtag: null, fetchedAt: 1, source: 'upstream' }),
  });

describe('persistence', () => {
  it('writes one file per project atomically and reads them back', async () => {
    const { dir, persistence } = setup();
    await persistence.save(project(1, '{"flags":[]}'));
    await persistence.save(project(2, '{"flags":[],"cohorts":{}}'));
    expect(readdirSync(dir).sort()).toEqual(['project-1.json', 'project-2.json']);
    const loaded = await persistence.loadAll(null);
    expect(loaded.map((p) => [p.projectId, p.cohorts?.body.toString(), p.cohorts?.source])).toEqual([
      [1, '{"flags":[]}', 'disk'],
      [2, '{"flags":[],"cohorts":{}}', 'disk'],
    ]);
    expect((await persistence.loadAll(new Set([2]))).map((p) => p.projectId)).toEqual([2]);
  });

  it('coalesces writes: the newest snapshot ends on disk', async () => {
    const { dir, persistence } = setup();
    const writes = [1, 2, 3, 4, 5].map((n) => persistence.save(project(1, `{"flags":[],"n":${n}}`)));
    await Promise.all(writes);
    await persistence.flush();
    expect(readFileSync(join(dir, 'project-1.json'), 'utf8')).toContain('\\"n\\":5');
  });

  it('skips and counts corrupt files, removes leftover temp files, ignores foreign files', async () => {
    const { dir, persistence, metrics } = setup();
    await persistence.save(project(1, '{"flags":[]}'));
    writeFileSync(join(dir, 'project-2.json'), '{"flag_sidecar_snapshot":1,"proj');
    writeFileSync(join(dir, 'project-3.json.tmp-1-abc'), 'partial');
    writeFileSync(join(dir, 'notes.txt'), 'hello');
    const loaded = await persistence.loadAll(null);
    expect(loaded.map((p) => p.projectId)).toEqual([1]);
    expect(readdirSync(dir).sort()).toEqual(['notes.txt', 'project-1.json', 'project-2.json']);
    const counted = await metrics.snapshotLoads.get();
    expect(counted.values.find((v) => v.labels.outcome === 'rejected')?.value).toBe(1);
  });

  it('refuses a file whose content belongs to another project', async () => {
    const { dir, persistence } = setup();
    await persistence.save(project(1, '{"flags":[]}'));
    writeFileSync(join(dir, 'project-5.json'), readFileSync(join(dir, 'project-1.json')));
    expect((await persistence.loadAll(null)).map((p) => p.projectId)).toEqual([1]);
  });

  it('returns nothing for a missing directory', async () => {
    const missing = createPersistence({ dir: '/nonexistent/flag-sidecar', integrity: null, logger: createLogger('silent'), metrics: createMetrics(new Registry(), { version: 't', commit: 't' }), now: () => 0 });
    expect(await missing.loadAll(null)).toEqual([]);
  });

  it('counts a failed write and keeps going', async () => {
    const metrics = createMetrics(new Registry(), { version: 't', commit: 't' });
    const file = join(tempDir('flag-sidecar-persist-'), 'a-file');
    writeFileSync(file, 'not a directory');
    const persistence = createPersistence({ dir: join(file, 'snapshots'), integrity: null, logger: createLogger('silent'), metrics, now: () => 0 });
    await persistence.save(project(1, '{"flags":[]}'));
    expect((await metrics.persistFailures.get()).values[0]?.value).toBe(1);
    // No retry left to run on in the worker after the test (2 s later, into a temp dir removed by then, which its
    // mkdir would create again); closing's last try fails like the first, the file still in the way.
    await persistence.close();
  });
});

describe('persistence under racing saves', () => {
  it('never drops a save that arrives while a write is finishing, at any microtask offset', async () => {
    for (let hops = 0; hops < 8; hops++) {
      const dir = tempDir('flag-sidecar-persist-');
      const written: string[] = [];
      let onWritten: (() => void) | null = null;
      const persistence = createPersistence({
        dir,
        integrity: null,
        logger: createLogger('silent'),
        metrics: createMetrics(new Registry(), { version: 't', commit: 't' }),
        now: () => 0,
        write: async (path, data) => {
          await writeFileAtomic(path, data);
          written.push(data.toString());
          const hook = onWritten;
          onWritten = null;
          hook?.();
        },
      });
      // When the first write completes, save a newer snapshot `hops` microtasks later.
      let second: Promise<void> = Promise.resolve();
      onWritten = () => {
        let chain = Promise.resolve();
        for (let i = 0; i < hops; i++) chain = chain.then(() => undefined);
        second = chain.then(() => persistence.save(project(1, '{"flags":[],"newer":true}')));
      };
      await persistence.save(project(1, '{"flags":[]}'));
      await new Promise((resolve) => setTimeout(resolve, 5));
      await second;
      await persistence.flush();
      expect(readFileSync(join(dir, 'project-1.json'), 'utf8'), `offset ${hops}`).toContain('newer');
    }
  });
});
