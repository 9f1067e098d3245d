/**
 * The log lines that say what is served: "ready" once every project has a snapshot (at start when the stored ones
 * suffice, else when the last missing one arrives), and "flags changed" whenever a project's definitions change
 * (project, served ETag, flag count, where they came from) — from a poll, from the fleet's leader, or the first
 * snapshot of a project. A 304 that only refreshes the fetch time logs nothing.
 */
import type { Logger } from '../logger.js';
import type { Store } from './store.js';

/** Log the ready transition and every definitions change of `store` from now on. */
export function logStoreChanges(store: Store, logger: Logger): void {
  let ready = store.ready();
  const sources = (): Record<string, string | null> => Object.fromEntries(store.list().map((p) => [p.projectId, p.cohorts?.source ?? null]));
  if (ready) logger.info({ projects: store.projectIds(), sources: sources() }, 'ready: every project has a snapshot');
  store.onChange((after, before) => {
    const fresh = after.cohorts;
    if (fresh !== null && fresh.body !== before.cohorts?.body) {
      logger.info(
        { project: after.projectId, etag: fresh.etag, flags: fresh.definitions.flags.length, source: fresh.source },
        'flags changed',
      );
    }
    if (!ready && store.ready()) {
      ready = true;
      logger.info({ projects: store.projectIds(), sources: sources() }, 'ready: every project has a snapshot');
    }
  });
}
