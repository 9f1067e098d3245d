/**
 * Generations of named-endpoint runs, per (project, endpoint) key: a cached run is stored under the generation it
 * was read at, so bumping a generation retires every run cached before it without touching the cache. Bounded:
 * an evicted record raises a floor that every unknown key starts from, so eviction can only retire more.
 */
import { LRUCache } from 'lru-cache';
import { entryBound } from './entry-bound.js';

/** The generations of endpoint runs (see createRunGenerations). */
export interface RunGenerations {
  /** The generation runs of the latest version (`latest`), or of any version, are stored under. */
  of(key: string, latest: boolean): number;
  /** Moves with every bump: a generation read at an unchanged epoch is still current. */
  readonly epoch: number;
  /** Retire the latest version's runs (a PATCH), or every run (`all`: a DELETE). */
  bump(key: string, all: boolean): void;
}

/** Generations for at most `max` endpoint keys (`${projectId}\u0000${name}`); never throws. */
export function createRunGenerations(max: number): RunGenerations {
  let counter = 0;
  let floor = 0;
  let epoch = 0;
  const records = new LRUCache<string, { latest: number; all: number }>({
    ...entryBound(max),
    dispose: (record) => {
      floor = Math.max(floor, record.latest, record.all);
    },
  });
  const get = (key: string): { latest: number; all: number } => records.get(key) ?? { latest: floor, all: floor };
  return {
    of: (key, latest) => (latest ? get(key).latest : get(key).all),
    get epoch(): number {
      return epoch;
    },
    bump(key, all) {
      const current = get(key);
      counter = Math.max(counter, floor) + 1;
      records.set(key, { latest: counter, all: all ? counter : current.all });
      epoch += 1;
    },
  };
}
