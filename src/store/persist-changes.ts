/**
 * What the store's changes mean for the snapshot directory: which new snapshots are written (persist.ts) and the
 * persistence gauges.
 */
import type { Metrics } from '../metrics/metrics.js';
import type { Persistence } from './persist.js';
import type { Store } from './store.js';

/** Dependencies of persistChanges. */
export interface PersistChangesDeps {
  readonly store: Store;
  readonly persistence: Persistence;
  readonly metrics: Metrics;
  /** Longest a snapshot only re-confirmed upstream (a 304) goes without being written (the sidecar: 10 polls). */
  readonly refreshEveryMs: number;
}

/**
 * Persist every snapshot from upstream with new content at once; one with only a newer fetched-at at most every
 * `refreshEveryMs`, so that after a restart Age is close to true and a stale bootstrap file does not win over
 * confirmed data. Snapshots from disk or the bootstrap file are never written back. Never throws: a failed write
 * is persistence's to retry and report.
 */
export function persistChanges(deps: PersistChangesDeps): void {
  const { store, persistence, refreshEveryMs } = deps;
  deps.metrics.observePersistence(() =>
    store.projectIds().map((id) => {
      const state = persistence.status(id);
      return { project: String(id), pending: state.pending, lastSuccessSeconds: state.lastSuccessAt === null ? null : state.lastSuccessAt / 1000 };
    }),
  );
  const persistedAt = new Map<number, number>();
  store.onChange((after, before) => {
    if (after.cohorts?.source !== 'upstream') return;
    const changed =
      after.cohorts.body !== before.cohorts?.body ||
      after.plain?.body !== before.plain?.body ||
      after.cohorts.etag !== before.cohorts?.etag ||
      after.plain?.etag !== before.plain?.etag ||
      after.plainWanted !== before.plainWanted;
    const refreshDue = after.cohorts.fetchedAt - (persistedAt.get(after.projectId) ?? -Infinity) >= refreshEveryMs;
    if (!changed && !refreshDue) return;
    persistedAt.set(after.projectId, after.cohorts.fetchedAt);
    void persistence.save(after);
  });
}
