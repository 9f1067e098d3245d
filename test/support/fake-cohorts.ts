/**
 * The fake upstream's static cohorts, shaped as PostHog's cohorts API (posthog/api/cohort.py):
 * `GET /api/projects/:id/cohorts/:cohort/` (the record: `id, is_static, deleted, count, last_calculation,
 * is_calculating`) and `GET …/:cohort/persons/?limit=&offset=` (`persons` action: limit 100 unless given, at most
 * 10 distinct_ids per person as `get_serialized_people(…, distinct_id_limit=10)`, `next` an absolute link to
 * offset + limit whenever the page is full, as `format_query_params_absolute_url`), read with a plain key of the
 * fake or a personal key holding `cohort:read` and `person:read`; a project secret key (`phs_…`) or a personal key
 * without those scopes gets 403, an unknown key 401. Each request is counted.
 *
 * A cohort can be changed while the fake runs (`add`/`remove` update `count`, `add` also `last_calculation`, as
 * the Cohort model does) and can be made hostile: `status` answers every request with it (and a Retry-After), `loop`
 * answers every persons page with no one and a `next` to itself, `untruncated` lists every id of a person,
 * `trickleMs` sends a persons page one byte per that many ms, `onPage` runs before a page is served.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FakePersonalKey } from './fake-upstream.js';

/** One static cohort: its persons, each a list of distinct_ids (newest first, as upstream orders them). */
export interface FakeStaticCohort {
  persons: string[][];
  /** Bumped by `add` (upstream's `last_calculation`). */
  calculations?: number;
  status?: { code: number; retryAfter?: string };
  loop?: boolean;
  untruncated?: boolean;
  trickleMs?: number;
  onPage?: (offset: number) => void;
}

/** Distinct_ids upstream's persons API serializes per person. */
export const serializedIdsPerPerson = 10;

/** Add a person to a cohort as upstream's insert does (count and last_calculation change). */
export function addPerson(cohort: FakeStaticCohort, ids: string[], at = 0): void {
  cohort.persons.splice(at, 0, ids);
  cohort.calculations = (cohort.calculations ?? 0) + 1;
}

/** Remove the person at `index` as upstream's remove_user_by_uuid does (count changes). */
export function removePerson(cohort: FakeStaticCohort, index: number): void {
  cohort.persons.splice(index, 1);
}

/** Create the handler over the fake's keys and static cohorts (project id → cohort id → cohort). */
export function createFakeCohorts(deps: {
  keys: Set<string>;
  personalKeys: Map<string, FakePersonalKey>;
  cohorts: Map<number, Map<string, FakeStaticCohort>>;
  baseUrl: () => string;
}) {
  let requests = 0;
  const reply = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): true => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
    return true;
  };

  function trickle(res: ServerResponse, body: string, everyMs: number): true {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
    let at = 0;
    const timer = setInterval(() => {
      if (res.destroyed || at >= body.length) return void clearInterval(timer);
      res.write(body[at]);
      at += 1;
    }, everyMs);
    res.on('close', () => clearInterval(timer));
    return true;
  }

  function refusal(authorization: string | undefined): [number, string] | null {
    const key = /^Bearer\s+(\S+)$/.exec((authorization ?? '').trim())?.[1];
    if (key === undefined) return [401, 'Authentication credentials were not provided.'];
    if (key.startsWith('phs_')) return [403, 'You do not have permission to perform this action.'];
    if (deps.keys.has(key)) return null;
    const record = deps.personalKeys.get(key);
    if (record === undefined) return [401, 'Personal API key found in request Authorization header is invalid.'];
    const scopes = record.scopes ?? ['*'];
    const missing = ['cohort:read', 'person:read'].find((scope) => !scopes.includes('*') && !scopes.includes(scope) && !scopes.includes(scope.replace(':read', ':write')));
    return missing === undefined ? null : [403, `API key missing required scope '${missing}'`];
  }

  return {
    /** Answer a cohorts request; false when `url` is not one. */
    handle(req: IncomingMessage, res: ServerResponse, url: URL): boolean {
      const match = /^\/api\/projects\/(\d+)\/cohorts\/([^/]+)\/(persons\/)?$/.exec(url.pathname);
      if (req.method !== 'GET' || !match) return false;
      requests += 1;
      const refused = refusal(req.headers.authorization);
      if (refused) return reply(res, refused[0], { type: 'authentication_error', code: refused[0] === 401 ? 'authentication_failed' : 'permission_denied', detail: refused[1], attr: null });
      const id = decodeURIComponent(match[2] as string);
      const cohort = deps.cohorts.get(Number(match[1]))?.get(id);
      if (cohort === undefined) return reply(res, 404, { type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null });
      if (cohort.status) return reply(res, cohort.status.code, { detail: 'Request was throttled.' }, cohort.status.retryAfter ? { 'retry-after': cohort.status.retryAfter } : {});
      if (match[3] === undefined) {
        const lastCalculation = new Date(Date.UTC(2024, 0, 1) + (cohort.calculations ?? 0) * 1000).toISOString();
        return reply(res, 200, { id: Number(id), name: `cohort ${id}`, is_static: true, deleted: false, is_calculating: false, last_calculation: lastCalculation, count: cohort.persons.length });
      }
      const limit = Number(url.searchParams.get('limit') ?? 100);
      const offset = Number(url.searchParams.get('offset') ?? 0);
      const self = `${deps.baseUrl()}${url.pathname}${url.search}`;
      if (cohort.loop) return reply(res, 200, { results: [], next: self, previous: null });
      cohort.onPage?.(offset);
      const page = cohort.persons.slice(offset, offset + limit);
      const results = page.map((ids, i) => ({ id: `uuid-${offset + i}`, distinct_ids: cohort.untruncated ? ids : ids.slice(0, serializedIdsPerPerson), properties: {} }));
      const query = new URLSearchParams(url.searchParams);
      query.set('offset', String(offset + limit));
      const next = page.length >= limit ? `${deps.baseUrl()}${url.pathname}?${query.toString()}` : null;
      const previous = new URLSearchParams(url.searchParams);
      previous.set('offset', String(offset - limit));
      const body = { results, next, previous: offset - limit >= 0 ? `${deps.baseUrl()}${url.pathname}?${previous.toString()}` : null };
      return cohort.trickleMs === undefined ? reply(res, 200, body) : trickle(res, JSON.stringify(body), cohort.trickleMs);
    },
    /** Cohort requests answered so far. */
    requests: (): number => requests,
    /** A cohort of the fake, to change while it runs. */
    cohort: (projectId: number, id: string): FakeStaticCohort | undefined => deps.cohorts.get(projectId)?.get(id),
  };
}
