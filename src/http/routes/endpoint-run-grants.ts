/**
 * Run grants: until when a key may be served an endpoint's cached runs (upstream ran that endpoint for that key
 * recently). Bounded; in fleet mode grants given or withdrawn here are also written to Redis.
 */
import { LRUCache } from 'lru-cache';
import { entryBound } from '../../store/entry-bound.js';
import type { Caller } from '../../auth/authenticate.js';
import type { SharedRuns } from '../../fleet/shared-runs.js';

/** Dependencies of createRunGrants. */
export interface RunGrantsDeps {
  /** How long a grant holds (FLAG_SIDECAR_AUTH_CACHE_TTL). */
  readonly ttlMs: number;
  readonly now: () => number;
  /** Fleet mode: where grants are shared; null otherwise. */
  readonly shared: SharedRuns | null;
}

/** The grants of one sidecar (see createRunGrants). Nothing here throws or waits. */
export interface RunGrants {
  /** The grant key of `caller` for endpoint `name` of a project (the key's digest, never the key). */
  key(caller: Caller, projectId: number, name: string): string;
  /** Until when (ms since the epoch) the grant holds; 0: none. */
  until(key: string): number;
  /** Moves with every grant given or withdrawn (and so with every eviction): a grant read at an unchanged epoch holds. */
  readonly epoch: number;
  /** Upstream answered a run for the key with a 2xx: granted for the TTL (and in the fleet). */
  give(projectId: number, key: string): void;
  /** A grant found in the fleet, kept here until it ends (at most the TTL); not written back. */
  adopt(key: string, until: number): void;
  /** Upstream refused a run for the key (401/403/404): the grant is withdrawn (and in the fleet). */
  withdraw(projectId: number, key: string): void;
}

/** Grants for at most 50,000 (key, endpoint) pairs. */
export function createRunGrants(deps: RunGrantsDeps): RunGrants {
  const { ttlMs, now, shared } = deps;
  const grants = new LRUCache<string, number>(entryBound(50_000));
  let epoch = 0;
  return {
    key: (caller, projectId, name) => `${caller.digest}:${caller.kind}\u0000${projectId}\u0000${name}`,
    until: (key) => grants.get(key) ?? 0,
    get epoch(): number {
      return epoch;
    },
    give(projectId, key) {
      const until = now() + ttlMs;
      grants.set(key, until);
      epoch += 1;
      void shared?.setGrant(projectId, key, until);
    },
    adopt(key, until) {
      grants.set(key, Math.min(until, now() + ttlMs));
      epoch += 1;
    },
    withdraw(projectId, key) {
      grants.delete(key);
      epoch += 1;
      void shared?.setGrant(projectId, key, null);
    },
  };
}
