/**
 * Static cohort membership, pulled from upstream so that /flags can decide flags on static cohorts locally.
 *
 * Upstream leaves static cohorts out of local_evaluation (docs/evaluation.md#what-goes-upstream); its /flags checks
 * the person behind the request's distinct_id against the cohort's stored persons. The sidecar holds, per static
 * cohort its flags reference (nested ones included), the distinct_ids upstream's persons API lists for it
 * (static-cohort-pull.ts): a listed id is in; an unlisted one is out, unless the cohort is truncated (a listed
 * person shows the 10 ids upstream serializes at most, so may have more): then the server decides.
 *
 * Schedule, per cohort: checked at once when first referenced and when the definitions change; otherwise every
 * `refreshMs` (a check reads the cohort's record only; its persons only when the record changed, or when the last
 * read of them is `rereadMs` old: a member's new distinct_ids leave the record as it was). Failures back off as
 * polls do (schedule.ts): 401/403/404/429 exponentially from `refreshMs` (a Retry-After honoured), others from a
 * quarter of it, all capped at 8×. The clock is the project's healthy cycles (`refresh` is called after each),
 * one refresh per project at a time. A 401/403 or 404 drops the cohort's list (its flags go upstream); a 429 or
 * a failure keeps the last complete list.
 *
 * Fleet mode (`fleet`): the project's leader pulls and shares the lists through Redis; a follower never asks
 * upstream and takes the leader's lists (fleet/static-cohort-share.ts); a sidecar without usable Redis pulls
 * as without fleet mode. Never throws.
 */
import type { StaticCohort } from '../eval/cohorts.js';
import type { CompiledDefinitions, CompiledFilter, CompiledGroup } from '../eval/compile.js';
import type { Logger } from '../logger.js';
import type { StaticCohortMetrics } from '../metrics/static-cohort-metrics.js';
import type { ShareLoad, SharedCohort } from '../fleet/static-cohort-share.js';
import type { UpstreamClient } from './client.js';
import { nextDelay } from './schedule.js';
import { pullCohort, type PullDeps, type PullResult } from './static-cohort-pull.js';

/** Cohort id → its known members. */
export type StaticMembership = ReadonlyMap<string, StaticCohort>;

/** How a fleet sidecar gets a project's lists: its role, and the shared lists (fleet/static-cohort-share.ts). */
export interface StaticCohortFleet {
  readonly role: (projectId: number) => 'leader' | 'follower' | 'direct';
  readonly publish: (projectId: number, cohorts: readonly SharedCohort[]) => Promise<unknown>;
  readonly load: (projectId: number) => Promise<ShareLoad>;
}

/** Dependencies of createStaticCohorts. */
export interface StaticCohortDeps extends Omit<PullDeps, 'now'> {
  readonly definitions: (projectId: number) => CompiledDefinitions | null;
  readonly logger: Logger;
  readonly refreshMs: number;
  readonly rereadMs: number;
  readonly now: () => number;
  readonly random: () => number;
  readonly metrics?: StaticCohortMetrics;
  readonly fleet?: StaticCohortFleet | null;
}

interface Held extends StaticCohort {
  readonly persons: number;
  readonly fingerprint: string;
  readonly pulledAt: number;
}

interface CohortState {
  held: Held | null;
  /** The last check's outcome (a metric outcome word), or `pending` before the first. */
  outcome: string;
  source: 'upstream' | 'fleet';
  checkedAt: number | null;
  lastError: string | null;
  failures: number;
  nextAttemptAt: number;
}

interface ProjectState {
  defs: CompiledDefinitions | null;
  readonly cohorts: Map<string, CohortState>;
  membership: StaticMembership;
  running: boolean;
}

const none: StaticMembership = new Map();

/** The cohort ids the flags reference (nested cohorts included) that the definitions do not hold, sorted. */
export function missingCohortIds(defs: CompiledDefinitions): string[] {
  const missing = new Set<string>();
  const seen = new Set<string>();
  const visitFilter = (filter: CompiledFilter): void => {
    if (filter.kind !== 'cohort' || seen.has(filter.id)) return;
    seen.add(filter.id);
    const group = defs.cohorts.get(filter.id);
    if (group === undefined) missing.add(filter.id);
    else visitGroup(group);
  };
  const visitGroup = (group: CompiledGroup): void => {
    for (const nested of group.groups ?? []) visitGroup(nested);
    for (const leaf of group.leaves ?? []) visitFilter(leaf);
  };
  for (const flag of defs.flags) for (const condition of flag.conditions) for (const filter of condition.filters) visitFilter(filter);
  return [...missing].sort();
}

const sameSet = (a: ReadonlySet<string>, b: ReadonlySet<string>): boolean => a.size === b.size && [...b].every((m) => a.has(m));

/** Create the membership store. */
export function createStaticCohorts(deps: StaticCohortDeps) {
  const { logger, now } = deps;
  const projects = new Map<number, ProjectState>();
  const pullDeps: PullDeps = { ...deps, now };

  const project = (projectId: number): ProjectState => {
    let p = projects.get(projectId);
    if (p === undefined) projects.set(projectId, (p = { defs: null, cohorts: new Map(), membership: none, running: false }));
    return p;
  };

  function backoff(s: CohortState, outcome: 'ok' | 'refused' | 'failed', retryAfterMs: number | null): void {
    s.failures = outcome === 'ok' ? 0 : s.failures + 1;
    s.nextAttemptAt = now() + nextDelay({ outcome, failures: s.failures, intervalMs: deps.refreshMs, retryAfterMs, hasSnapshot: true, random: deps.random });
  }

  /** Take a pull's result into the cohort's state; logs a line when the cohort degrades. */
  function apply(projectId: number, id: string, s: CohortState, result: PullResult): void {
    const wasError = s.lastError;
    s.checkedAt = now();
    s.lastError = null;
    s.source = 'upstream';
    let outcome: string = result.kind;
    if (result.kind === 'members') {
      outcome = result.settled ? 'pulled' : 'unsettled';
      const same = s.held !== null && s.held.truncated === result.truncated && sameSet(s.held.members, result.members);
      const members = same && s.held !== null ? s.held.members : result.members;
      s.held = { members, truncated: result.truncated, persons: result.persons, fingerprint: result.fingerprint, pulledAt: now() };
      if (!result.settled) s.lastError = 'the cohort changed while its persons were read; they are read again at the next check';
      backoff(s, 'ok', null);
    } else if (result.kind === 'unchanged' || result.kind === 'too_large') {
      if (result.kind === 'too_large') {
        s.held = null;
        s.lastError = result.error;
      }
      backoff(s, 'ok', null);
    } else if (result.kind === 'gone' || result.kind === 'refused') {
      if (result.kind === 'refused' && result.status === 429) outcome = 'throttled';
      else s.held = null;
      s.lastError = result.error;
      backoff(s, 'refused', result.kind === 'refused' ? result.retryAfterMs : null);
    } else {
      s.lastError = result.error;
      backoff(s, 'failed', result.retryAfterMs);
    }
    s.outcome = outcome;
    deps.metrics?.checks.inc({ outcome });
    if (s.lastError !== null && s.lastError !== wasError) {
      const hint = result.kind === 'refused' && result.status !== 429 ? ' (the upstream key needs cohort:read and person:read)' : '';
      logger.warn({ project: projectId, cohort: id, outcome, err: s.lastError, kept: s.held !== null, retry_at: new Date(s.nextAttemptAt).toISOString() }, `static cohort not pulled${hint}; without its members its flags go upstream`);
    }
  }

  /** As a fleet follower: take the leader's lists from Redis (not even asked for when the flags reference none). */
  async function adopt(projectId: number, p: ProjectState, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const loaded = await (deps.fleet as StaticCohortFleet).load(projectId);
    if (loaded.kind === 'rejected') deps.metrics?.checks.inc({ outcome: 'shared_rejected' });
    if (loaded.kind !== 'loaded') return;
    deps.metrics?.checks.inc({ outcome: 'shared' });
    const shared = new Map(loaded.cohorts.map((c) => [c.id, c]));
    for (const id of ids) {
      const s = p.cohorts.get(id) as CohortState;
      const c = shared.get(id);
      const members = c === undefined ? null : new Set(c.members);
      const same = members !== null && s.held !== null && s.held.truncated === c?.truncated && sameSet(s.held.members, members);
      s.held = c === undefined || members === null ? null : { members: same && s.held ? s.held.members : members, truncated: c.truncated, persons: c.persons, fingerprint: c.fingerprint, pulledAt: c.pulledAt };
      Object.assign(s, { source: 'fleet', outcome: c === undefined ? 'not_shared' : 'shared', checkedAt: now(), lastError: null, failures: 0 });
      // Should this sidecar lead next, its first check of the cohort is when the leader's would have been.
      s.nextAttemptAt = (c?.pulledAt ?? now()) + deps.refreshMs;
    }
  }

  /** The membership from the states: the same object while no cohort's list changed (kept /flags answers hold). */
  function rebuild(p: ProjectState): void {
    const next = new Map<string, StaticCohort>();
    for (const [id, s] of p.cohorts) if (s.held !== null) next.set(id, s.held);
    const prev = p.membership;
    const same = prev.size === next.size && [...next].every(([id, c]) => {
      const old = prev.get(id);
      return old !== undefined && old.members === c.members && old.truncated === c.truncated;
    });
    if (!same) p.membership = next;
  }

  return {
    /** The static cohorts of `projectId` known now (empty when none is). */
    membership(projectId: number): StaticMembership {
      return projects.get(projectId)?.membership ?? none;
    },
    /** Check the project's static cohorts that are due (see the schedule above); never two at once per project. */
    async refresh(projectId: number): Promise<void> {
      const defs = deps.definitions(projectId);
      const p = project(projectId);
      if (defs === null || p.running) return;
      p.running = true;
      try {
        const ids = missingCohortIds(defs);
        const defsChanged = defs !== p.defs;
        p.defs = defs;
        for (const id of p.cohorts.keys()) if (!ids.includes(id)) p.cohorts.delete(id);
        for (const id of ids) if (!p.cohorts.has(id)) p.cohorts.set(id, { held: null, outcome: 'pending', source: 'upstream', checkedAt: null, lastError: null, failures: 0, nextAttemptAt: 0 });
        const role = deps.fleet?.role(projectId) ?? 'direct';
        let checked = false;
        if (role === 'follower') await adopt(projectId, p, ids);
        else {
          for (const id of ids) {
            const s = p.cohorts.get(id) as CohortState;
            if (now() < s.nextAttemptAt && !(defsChanged && s.failures === 0)) continue;
            const reread = s.held !== null && now() - s.held.pulledAt >= deps.rereadMs;
            apply(projectId, id, s, await pullCohort(pullDeps, projectId, id, s.held?.fingerprint ?? null, reread));
            checked = true;
          }
        }
        rebuild(p);
        if (role === 'leader' && checked) {
          const shared = [...p.cohorts].flatMap(([id, s]) => (s.held === null ? [] : [{ id, ...s.held }]));
          await deps.fleet?.publish(projectId, shared);
        }
      } finally {
        p.running = false;
      }
    },
    /** Each referenced static cohort of `projectId`, for /status. */
    status(projectId: number) {
      const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
      return [...(projects.get(projectId)?.cohorts ?? [])].map(([id, s]) => ({
        id,
        state: s.outcome,
        source: s.source,
        members_known: s.held !== null,
        persons: s.held?.persons ?? null,
        distinct_ids: s.held?.members.size ?? null,
        truncated: s.held?.truncated ?? null,
        last_pulled_at: iso(s.held?.pulledAt ?? null),
        last_checked_at: iso(s.checkedAt),
        last_error: s.lastError,
        next_attempt_at: s.source === 'fleet' ? null : iso(s.nextAttemptAt),
      }));
    },
    /** What the gauges read. */
    gauges() {
      return [...projects].map(([projectId, p]) => {
        const states = { known: 0, stale: 0, unknown: 0 };
        let distinctIds = 0;
        for (const s of p.cohorts.values()) {
          states[s.held === null ? 'unknown' : s.failures > 0 ? 'stale' : 'known'] += 1;
          distinctIds += s.held?.members.size ?? 0;
        }
        return { project: String(projectId), states, distinctIds };
      });
    },
  };
}

/** The membership store's handle. */
export type StaticCohorts = ReturnType<typeof createStaticCohorts>;
