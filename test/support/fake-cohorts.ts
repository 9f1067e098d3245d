/**
 * The fake upstream's static cohorts: `GET /api/projects/:id/cohorts/:cohort/` (`{id, is_static, deleted, count}`)
 * and `GET …/:cohort/persons/?limit=&offset=` (`{results: [{distinct_ids}], next}`, `next` an absolute link), read
 * with a plain key of the fake or a personal key holding `cohort:read` and `person:read`; a project secret key
 * (`phs_…`) or a personal key without those scopes gets 403, an unknown key 401. Each request is counted.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FakePersonalKey } from './fake-upstream.js';

/** One static cohort: its persons, each a list of distinct_ids. */
export interface FakeStaticCohort {
  persons: string[][];
}

/** Create the handler over the fake's keys and static cohorts (project id → cohort id → cohort). */
export function createFakeCohorts(deps: {
  keys: Set<string>;
  personalKeys: Map<string, FakePersonalKey>;
  cohorts: Map<number, Map<string, FakeStaticCohort>>;
  baseUrl: () => string;
}) {
  let requests = 0;
  const reply = (res: ServerResponse, status: number, body: unknown): true => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
    return true;
  };

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
      if (match[3] === undefined) return reply(res, 200, { id: Number(id), name: `cohort ${id}`, is_static: true, deleted: false, count: cohort.persons.length });
      const limit = Number(url.searchParams.get('limit') ?? 100);
      const offset = Number(url.searchParams.get('offset') ?? 0);
      const results = cohort.persons.slice(offset, offset + limit).map((ids, i) => ({ id: offset + i + 1, distinct_ids: ids, properties: {} }));
      const next = offset + limit < cohort.persons.length ? `${deps.baseUrl()}${url.pathname}?limit=${limit}&offset=${offset + limit}` : null;
      return reply(res, 200, { results, next, previous: null });
    },
    /** Cohort requests answered so far. */
    requests: (): number => requests,
  };
}
