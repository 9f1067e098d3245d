/**
 * One pull of one static cohort from upstream's cohorts API, with the sidecar's own key. First the cohort's record
 * (`GET /api/projects/:id/cohorts/:cohort/`: is it static, `count`, `last_calculation`, `is_calculating`); when its
 * fingerprint equals the one of the list held (and no re-read is due), that is all. Otherwise the persons pages
 * (`…/persons/?limit=1000&offset=…`), then the record again: upstream pages by offset over persons ordered by
 * creation (posthog/queries/person_query.py), so a person added or removed while paging can shift a page boundary
 * and skip or repeat one person. A repeat costs nothing (the ids are a set); a skip would answer "out" for a
 * member. Both change the record (Cohort model: adding sets `count` and `last_calculation`, removing sets `count`),
 * so a record that changed during the pages means the pages are read again, at most `maxDriftAttempts` times; the
 * last list is then taken as unsettled, with the fingerprint from before its pages, so the next check reads again.
 *
 * Upstream serializes at most 10 distinct_ids per person (cohort.py `persons`: `distinct_id_limit=10`), while its
 * /flags decides membership by person: a listed person with exactly 10 may have more, so the cohort is marked
 * truncated (an unlisted id is then the server's to decide). Bounded: at most `maxPersons` persons (else too large),
 * 10 ids per person and 400 characters per id (more is not upstream's shape: the page is refused), a `next` link
 * followed only from a full page and only to the following one (a repeated or self link stops it: pages are then
 * at most maxPersons / 1000 + 1), and one deadline for the whole pull, body reads included. Never throws.
 */
import type { UpstreamClient } from './client.js';
import { parseRetryAfter } from './schedule.js';

/** Persons asked per page. */
export const pageSize = 1000;
/** The distinct_ids upstream's persons API serializes per person at most. */
export const serializedIdsPerPerson = 10;
/** Longest distinct_id upstream stores (PersonDistinctId.distinct_id, `max_length=400`), in characters. */
export const maxDistinctIdLength = 400;
/** Reads of the pages in one pull while the record keeps changing under them. */
export const maxDriftAttempts = 3;

/** What a pull needs. */
export interface PullDeps {
  readonly client: UpstreamClient;
  readonly ownKey: string;
  readonly maxPersons: number;
  /** The upstream URL's path prefix ('' for none): upstream's `next` links include it, requests do not. */
  readonly upstreamPath: string;
  /** The whole pull's deadline, body reads included. */
  readonly deadlineMs: number;
  readonly now: () => number;
}

/** A pulled list of members. `settled`: the record did not change while its pages were read. */
export interface PulledList {
  readonly kind: 'members';
  readonly members: ReadonlySet<string>;
  readonly persons: number;
  readonly truncated: boolean;
  readonly fingerprint: string;
  readonly settled: boolean;
}

/** What one pull ended with. */
export type PullResult =
  | PulledList
  | { readonly kind: 'unchanged' }
  /** Not a static cohort upstream holds (404, deleted, dynamic): its flags go upstream. */
  | { readonly kind: 'gone'; readonly error: string }
  | { readonly kind: 'too_large'; readonly error: string }
  /** 401/403 (the key may not read it) or 429 (throttled). */
  | { readonly kind: 'refused'; readonly status: number; readonly error: string; readonly retryAfterMs: number | null }
  | { readonly kind: 'failed'; readonly error: string; readonly retryAfterMs: number | null };

type Stop = Exclude<PullResult, PulledList | { kind: 'unchanged' }>;
/** An upstream answer read as a JSON object, or why the pull stops. */
type Got = { readonly body: Record<string, unknown>; readonly stop?: undefined } | { readonly stop: Stop };
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function parse(body: Buffer): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    return isObject(value) ? value : null;
  } catch {
    return null;
  }
}

/** The fields of the cohort record that change when its persons do. */
export const fingerprintOf = (record: Record<string, unknown>): string =>
  JSON.stringify([record.count ?? null, record.last_calculation ?? null, record.is_calculating ?? null]);

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

/** Pull cohort `id` of `projectId`; `known`: the fingerprint of the list held; `reread`: read the pages even if unchanged. */
export async function pullCohort(deps: PullDeps, projectId: number, id: string, known: string | null, reread: boolean): Promise<PullResult> {
  const base = `/api/projects/${projectId}/cohorts/${encodeURIComponent(id)}/`;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), deps.deadlineMs);
  timer.unref(); // a pull under way at shutdown ends with the client; its deadline must not hold the process
  const deadlineText = `no complete pull within ${deps.deadlineMs / 1000}s`;

  async function get(path: string): Promise<Got> {
    const result = await deps.client.request({
      operation: 'static_cohort',
      method: 'GET',
      path,
      headers: { authorization: `Bearer ${deps.ownKey}`, accept: 'application/json' },
      signal: deadline.signal,
    });
    if (deadline.signal.aborted) return { stop: { kind: 'failed', error: deadlineText, retryAfterMs: null } };
    if (result.kind === 'failure') return { stop: { kind: 'failed', error: `${result.cause} (${result.code})`, retryAfterMs: null } };
    const header = result.headers['retry-after'];
    const retryAfterMs = parseRetryAfter(Array.isArray(header) ? header[0] : header, deps.now());
    if (result.status === 401 || result.status === 403 || result.status === 429) {
      return { stop: { kind: 'refused', status: result.status, error: `upstream answered ${result.status}`, retryAfterMs } };
    }
    if (result.status === 404) return { stop: { kind: 'gone', error: 'upstream answered 404' } };
    if (result.status !== 200) return { stop: { kind: 'failed', error: `upstream answered ${result.status}`, retryAfterMs } };
    const body = parse(result.body);
    return body === null ? { stop: { kind: 'failed', error: 'invalid body (not a JSON object)', retryAfterMs: null } } : { body };
  }

  async function record(): Promise<{ readonly fingerprint: string; readonly stop?: undefined } | { readonly stop: Stop }> {
    const got = await get(base);
    if (got.stop !== undefined) return got;
    const { body } = got;
    if (body.is_static !== true || body.deleted === true) return { stop: { kind: 'gone', error: 'not a static cohort' } };
    if (typeof body.count === 'number' && body.count > deps.maxPersons) {
      return { stop: { kind: 'too_large', error: `${body.count} persons, more than FLAG_SIDECAR_STATIC_COHORT_MAX_PERSONS` } };
    }
    return { fingerprint: fingerprintOf(body) };
  }

  async function pages(fingerprint: string): Promise<PulledList | Stop> {
    const personsPath = `${base}persons/`;
    const members = new Set<string>();
    let persons = 0;
    let truncated = false;
    // Pages are bounded by persons: a `next` is followed only from a full page, so at most maxPersons / pageSize + 1.
    for (let offset = 0; ; offset += pageSize) {
      const got = await get(`${personsPath}?limit=${pageSize}${offset === 0 ? '' : `&offset=${offset}`}`);
      if (got.stop !== undefined) return got.stop;
      const { body } = got;
      if (!Array.isArray(body.results)) return { kind: 'failed', error: 'invalid page (no results)', retryAfterMs: null };
      if (body.results.length > pageSize) return { kind: 'failed', error: 'invalid page (more persons than asked for)', retryAfterMs: null };
      for (const person of body.results) {
        if (++persons > deps.maxPersons) return { kind: 'too_large', error: `more than ${deps.maxPersons} persons` };
        const ids = isObject(person) ? person.distinct_ids : undefined;
        if (!Array.isArray(ids) || ids.length > serializedIdsPerPerson) {
          return { kind: 'failed', error: `invalid page (a person without distinct_ids or with more than ${serializedIdsPerPerson})`, retryAfterMs: null };
        }
        for (const distinctId of ids) {
          if (typeof distinctId !== 'string' || (distinctId.length > maxDistinctIdLength && [...distinctId].length > maxDistinctIdLength)) {
            return { kind: 'failed', error: `invalid page (a distinct_id not a string of at most ${maxDistinctIdLength} characters)`, retryAfterMs: null };
          }
          members.add(distinctId);
        }
        if (ids.length === serializedIdsPerPerson) truncated = true;
      }
      if (body.next === null || body.next === undefined) return { kind: 'members', members, persons, truncated, fingerprint, settled: false };
      // Upstream links a full page to the one after it (format_query_params_absolute_url(request, offset + limit)).
      const link = typeof body.next === 'string' ? nextPath(body.next, deps.upstreamPath) : null;
      const next = link === null ? null : new URL(link, 'http://upstream');
      if (body.results.length < pageSize || next === null || next.pathname !== personsPath || next.searchParams.get('offset') !== String(offset + pageSize)) {
        return { kind: 'failed', error: 'invalid page (its next link is not the following page)', retryAfterMs: null };
      }
    }
  }

  try {
    let before = await record();
    if (before.stop !== undefined) return before.stop;
    if (!reread && before.fingerprint === known) return { kind: 'unchanged' };
    for (let attempt = 1; ; attempt += 1) {
      const list = await pages(before.fingerprint);
      if (list.kind !== 'members') return list;
      const after = await record();
      if (after.stop !== undefined) return after.stop;
      if (after.fingerprint === before.fingerprint) return { ...list, settled: true };
      if (attempt === maxDriftAttempts) return list;
      before = after;
    }
  } finally {
    clearTimeout(timer);
  }
}
