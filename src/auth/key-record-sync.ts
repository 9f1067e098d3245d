/**
 * Keeps the principal caches and a KeyRecordStore in step: at start the stored records still usable under the
 * current TTL and grace (key-records.ts `admitAll`) are handed back to the caches; afterwards a change is
 * written at most once per `intervalMs` (debounced, never on the request path), and once more at `flush()`
 * (shutdown). A failed write is logged, counted by the store, and retried after `intervalMs`.
 */
import type { Logger } from '../logger.js';
import type { KeyRecordStore } from './key-record-file.js';
import { admitAll, type KeyRecord } from './key-records.js';

/** A cache whose positive answers are key records (the introspector, the secret key verifier). */
export interface KeyRecordSource {
  records(): KeyRecord[];
  restore(records: readonly KeyRecord[]): void;
}

/** Dependencies of createKeyRecordSync. */
export interface KeyRecordSyncDeps {
  readonly store: KeyRecordStore;
  readonly sources: readonly KeyRecordSource[];
  readonly logger: Logger;
  readonly now: () => number;
  readonly ttlMs: number;
  readonly graceMs: number;
  /** Shortest time between two writes. */
  readonly intervalMs: number;
}

/** Create the sync. Call `restore()` once before serving; `changed()` whenever a source's records change. */
export function createKeyRecordSync(deps: KeyRecordSyncDeps) {
  const { store, sources, logger } = deps;
  let dirty = false;
  let timer: NodeJS.Timeout | null = null;
  let writing: Promise<void> | null = null;

  /** Every source's records, most recently vouched for first, the ones past their grace left out. */
  function collect(): KeyRecord[] {
    const now = deps.now();
    return sources
      .flatMap((s) => s.records())
      .filter((r) => r.graceUntil >= now)
      .sort((a, b) => b.vouchedAt - a.vouchedAt);
  }

  function schedule(): void {
    if (timer !== null) return;
    timer = setTimeout(() => void write(), deps.intervalMs);
    timer.unref();
  }

  function write(): Promise<void> {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    writing ??= (async () => {
      while (dirty) {
        dirty = false;
        try {
          await store.save(collect());
        } catch (error) {
          dirty = true;
          logger.error({ err: (error as Error).message }, 'could not persist key records');
          schedule();
          return;
        }
      }
    })().finally(() => {
      writing = null;
    });
    return writing;
  }

  return {
    /** Load the stored records into the sources; returns how many were restored. Never rejects. */
    async restore(): Promise<number> {
      const stored = await store.load();
      let records: KeyRecord[];
      try {
        records = admitAll(stored, { now: deps.now(), ttlMs: deps.ttlMs, graceMs: deps.graceMs });
      } catch (error) {
        logger.warn({ err: (error as Error).message }, 'ignoring unusable key records');
        return 0;
      }
      for (const source of sources) source.restore(records);
      if (stored.length > 0) logger.info({ restored: records.length, expired: stored.length - records.length }, 'restored verified key records');
      return records.length;
    },

    /** Note that a source's records changed: written within `intervalMs`. */
    changed(): void {
      dirty = true;
      schedule();
    },

    /** Write pending changes now (at shutdown); resolves when written or failed. Never rejects. */
    async flush(): Promise<void> {
      if (timer !== null) clearTimeout(timer);
      timer = null;
      if (writing) await writing;
      if (dirty) await write();
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  };
}

/** The sync handle. */
export type KeyRecordSync = ReturnType<typeof createKeyRecordSync>;
