/**
 * The fake PostHog's feature-flag management API (`FeatureFlagViewSet`, PostHog's `posthog/api/feature_flag.py`;
 * every operation but local_evaluation): credentials and scopes as `posthog/auth.py` and `posthog/permissions.py`,
 * error bodies as drf-exceptions-hog's, LimitOffsetPagination links as DRF's, and writes that republish the
 * project's local_evaluation definitions, optionally after a lag like upstream's asynchronous cache update.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createFlagStore, fakeUser, now, personalKeyRefusal, presentedKey, type FakeFlag, type Refusal, type StoredFlag } from './fake-flag-store.js';
import { oauthRefusal, oauthToken, type FakeOAuthToken } from './fake-oauth.js';
import type { FakeMode, FakePersonalKey, FakeProject } from './fake-upstream.js';

/** What the flag API needs from the fake. */
export interface FakeFlagApiDeps {
  projects: Map<number, FakeProject>;
  personalKeys: Map<string, FakePersonalKey>;
  /** OAuth access tokens (fake-oauth.ts); none when absent. */
  oauthTokens?: ReadonlyMap<string, FakeOAuthToken>;
  /** Generic keys: legacy unscoped personal keys, allowed everything on every project. */
  keys: ReadonlySet<string>;
  /** Replace a project's local_evaluation body (without re-seeding the flag store). */
  updateDefinitions(projectId: number, definitions: Record<string, unknown>): void;
  /** The fake's failure mode; `garbage` and `truncated` also spoil successful answers here. */
  mode?: () => FakeMode;
}

type Json = Record<string, unknown>;
type Principal =
  | { kind: 'secret'; projectId: number }
  | { kind: 'personal'; scopes: string[] | null; record?: FakePersonalKey }
  | { kind: 'oauth'; token: string; scopes: string[] };
type Answer = { status: number; body?: unknown };

const read = 'feature_flag:read';
const write = 'feature_flag:write';
const activityRead = 'activity_log:read';
/** Route table: path action → method → [route name, required scope (null: none, 403 for scoped keys)]. */
const collectionRoutes: Record<string, Record<string, [string, string | null]>> = {
  '': { GET: ['list', read], POST: ['create', write] },
  activity: { GET: ['all_activity', activityRead] },
  bulk_keys: { POST: ['bulk_keys', null] },
  evaluation_reasons: { GET: ['evaluation_reasons', null] },
  my_flags: { GET: ['my_flags', null] },
  user_blast_radius: { POST: ['user_blast_radius', null] },
};
const detailRoutes: Record<string, Record<string, [string, string | null]>> = {
  '': { GET: ['retrieve', read], PATCH: ['partial_update', write], PUT: ['update', write], DELETE: ['destroy', write] },
  activity: { GET: ['activity', activityRead] },
  create_static_cohort_for_flag: { POST: ['create_static_cohort_for_flag', null] },
  dashboard: { POST: ['dashboard', null] },
  enrich_usage_dashboard: { POST: ['enrich_usage_dashboard', null] },
  has_active_dependents: { POST: ['has_active_dependents', null] },
  remote_config: { GET: ['remote_config', read] },
  status: { GET: ['status', read] },
};

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const error = (status: number, type: string, code: string, detail: string, attr: string | null = null): Answer => ({ status, body: { type, code, detail, attr } });
const notFound = (detail = 'Not found.'): Answer => error(404, 'invalid_request', 'not_found', detail);
const forbidden = (detail: string): Answer => error(403, 'authentication_error', 'permission_denied', detail);
const unauthorized = (detail: string, code = 'authentication_failed'): Answer => error(401, 'authentication_error', code, detail);
const pyType = (v: unknown): string => (Array.isArray(v) ? 'list' : v === null ? 'NoneType' : typeof v === 'string' ? 'str' : typeof v === 'boolean' ? 'bool' : Number.isInteger(v) ? 'int' : 'float');
const pyRepr = (v: unknown): string =>
  typeof v === 'string' ? (v.includes("'") && !v.includes('"') ? `"${v}"` : `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`) : v === null ? 'None' : typeof v === 'boolean' ? (v ? 'True' : 'False') : JSON.stringify(v);
/** Python's quote_plus, as urlencode applies it. */
const quotePlus = (s: string): string => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).replace(/%20/g, '+');
/** DRF's _positive_int: the fallback for anything but a non-negative integer (or 0 when strict). */
function positiveInt(raw: string | null, strict: boolean, fallback: number): number {
  if (raw === null || !/^\s*[+-]?\d+\s*$/.test(raw)) return fallback;
  const n = Number.parseInt(raw, 10);
  return n < 0 || (strict && n === 0) ? fallback : n;
}

/** Create the flag API over the fake's projects and keys. */
export function createFakeFlagApi(deps: FakeFlagApiDeps) {
  const store = createFlagStore(deps.projects);
  const counts: Record<string, number> = {};
  let lagMs = 0;
  let nextCohort = 1;
  let nextDashboard = 1;

  /** Republish local_evaluation flags (deleted ones left out, inactive ones kept) now or after the lag. */
  function publish(projectId: number, immediately = false): void {
    const flags = store.all(projectId).filter((f) => !f.deleted && !(f.is_remote_configuration && f.has_encrypted_payloads)).map(store.minimal);
    const apply = () => {
      const project = deps.projects.get(projectId);
      if (project) deps.updateDefinitions(projectId, { ...project.definitions, flags });
    };
    if (lagMs <= 0 || immediately) apply();
    else setTimeout(apply, lagMs).unref();
  }

  /** The 403 detail for a principal on a project and scope (undefined: only whether it reaches the project), or null. */
  function refusal(p: Principal, projectId: number, scope: string | null | undefined): string | null {
    if (p.kind === 'secret') return p.projectId === projectId ? null : 'You do not have permission to perform this action.';
    if (p.kind === 'oauth') {
      const denied = oauthRefusal(deps.oauthTokens ?? new Map(), p.token, projectId, scope === undefined ? '*' : scope);
      return denied === null || (scope === undefined && denied.body.detail.startsWith('API key missing')) ? null : denied.body.detail;
    }
    if (scope === null) return p.scopes !== null && p.scopes.length > 0 ? 'This action does not support Personal API Key access' : personalKeyRefusal(p.scopes, p.record, projectId, undefined);
    return personalKeyRefusal(p.scopes, p.record, projectId, scope);
  }

  const canEdit = (p: Principal): boolean =>
    (p.kind === 'personal' && (p.scopes === null || p.scopes.length === 0)) || (p.kind !== 'secret' && (p.scopes ?? []).some((s) => s === '*' || s === write));

  /** The page of an activity list (Django Paginator semantics, links per format_query_params_absolute_url). */
  function activityPage(req: IncomingMessage, url: URL, entries: unknown[]): Answer {
    const parsed: Record<string, number> = {};
    for (const [name, fallback] of [['limit', 10], ['page', 1]] as const) {
      const raw = url.searchParams.get(name);
      if (raw !== null && !/^\s*[+-]?\d+(\.0*)?\s*$/.test(raw)) return error(400, 'validation_error', 'invalid_input', 'A valid integer is required.', name);
      parsed[name] = raw === null ? fallback : Number.parseInt(raw, 10);
      if ((parsed[name] ?? 1) < 1) return error(400, 'validation_error', 'min_value', 'Ensure this value is greater than or equal to 1.', name);
    }
    const limit = parsed.limit ?? 10;
    const page = parsed.page ?? 1;
    const pages = Math.max(1, Math.ceil(entries.length / limit));
    if (page > pages) return error(500, 'server_error', 'error', 'A server error occurred.');
    const link = (target: number) => {
      let out = `http://${req.headers.host}${req.url}`;
      for (const [name, value] of [['page', target], ['limit', limit]] as const) {
        const re = new RegExp(`([&?]${name}=)(\\d+)`, 'g');
        out = out.search(re) >= 0 ? out.replace(re, `$1${value}`) : `${out}${out.includes('?') ? '&' : '?'}${name}=${value}`;
      }
      return out;
    };
    const results = entries.slice((page - 1) * limit, page * limit);
    return { status: 200, body: { results, next: page < pages ? link(page + 1) : null, previous: page > 1 ? link(page - 1) : null, total_count: entries.length } };
  }

  /** The list (op 1) with DRF's LimitOffsetPagination links. */
  function list(req: IncomingMessage, url: URL, projectId: number, principal: Principal): Answer {
    const search = url.searchParams.get('search')?.toLowerCase();
    const active = url.searchParams.get('active');
    const order = url.searchParams.get('order') ?? '-created_at';
    const field = order.replace(/^-/, '') as keyof StoredFlag;
    let flags = store.all(projectId).filter((f) => !f.deleted);
    if (search) flags = flags.filter((f) => f.key.toLowerCase().includes(search) || f.name.toLowerCase().includes(search));
    if (active !== null) flags = active === 'STALE' ? [] : flags.filter((f) => f.active === (active === 'true'));
    if (flags[0] && !(field in flags[0])) return error(500, 'server_error', 'error', 'A server error occurred.');
    const byField = (a: StoredFlag, b: StoredFlag) => (String(a[field]) < String(b[field]) ? -1 : String(a[field]) > String(b[field]) ? 1 : 0);
    flags.sort((a, b) => (field === 'created_at' || field === 'id' ? a.id - b.id : byField(a, b)) * (order.startsWith('-') ? -1 : 1));
    const limit = positiveInt(url.searchParams.get('limit'), true, 100);
    const offset = positiveInt(url.searchParams.get('offset'), false, 0);
    const link = (set: Record<string, string | null>) => {
      const params = new Map<string, string[]>();
      for (const [k, v] of url.searchParams) params.set(k, [...(params.get(k) ?? []), v]);
      for (const [k, v] of Object.entries(set)) if (v === null) params.delete(k); else params.set(k, [v]);
      const query = [...params.keys()].sort().flatMap((k) => (params.get(k) ?? []).map((v) => `${quotePlus(k)}=${quotePlus(v)}`)).join('&');
      return `http://${req.headers.host}${(req.url ?? '/').split('?')[0]}${query ? `?${query}` : ''}`;
    };
    const next = offset + limit < flags.length ? link({ limit: String(limit), offset: String(offset + limit) }) : null;
    const previous = offset <= 0 ? null : offset - limit <= 0 ? link({ limit: String(limit), offset: null }) : link({ limit: String(limit), offset: String(offset - limit) });
    const results = flags.slice(offset, offset + limit).map((f) => store.present(f, canEdit(principal)));
    return { status: 200, body: { count: flags.length, next, previous, results } };
  }

  /** Everything after authentication and permission. */
  function serve(name: string, req: IncomingMessage, url: URL, projectId: number, principal: Principal, id: string, body: Json): Answer {
    const flag = /^\d+$/.test(id) ? store.find(projectId, id) : undefined;
    const show = (f: StoredFlag): FakeFlag => store.present(f, canEdit(principal));
    const live = () => store.all(projectId).filter((f) => !f.deleted).sort((a, b) => b.id - a.id);
    const saved = (out: StoredFlag | Refusal, status: number): Answer => {
      if (!('id' in out)) return out;
      publish(projectId);
      return { status, body: show(out) };
    };
    if (name === 'method_not_allowed') return error(405, 'invalid_request', 'method_not_allowed', `Method "${req.method}" not allowed.`);
    switch (name) {
      case 'list': return list(req, url, projectId, principal);
      case 'create': return saved(store.create(projectId, body), 201);
      case 'all_activity': return activityPage(req, url, store.activity(projectId));
      case 'bulk_keys': {
        const ids: unknown[] = Array.isArray(body.ids) ? body.ids : [];
        if (ids.length === 0) return { status: 200, body: { keys: {} } };
        const ok = (x: unknown) => (typeof x === 'number' && Number.isInteger(x)) || (typeof x === 'string' && /^\d+$/.test(x));
        const valid = ids.filter(ok).map(Number);
        const bad = ids.filter((x) => !ok(x));
        if (valid.length === 0) return { status: 400, body: { error: 'Invalid flag IDs provided' } };
        const keys = Object.fromEntries(live().filter((f) => valid.includes(f.id)).sort((a, b) => a.id - b.id).map((f) => [String(f.id), f.key]));
        return { status: 200, body: bad.length > 0 ? { keys, warning: `Invalid flag IDs ignored: [${bad.map(pyRepr).join(', ')}]` } : { keys } };
      }
      case 'evaluation_reasons': {
        if (!url.searchParams.get('distinct_id')) return error(400, 'validation_error', 'invalid_input', 'distinct_id is required');
        const reason = (f: StoredFlag) => ({ value: false, evaluation: { reason: f.active ? 'no_condition_match' : 'disabled', condition_index: null } });
        return { status: 200, body: Object.fromEntries(live().map((f) => [f.key, reason(f)])) };
      }
      case 'my_flags': return { status: 200, body: live().map((f) => ({ feature_flag: store.minimal(f), value: false })) };
      case 'user_blast_radius': {
        if (!('condition' in body)) return error(400, 'validation_error', 'invalid_input', 'Missing condition for which to get blast radius');
        const properties = isObject(body.condition) && Array.isArray(body.condition.properties) ? body.condition.properties : [];
        return { status: 200, body: { users_affected: properties.length === 0 ? 100 : 10, total_users: 100 } };
      }
      case 'destroy': return { status: 405 };
      case 'activity': return flag ? activityPage(req, url, store.activity(projectId, flag.id)) : { status: 404 };
      case 'status': {
        const found = /^\d+$/.test(id) ? store.findAnywhere(Number(id)) : undefined;
        if (!found) return { status: 404, body: { status: 'unknown', reason: 'Flag could not be found' } };
        if (found.deleted) return { status: 200, body: { status: 'deleted', reason: 'Flag has been deleted' } };
        return { status: 200, body: { status: 'active', reason: found.active ? 'Flag has no usage data yet' : 'Flag is disabled (not evaluated for staleness)' } };
      }
      case 'remote_config': {
        const target = store.find(projectId, id);
        if (!target?.is_remote_configuration) return { status: 404 };
        const payloads = target.filters.payloads;
        const payload = isObject(payloads) ? payloads.true : undefined;
        if (payload === undefined || payload === null || payload === '') return { status: 200 };
        return { status: 200, body: target.has_encrypted_payloads && principal.kind === 'secret' ? '********* (encrypted)' : payload };
      }
    }
    if (!flag) return notFound();
    switch (name) {
      case 'retrieve': return { status: 200, body: show(flag) };
      case 'partial_update': return saved(store.update(flag, body, true), 200);
      case 'update': return saved(store.update(flag, body, false), 200);
      case 'create_static_cohort_for_flag': {
        const at = now();
        const cohortName = `Users with feature flag ${flag.key} enabled at ${at.slice(0, 19).replace('T', ' ')}`;
        const cohort = { id: nextCohort++, name: cohortName, description: '', groups: [], deleted: false, filters: null, query: null, is_calculating: true, created_by: fakeUser, created_at: at, last_calculation: null, errors_calculating: 0, count: null, is_static: true, experiment_set: [] };
        return { status: 201, body: { cohort } };
      }
      case 'dashboard':
        flag.usage_dashboard = nextDashboard++;
        return { status: 200, body: { success: true } };
      case 'enrich_usage_dashboard': return { status: 400, body: { success: false, error: 'No enriched analytics available for this feature flag' } };
      case 'has_active_dependents': {
        const found = store.dependents(flag).map((f) => ({ id: f.id, key: f.key, name: f.name }));
        return { status: 200, body: { has_active_dependents: found.length > 0, dependent_flags: found } };
      }
    }
    return notFound();
  }

  /** Answer one request; false when the path is not under `/api/projects/:id/feature_flags`. */
  function handle(req: IncomingMessage, res: ServerResponse, url: URL, raw: Buffer): boolean {
    const match = /^\/api\/projects\/([^/]+)\/feature_flags(?:\/(.*))?$/.exec(url.pathname);
    if (!match) return false;
    let reply: Answer;
    try {
      reply = answer(req, url, raw, match[1] ?? '', (match[2] ?? '').replace(/\/$/, ''));
    } catch {
      reply = error(500, 'server_error', 'error', 'A server error occurred.');
    }
    respond(req, res, reply, deps.mode?.());
    return true;
  }

  /** Route, authenticate, resolve the project, check permissions, then serve. */
  function answer(req: IncomingMessage, url: URL, raw: Buffer, projectPart: string, rest: string): Answer {
    const segments = rest === '' ? [] : rest.split('/');
    const [first = '', second = ''] = segments;
    const isCollection = segments.length === 0 || (segments.length === 1 && first !== '' && Object.hasOwn(collectionRoutes, first));
    const table = isCollection ? collectionRoutes[first] : Object.hasOwn(detailRoutes, second) ? detailRoutes[second] : undefined;
    if (!table || segments.length > 2 || segments.includes('') || first.includes('.')) return notFound();
    const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
    const [name, scope] = table[method] ?? ['method_not_allowed', null];
    counts[name] = (counts[name] ?? 0) + 1;

    let parsed: { data: unknown } | Answer | undefined;
    const body = (): { data: unknown } | Answer => (parsed ??= parse(req, raw));
    const presented = presentedKey(req.headers.authorization, url, raw, body);
    if (presented === undefined) return unauthorized('Authentication credentials were not provided.', 'not_authenticated');
    if (!Array.isArray(presented)) return presented;
    const [key, source] = presented;
    const secretOf = [...deps.projects.entries()].find(([, p]) => p.secretKey === key)?.[0];
    const record = deps.personalKeys.get(key);
    let principal: Principal;
    const oauth = oauthToken(req.headers.authorization);
    if (name === 'remote_config' && secretOf !== undefined && source === 'Authorization header') principal = { kind: 'secret', projectId: secretOf };
    else if (oauth !== undefined) {
      const found = deps.oauthTokens?.get(oauth);
      const unknown = oauthRefusal(deps.oauthTokens ?? new Map(), oauth, 0, null);
      if (found === undefined || unknown?.status === 401) return unauthorized(unknown?.body.detail ?? 'Invalid access token.');
      principal = { kind: 'oauth', token: oauth, scopes: found.scope.split(/\s+/).filter((s) => s !== '') };
    } else if (deps.keys.has(key)) principal = { kind: 'personal', scopes: null };
    else if (record) principal = { kind: 'personal', scopes: record.scopes, record };
    else return unauthorized(`Personal API key found in request ${source} is invalid.`);

    // Upstream's get_token (PostHog's `posthog/api/utils.py`) reads the query only on GET.
    const token = req.method === 'GET' ? url.searchParams.get('token') || url.searchParams.get('api_key') : null;
    let projectId: number | undefined;
    if (token) {
      projectId = [...deps.projects.entries()].find(([, p]) => p.token === token)?.[0];
      if (projectId === undefined) return unauthorized('Incorrect authentication credentials.');
    } else if (projectPart === '@current') {
      const p = principal;
      projectId = p.kind === 'secret' ? p.projectId : [...deps.projects.keys()].sort((a, b) => a - b).find((pid) => refusal(p, pid, undefined) === null);
    } else if (/^\d+$/.test(projectPart)) projectId = Number(projectPart);
    if (projectId === undefined) return notFound('Project not found.');
    const denied = refusal(principal, projectId, scope);
    if (denied !== null) return forbidden(denied);
    if (!deps.projects.has(projectId)) return notFound('Project not found.');

    let data: Json = {};
    if (method === 'POST' || method === 'PATCH' || method === 'PUT') {
      const got = body();
      if (!('data' in got)) return got;
      if (!isObject(got.data)) return error(400, 'validation_error', 'invalid_input', `Invalid data. Expected a dictionary, but got ${pyType(got.data)}.`);
      data = got.data;
    }
    return serve(name, req, url, projectId, principal, isCollection ? '' : first, data);
  }

  return {
    handle,
    /** Current flag objects of a project, as the management API returns them (soft-deleted included) to a key with feature_flag:write. */
    flags: (projectId: number): FakeFlag[] => store.all(projectId).map((f) => store.present(f, true)),
    /**
     * Make a flag (by id, or by key: created when missing) a remote-config flag with this `payloads.true`, as an edit
     * through upstream's API does (a flag that existed gets the next `version`: FeatureFlagSerializer.update);
     * republishes at once.
     */
    setRemoteConfig(projectId: number, flagIdOrKey: number | string, config: { payload: string | null; encrypted?: boolean }): FakeFlag {
      let flag = store.find(projectId, flagIdOrKey);
      if (flag) flag.version += 1;
      if (!flag && typeof flagIdOrKey === 'string') {
        const created = store.create(projectId, { key: flagIdOrKey });
        if ('id' in created) flag = created;
      }
      if (!flag) throw new Error(`no flag ${flagIdOrKey} in project ${projectId}`);
      flag.is_remote_configuration = true;
      flag.has_encrypted_payloads = config.encrypted ?? false;
      flag.filters = { ...flag.filters, payloads: config.payload === null ? {} : { true: config.payload } };
      publish(projectId, true);
      return store.present(flag, true);
    },
    /** Requests per route name (`list`, `create`, `retrieve`, `partial_update`, `update`, `destroy`, `remote_config`, …). */
    counts: (): Record<string, number> => ({ ...counts }),
    /** Delay (ms) between a write's response and its effect on local_evaluation; 0 (default) publishes before answering. */
    setDefinitionsLag(ms: number): void {
      lagMs = ms;
    },
    /** Re-seed a project's flag store from its current local_evaluation definitions (after the fake's setDefinitions). */
    reseed(projectId: number): void {
      const project = deps.projects.get(projectId);
      if (project) store.seed(projectId, project.definitions);
    },
  };
}

/** The request body as JSON (or form fields), or a 400 parse_error. */
function parse(req: IncomingMessage, raw: Buffer): { data: unknown } | Answer {
  const text = raw.toString('utf8');
  if (text.trim() === '') return { data: {} };
  if ((req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) return { data: Object.fromEntries(new URLSearchParams(text)) };
  try {
    return { data: JSON.parse(text) as unknown };
  } catch (e) {
    return error(400, 'invalid_request', 'parse_error', `JSON parse error - ${(e as Error).message}`);
  }
}

/** Write an answer: JSON, or an empty body when it has none; garbage/truncated modes spoil 2xx bodies. */
function respond(req: IncomingMessage, res: ServerResponse, answer: Answer, mode: FakeMode | undefined): void {
  const text = answer.body === undefined ? '' : JSON.stringify(answer.body);
  const ok = answer.status < 300 && text !== '';
  if (ok && mode?.kind === 'garbage') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return void res.end('<html>upstream proxy error</html>');
  }
  res.writeHead(answer.status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
  if (ok && mode?.kind === 'truncated') {
    res.write(text.slice(0, Math.floor(text.length / 2)));
    return void setTimeout(() => req.socket.destroy(), 5);
  }
  res.end(text);
}

/** The flag API's handle. */
export type FakeFlagApi = ReturnType<typeof createFakeFlagApi>;
