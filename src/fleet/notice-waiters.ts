/**
 * Callers waiting for the next snapshot notice of a project (a follower that asked its leader to poll). Each
 * wait ends at the next notice, at `settleAll` (shutdown) or after its own bound, whichever comes first, so a
 * lost notice never holds anyone longer than that bound. No timer is left behind.
 */

/** Create the waiters. */
export function createNoticeWaiters() {
  const waiting = new Map<number, Set<() => void>>();
  const settle = (projectId: number): void => {
    const set = waiting.get(projectId);
    waiting.delete(projectId);
    for (const resolve of set ?? []) resolve();
  };
  return {
    /** Resolves at the next notice for the project (settle), or after `ms`. Never rejects. */
    next(projectId: number, ms: number): Promise<void> {
      return new Promise((resolve) => {
        const timer = setTimeout(done, ms);
        function done(): void {
          clearTimeout(timer);
          waiting.get(projectId)?.delete(done);
          resolve();
        }
        const set = waiting.get(projectId) ?? new Set<() => void>();
        set.add(done);
        waiting.set(projectId, set);
      });
    },
    /** A notice for the project arrived (or waiting is pointless): end every wait for it. */
    settle,
    /** End every wait (shutdown). */
    settleAll(): void {
      for (const projectId of [...waiting.keys()]) settle(projectId);
    },
  };
}

/** The waiters handle. */
export type NoticeWaiters = ReturnType<typeof createNoticeWaiters>;
