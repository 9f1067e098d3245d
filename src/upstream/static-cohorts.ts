/**
 * Static cohort membership, pulled from upstream so that /flags can decide flags on static cohorts locally.
 *
 * Upstream leaves static cohorts out of local_evaluation (PostHog's `local_evaluation.py` sends only non-static,
 * non-deleted cohorts; docs/evaluation.md#what-goes-upstream): their membership is a
 * stored list of persons, which upstream's /flags checks for the person behind the request's distinct_id. The
 * sidecar pulls each static cohort its flags reference, with its own key, as that list of persons' distinct_ids:
 * `GET /api/projects/:id/cohorts/:cohort/` (is it static, how many persons) then
 * `GET /api/projects/:id/cohorts/:cohort/persons/` page by page (`next` links), and answers membership as
 * upstream would: a distinct_id of a listed person is in the cohort, any other is not.
 *
 * Refreshed after every healthy poll of the project, one refresh per project at a time, each cohort swapped
 * whole. Bounded: a cohort of more than `maxPersons` persons is not pulled (its flags go upstream). When upstream
 * refuses the key (401/403: it lacks `cohort:read` or `person:read`) the project's membership is dropped and not
 * asked again until the definitions change; a cohort upstream does not describe as static (404, deleted, a
 * dynamic one it left out) is not known; when upstream fails the last complete list is kept. Never throws.
 */
import type { CompiledDefinitions, CompiledFilter, CompiledGroup } from '../eval/compile.js';
import type { Logger } from '../logger.js';
import type { UpstreamClient } from './client.js';

/** Dependencies of createStaticCohorts. */
export interface StaticCohortDeps {
  readonly client: UpstreamClient;
  readonly ownKey: string;
  readonly definitions: (projectId: number) => CompiledDefinitions | null;
  readonly logger: Logger;
  /** Most persons of one cohort; 0: off. */
  readonly maxPersons: number;
  /** The upstream URL's path prefix ('' for none): upstream's `next` links include it, requests do not. */
  readonly upstreamPath: string;
}

/** Cohort id → the distinct_ids of its persons. */
export type StaticMembership = ReadonlyMap<string, ReadonlySet<string>>;

const none: StaticMembership = new Map();
const pageSize = 1000;

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

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function parse(body: Buffer): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    return isObject(value) ? value : null;
  } catch {
    return null;
  }
}

/** What fetching one cohort gave: its members, not static or too large (unknown), refused, or a failure. */
type Pulled = { kind: 'members'; members: ReadonlySet<string> } | { kind: 'unknown' } | { kind: 'refused'; status: number } | { kind: 'failed' };

/** Create the membership store. */
export function createStaticCohorts(deps: StaticCohortDeps) {
  const { client, logger } = deps;
  const byProject = new Map<number, StaticMembership>();
  /** Projects whose key upstream refused, with the definitions it refused for. */
  const refusedFor = new Map<number, CompiledDefinitions>();
  const refreshing = new Set<number>();

  async function get(path: string): Promise<{ status: number; body: Record<string, unknown> | null } | null> {
    const result = await client.request({ operation: 'static_cohort', method: 'GET', path, headers: { authorization: `Bearer ${deps.ownKey}`, accept: 'application/json' } });
    if (result.kind !== 'response') return null;
    return { status: result.status, body: result.status === 200 ? parse(result.body) : null };
  }

  async function pull(projectId: number, id: string): Promise<Pulled> {
    const base = `/api/projects/${projectId}/cohorts/${encodeURIComponent(id)}/`;
    const cohort = await get(base);
    if (cohort === null) return { kind: 'failed' };
    if (cohort.status === 401 || cohort.status === 403) return { kind: 'refused', status: cohort.status };
    if (cohort.status === 404) return { kind: 'unknown' };
    if (cohort.body === null) return { kind: 'failed' };
    const count = cohort.body.count;
    if (cohort.body.is_static !== true || cohort.body.deleted === true || typeof count !== 'number' || count > deps.maxPersons) return { kind: 'unknown' };
    const members = new Set<string>();
    let persons = 0;
    let path: string | null = `${base}persons/?limit=${pageSize}`;
    while (path !== null) {
      const page = await get(path);
      if (page === null) return { kind: 'failed' };
      if (page.status === 401 || page.status === 403) return { kind: 'refused', status: page.status };
      if (page.body === null || !Array.isArray(page.body.results)) return { kind: 'failed' };
      for (const person of page.body.results) {
        if (++persons > deps.maxPersons) return { kind: 'unknown' }; // grew past the bound since `count`
        const ids = isObject(person) && Array.isArray(person.distinct_ids) ? person.distinct_ids : [];
        for (const distinctId of ids) if (typeof distinctId === 'string') members.add(distinctId);
      }
      path = typeof page.body.next === 'string' ? nextPath(page.body.next, deps.upstreamPath) : null;
    }
    return { kind: 'members', members };
  }

  return {
    /** The static cohorts of `projectId` known now (empty when off, refused or not pulled yet). */
    membership(projectId: number): StaticMembership {
      return byProject.get(projectId) ?? none;
    },
    /** Pull the static cohorts the project's definitions reference; never two at once per project. */
    async refresh(projectId: number): Promise<void> {
      const defs = deps.definitions(projectId);
      if (deps.maxPersons <= 0 || defs === null || refreshing.has(projectId) || refusedFor.get(projectId) === defs) return;
      refreshing.add(projectId);
      try {
        const previous = byProject.get(projectId) ?? none;
        const next = new Map<string, ReadonlySet<string>>();
        for (const id of missingCohortIds(defs)) {
          const pulled = await pull(projectId, id);
          if (pulled.kind === 'refused') {
            refusedFor.set(projectId, defs);
            byProject.delete(projectId);
            logger.warn({ project: projectId, status: pulled.status }, 'upstream key may not read static cohorts (needs cohort:read and person:read); their flags go upstream');
            return;
          }
          if (pulled.kind === 'members') next.set(id, pulled.members);
          else if (pulled.kind === 'failed') {
            const kept = previous.get(id);
            if (kept !== undefined) next.set(id, kept);
          }
        }
        refusedFor.delete(projectId);
        // The same members as before keep the same object: kept /flags answers hold while it does (answer-cache.ts).
        byProject.set(projectId, sameMembers(previous, next) ? previous : next);
      } finally {
        refreshing.delete(projectId);
      }
    },
  };
}

/** The path and query of upstream's `next` link (absolute or relative) below `prefix`, asked of the same upstream. */
export function nextPath(link: string, prefix: string): string | null {
  try {
    const url = new URL(link, 'http://upstream');
    const path = prefix !== '' && url.pathname.startsWith(`${prefix}/`) ? url.pathname.slice(prefix.length) : url.pathname;
    return `${path}${url.search}`;
  } catch {
    return null;
  }
}

/** Whether two memberships list the same cohorts with the same members. */
function sameMembers(a: StaticMembership, b: StaticMembership): boolean {
  if (a.size !== b.size) return false;
  for (const [id, members] of b) {
    const known = a.get(id);
    if (known === undefined || known.size !== members.size) return false;
    for (const member of members) if (!known.has(member)) return false;
  }
  return true;
}

/** The membership store's handle. */
export type StaticCohorts = ReturnType<typeof createStaticCohorts>;
