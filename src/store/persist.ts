/**
 * Persistence of the last good snapshot of each project in FLAG_SIDECAR_SNAPSHOT_DIR, one file per project
 * (`project-<id>.json`). Writes are atomic (temp file, fsync, rename, fsync of the directory), serialized per
 * project and coalesced (only the newest pending snapshot is written). Reading at start skips and reports a
 * file that is corrupt or truncated; such a file is never served.
 */
import { mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { parseSnapshotFile, serializeProjectFile } from './snapshot-file.js';
import type { ProjectSnapshot } from './snapshot.js';

/** Dependencies of createPersistence. */
export interface PersistenceDeps {
  readonly dir: string;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly now: () => number;
  /** How a file is written (tests wrap it); writeFileAtomic by default. */
  readonly write?: (path: string, data: string) => Promise<void>;
}

const fileName = (projectId: number): string => `project-${projectId}.json`;
const filePattern = /^project-(\d+)\.json$/;

/** Write `data` to `path` atomically: readers see the old file or the new one, never a mix. */
export async function writeFileAtomic(path: string, data: string): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  try {
    const handle = await open(tmp, 'w', 0o600);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, path);
  } catch (error) {
    await unlink(tmp).catch(() => undefined);
    throw error;
  }
  const dir = await open(join(path, '..'), 'r').catch(() => null);
  if (dir) await dir.sync().catch(() => undefined).finally(() => dir.close());
}

/** Create the persistence for one directory. */
export function createPersistence(deps: PersistenceDeps) {
  const { dir, logger, metrics } = deps;
  const write = deps.write ?? writeFileAtomic;
  const pending = new Map<number, ProjectSnapshot>();
  const running = new Map<number, Promise<void>>();

  function failed(projectId: number, error: unknown): void {
    metrics.persistFailures.inc();
    logger.error({ project: projectId, dir, err: (error as Error).message }, 'could not persist snapshot');
  }

  /**
   * Write the project's pending snapshots until none is left. The last check of `pending` and the removal from
   * `running` happen in the same synchronous step, so a save() can never find a finishing run and be dropped.
   */
  async function drain(projectId: number): Promise<void> {
    try {
      await mkdir(dir, { recursive: true });
    } catch (error) {
      pending.delete(projectId);
      running.delete(projectId);
      return failed(projectId, error);
    }
    for (;;) {
      const next = pending.get(projectId);
      if (next === undefined) {
        running.delete(projectId);
        return;
      }
      pending.delete(projectId);
      try {
        await write(join(dir, fileName(projectId)), serializeProjectFile(next, deps.now()));
      } catch (error) {
        failed(projectId, error);
      }
    }
  }

  return {
    /** Queue `project` to be written; resolves when it (or a newer one) is on disk or has failed. Never rejects. */
    save(project: ProjectSnapshot): Promise<void> {
      pending.set(project.projectId, project);
      let run = running.get(project.projectId);
      if (run === undefined) {
        run = drain(project.projectId);
        running.set(project.projectId, run);
      }
      return run;
    },

    /** Wait for every queued write. */
    async flush(): Promise<void> {
      while (running.size > 0) await Promise.all(running.values());
    },

    /**
     * Read every project file of the directory (only `only`'s projects when given); bad files are skipped, and so
     * is a file whose project has a token other than the one configured for that id in `tokens` (another
     * project's data: a directory reused across upstreams or organizations).
     */
    async loadAll(only: ReadonlySet<number> | null, tokens: ReadonlyMap<number, string> = new Map()): Promise<ProjectSnapshot[]> {
      const names = await readdir(dir).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') logger.warn({ dir, err: error.message }, 'cannot read snapshot dir');
        return [] as string[];
      });
      const loaded: ProjectSnapshot[] = [];
      for (const name of names.sort()) {
        if (name.includes('.tmp-')) {
          await unlink(join(dir, name)).catch(() => undefined);
          continue;
        }
        const id = Number(filePattern.exec(name)?.[1] ?? Number.NaN);
        if (Number.isNaN(id) || (only !== null && !only.has(id))) continue;
        const file = join(dir, name);
        try {
          const [text, info] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
          const projects = parseSnapshotFile(text, { file, source: 'disk', bareProjectId: id, mtimeMs: info.mtimeMs });
          const project = projects.find((p) => p.projectId === id);
          if (!project || projects.length !== 1) throw new Error(`${file}: does not hold exactly project ${id}`);
          const expected = tokens.get(id);
          if (expected !== undefined && project.token !== null && project.token !== expected) {
            throw new Error(`${file}: holds the project with token ${project.token.slice(0, 8)}…, not the configured ${expected.slice(0, 8)}…`);
          }
          loaded.push(project);
          metrics.snapshotLoads.inc({ source: 'disk', outcome: 'loaded' });
        } catch (error) {
          metrics.snapshotLoads.inc({ source: 'disk', outcome: 'rejected' });
          logger.warn({ file, err: (error as Error).message }, 'ignoring unusable persisted snapshot');
        }
      }
      return loaded;
    },
  };
}

/** The persistence handle. */
export type Persistence = ReturnType<typeof createPersistence>;
