/**
 * Persistence of the last good snapshot of each project in FLAG_SIDECAR_SNAPSHOT_DIR, one file per project
 * (`project-<id>.json`). Writes are atomic (temp file, fsync, rename, fsync of the directory), serialized per
 * project and coalesced (only the newest pending snapshot is written). A write that fails (directory gone or not
 * writable, disk full, out of file handles) is kept and retried with backoff until it succeeds or a newer
 * snapshot replaces it; `status()` says per project when the last write succeeded, the last error and whether the
 * newest snapshot is still waiting. Reading at start skips and reports a file that is corrupt or truncated; such
 * a file is never served.
 *
 * Files are sealed (seal.ts) with the sidecar's secret when it has one (always online), and then only files that
 * verify are read: a writer of the volume without the secret cannot make the sidecar serve their definitions,
 * just as they cannot grant keys through key-records.json. Offline without FLAG_SIDECAR_FLEET_SECRET there is no
 * secret: files are written unsealed and read as the bootstrap file is, as configuration.
 */
import { mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Integrity } from '../integrity.js';
import type { Logger } from '../logger.js';
import { sealContext, stripSeal } from '../seal.js';
import type { Metrics } from '../metrics/metrics.js';
import { parseSnapshotFile, serializeProjectFile } from './snapshot-file.js';
import type { ProjectSnapshot } from './snapshot.js';

/** Dependencies of createPersistence. */
export interface PersistenceDeps {
  readonly dir: string;
  /** Seals the files (null offline without a fleet secret: nothing is sealed or verified). */
  readonly integrity: Integrity | null;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly now: () => number;
  /** How a file is written (tests wrap it); writeFileAtomic by default. */
  readonly write?: (path: string, data: string | Buffer) => Promise<void>;
  /** First wait before a failed write is retried (default 2 s); it doubles per failure up to `retryMaxMs`. */
  readonly retryMinMs?: number;
  /** Longest wait between two retries (default 30 s; the sidecar passes its poll interval). */
  readonly retryMaxMs?: number;
}

/** Persistence state of one project, as /status and the metrics show it. */
export interface PersistStatus {
  /** Epoch ms of the last snapshot written (null: none since start). */
  readonly lastSuccessAt: number | null;
  /** The last failed write (kept after a later success, which its time then precedes). */
  readonly lastError: { readonly message: string; readonly at: number } | null;
  /** Failed writes since the last success. */
  readonly consecutiveFailures: number;
  /** The newest snapshot is not on disk yet: queued, being written, or waiting for a retry. */
  readonly pending: boolean;
  /** When the next retry is due (null: none waiting). */
  readonly nextRetryAt: number | null;
}

/** Wait before retry number `failures` (1-based): `minMs` doubling per failure, capped at `maxMs`. */
export function persistRetryDelay(failures: number, minMs: number, maxMs: number): number {
  const first = Math.min(minMs, maxMs);
  return Math.min(maxMs, first * 2 ** Math.min(30, Math.max(0, failures - 1)));
}

const fileName = (projectId: number): string => `project-${projectId}.json`;
const filePattern = /^project-(\d+)\.json$/;
/** The seal context of a project's file: its name, which holds the project id. */
const fileContext = (projectId: number): string => sealContext('snapshot-file', fileName(projectId));

/** Write `data` to `path` atomically: readers see the old file or the new one, never a mix. */
export async function writeFileAtomic(path: string, data: string | Buffer): Promise<void> {
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
  const { dir, logger, metrics, now } = deps;
  const write = deps.write ?? writeFileAtomic;
  const retryMaxMs = deps.retryMaxMs ?? 30_000;
  const retryMinMs = deps.retryMinMs ?? 2_000;
  const pending = new Map<number, ProjectSnapshot>();
  const running = new Map<number, Promise<void>>();
  const retries = new Map<number, { timer: NodeJS.Timeout; at: number }>();
  const states = new Map<number, { lastSuccessAt: number | null; lastError: PersistStatus['lastError']; failures: number }>();
  let closed = false;

  const stateOf = (projectId: number) => {
    let state = states.get(projectId);
    if (state === undefined) {
      state = { lastSuccessAt: null, lastError: null, failures: 0 };
      states.set(projectId, state);
    }
    return state;
  };

  function clearRetry(projectId: number): void {
    clearTimeout(retries.get(projectId)?.timer);
    retries.delete(projectId);
  }

  function succeeded(projectId: number): void {
    const state = stateOf(projectId);
    if (state.failures > 0) logger.info({ project: projectId, dir, failures: state.failures }, 'snapshot persisted again');
    state.lastSuccessAt = now();
    state.failures = 0;
    if (!pending.has(projectId)) clearRetry(projectId);
  }

  function failed(projectId: number, error: unknown): void {
    const state = stateOf(projectId);
    const message = error instanceof Error ? error.message : String(error);
    state.failures += 1;
    state.lastError = { message, at: now() };
    metrics.persistFailures.inc({ project: String(projectId) });
    const retryInMs = persistRetryDelay(state.failures, retryMinMs, retryMaxMs);
    logger.error({ project: projectId, dir, err: message, failures: state.failures, retryInMs: closed ? null : retryInMs }, 'could not persist snapshot');
    clearRetry(projectId);
    if (closed) return;
    const timer = setTimeout(() => {
      retries.delete(projectId);
      kick(projectId);
    }, retryInMs);
    timer.unref();
    retries.set(projectId, { timer, at: now() + retryInMs });
  }

  /**
   * Write the project's pending snapshots until none is left. The last check of `pending` and the removal from
   * `running` happen in the same synchronous step, so a save() can never find a finishing run and be dropped.
   * A failed snapshot goes back to `pending` (unless a newer one came meanwhile) and waits for its retry.
   */
  async function drain(projectId: number): Promise<void> {
    for (;;) {
      const next = pending.get(projectId);
      if (next === undefined) {
        running.delete(projectId);
        return;
      }
      pending.delete(projectId);
      try {
        await mkdir(dir, { recursive: true });
        const text = serializeProjectFile(next, now());
        await write(join(dir, fileName(projectId)), deps.integrity ? deps.integrity.sealer.seal(text, fileContext(projectId)) : text);
        succeeded(projectId);
      } catch (error) {
        if (!pending.has(projectId)) pending.set(projectId, next);
        running.delete(projectId);
        return failed(projectId, error);
      }
    }
  }

  /** Start writing the project's pending snapshot unless a write is under way; the run (or the one under way). */
  function kick(projectId: number): Promise<void> {
    let run = running.get(projectId);
    if (run === undefined) {
      run = drain(projectId);
      running.set(projectId, run);
    }
    return run;
  }

  /** The file's payload: verified when there is a secret, else with any seal line dropped. Throws when it does not verify. */
  function opened(projectId: number, file: string, bytes: Buffer): Buffer {
    if (deps.integrity === null) return stripSeal(bytes);
    const payload = deps.integrity.sealer.open(bytes, fileContext(projectId));
    if (payload !== null) return payload;
    deps.integrity.unverifiable('snapshot_file', file, bytes);
    throw new Error(`${file}: does not verify (not sealed with this sidecar's secret: written by hand, by an older version, or altered)`);
  }

  async function flush(): Promise<void> {
    for (const projectId of [...retries.keys()]) {
      clearRetry(projectId);
      void kick(projectId);
    }
    while (running.size > 0) await Promise.all(running.values());
  }

  return {
    /** Queue `project` to be written; resolves when it (or a newer one) is on disk or has failed. Never rejects. */
    save(project: ProjectSnapshot): Promise<void> {
      pending.set(project.projectId, project);
      return kick(project.projectId);
    },

    /** Write every queued snapshot now (failed ones get one more try at once) and wait for them. */
    flush,

    /** Flush, then stop retrying (at shutdown): what still fails stays unwritten and is logged. */
    async close(): Promise<void> {
      closed = true;
      await flush();
      for (const projectId of [...retries.keys()]) clearRetry(projectId);
    },

    /** Persistence state of a project (all null and false before its first write). */
    status(projectId: number): PersistStatus {
      const state = states.get(projectId);
      return {
        lastSuccessAt: state?.lastSuccessAt ?? null,
        lastError: state?.lastError ?? null,
        consecutiveFailures: state?.failures ?? 0,
        pending: pending.has(projectId) || running.has(projectId),
        nextRetryAt: retries.get(projectId)?.at ?? null,
      };
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
          const [bytes, info] = await Promise.all([readFile(file), stat(file)]);
          const text = opened(id, file, bytes).toString('utf8');
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
