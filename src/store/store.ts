/**
 * The in-memory store: one immutable ProjectSnapshot per served project, replaced whole by `update` (a single
 * synchronous swap, so a reader sees the old snapshot or the new one, never a mix). The set of projects is
 * fixed at start. Listeners hear about every change (persistence, later cache invalidation).
 */
import type { ProjectSnapshot } from './snapshot.js';

/** Called after a project's snapshot was replaced. */
export type ChangeListener = (after: ProjectSnapshot, before: ProjectSnapshot) => void;

/** Create the store holding `projects` (ids and tokens must be unique). */
export function createStore(projects: readonly ProjectSnapshot[]) {
  const byId = new Map<number, ProjectSnapshot>();
  const idByToken = new Map<string, number>();
  const listeners: ChangeListener[] = [];
  for (const project of projects) {
    if (byId.has(project.projectId)) throw new Error(`project ${project.projectId} given twice`);
    byId.set(project.projectId, project);
    if (project.token !== null) {
      if (idByToken.has(project.token)) throw new Error(`project token of ${project.projectId} is used by another project`);
      idByToken.set(project.token, project.projectId);
    }
  }
  const ids = [...byId.keys()].sort((a, b) => a - b);

  return {
    /** The current snapshot of a served project, or undefined. */
    get: (projectId: number): ProjectSnapshot | undefined => byId.get(projectId),
    /** The project a `phc_` token selects, or undefined. */
    projectIdForToken: (token: string): number | undefined => idByToken.get(token),
    /** Served project ids, ascending. */
    projectIds: (): readonly number[] => ids,
    /** Every current snapshot, by ascending id. */
    list: (): ProjectSnapshot[] => ids.map((id) => byId.get(id) as ProjectSnapshot),
    /** Ready once every project has a validated (with-cohorts) snapshot. */
    ready: (): boolean => ids.length > 0 && ids.every((id) => byId.get(id)?.cohorts != null),
    /**
     * Replace a project's snapshot with `change(current)`. Returning the same object is a no-op.
     * The token never changes. Throws for a project the store does not serve.
     */
    update(projectId: number, change: (current: ProjectSnapshot) => ProjectSnapshot): ProjectSnapshot {
      const before = byId.get(projectId);
      if (!before) throw new Error(`project ${projectId} is not served`);
      const after = change(before);
      if (after === before) return before;
      if (after.projectId !== projectId || after.token !== before.token) throw new Error('a snapshot cannot change its project or token');
      byId.set(projectId, after);
      for (const listener of listeners) listener(after, before);
      return after;
    },
    /** Register a listener for every later change. */
    onChange(listener: ChangeListener): void {
      listeners.push(listener);
    },
  };
}

/** The store handle. */
export type Store = ReturnType<typeof createStore>;
