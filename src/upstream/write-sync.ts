/**
 * Read-your-writes for flag definitions: after a flag create or update succeeded upstream, re-poll the project
 * at once and again with a short backoff until the snapshot shows the write, or a deadline passes. Upstream
 * refreshes its definitions cache asynchronously after the write commits, so the first poll may still see the
 * old definitions.
 *
 * "Shows the write" is read from upstream's reply to the write: the flag with that id at that version or later
 * (absent when the reply says it is deleted). When the reply does not say (unreadable, no id or version), any
 * change of the snapshot's ETag will do. Remote-configuration flags upstream leaves out of local_evaluation
 * are not waited for: they would never show.
 */
import type { DefinitionsSummary, ProjectSnapshot } from '../store/snapshot.js';
import type { Store } from '../store/store.js';

/** Dependencies of createWriteSync. */
export interface WriteSyncDeps {
  readonly store: Store;
  readonly pollNow: (projectId: number) => Promise<void>;
  readonly timeoutMs: number;
  readonly now: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** What the snapshot must show; null: nothing to wait for. */
export type WriteCheck = (project: ProjectSnapshot) => boolean;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Whether `definitions` show flag `id` at `version` or later (or, for a deleted flag, no longer hold it). */
function shows(definitions: DefinitionsSummary, id: number, version: number | null, deleted: boolean): boolean {
  const flag = definitions.flags.find((f) => f.id === id);
  if (deleted) return flag === undefined;
  if (flag === undefined) return false;
  const seen = flag.version;
  return version === null || seen === null || seen >= version;
}

/**
 * The check for a write upstream answered with `body`, given the project's snapshot before the write. Null
 * (nothing to wait for) for a remote-configuration flag that upstream leaves out of local_evaluation: an
 * encrypted one, or one the snapshot did not hold before the write (older upstreams leave them all out).
 */
export function writeCheck(body: Buffer, before: ProjectSnapshot | undefined): WriteCheck | null {
  let reply: unknown = null;
  try {
    reply = JSON.parse(body.toString('utf8'));
  } catch {
    // unreadable: fall back to the ETag
  }
  const etagBefore = before?.cohorts?.etag;
  if (!isRecord(reply) || typeof reply.id !== 'number') return (project) => project.cohorts?.etag !== etagBefore;
  const id = reply.id;
  if (reply.is_remote_configuration === true) {
    const held = before?.cohorts?.definitions.flags.some((f) => f.id === id) ?? false;
    if (reply.has_encrypted_payloads === true || !held) return null;
  }
  const version = typeof reply.version === 'number' ? reply.version : null;
  const deleted = reply.deleted === true;
  return (project) =>
    project.cohorts !== null &&
    shows(project.cohorts.definitions, id, version, deleted) &&
    (!project.plainWanted || project.plain === null || shows(project.plain.definitions, id, version, deleted));
}

/** Create the synchronizer: `sync(projectId, check)` resolves true once the snapshot passes `check`, false at the deadline. */
export function createWriteSync(deps: WriteSyncDeps) {
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  return async function sync(projectId: number, check: WriteCheck): Promise<boolean> {
    const deadline = deps.now() + deps.timeoutMs;
    let pause = 50;
    for (;;) {
      const project = deps.store.get(projectId);
      if (project !== undefined && check(project)) return true;
      if (deps.now() >= deadline) return false;
      await deps.pollNow(projectId);
      const after = deps.store.get(projectId);
      if (after !== undefined && check(after)) return true;
      const left = deadline - deps.now();
      if (left <= 0) return false;
      await sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, 500);
    }
  };
}

/** The synchronizer. */
export type WriteSync = ReturnType<typeof createWriteSync>;
