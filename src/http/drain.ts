/**
 * Shutdown state shared by the listeners and the write routes: whether the sidecar is draining (it takes no
 * new request and starts no forwarded write), and the forwarded writes still in flight, so that shutdown waits
 * for each to be answered and logged before the process exits.
 */

/** The drain state of one sidecar. */
export interface Drain {
  /** True once `begin()` was called; never false again. */
  readonly draining: boolean;
  /** Enter draining (idempotent). */
  begin(): void;
  /** Count `work` as in flight until it settles; returns it unchanged. */
  track<T>(work: Promise<T>): Promise<T>;
  /** Resolves when no tracked work is in flight (at once when none is), or after `timeoutMs`, whichever is first. */
  settled(timeoutMs: number): Promise<void>;
}

/** Create the drain state (not draining, nothing in flight). */
export function createDrain(): Drain {
  const inFlight = new Set<Promise<unknown>>();
  let wake: Array<() => void> = [];
  // A data property, not a getter: every request reads it (a getter call cost ~30 instructions there).
  const drain = {
    draining: false,
    begin(): void {
      drain.draining = true;
    },
    track<T>(work: Promise<T>): Promise<T> {
      inFlight.add(work);
      const done = (): void => {
        inFlight.delete(work);
        if (inFlight.size === 0) {
          const waiting = wake;
          wake = [];
          for (const w of waiting) w();
        }
      };
      work.then(done, done);
      return work;
    },
    settled(timeoutMs: number): Promise<void> {
      if (inFlight.size === 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        wake.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
  return drain;
}
