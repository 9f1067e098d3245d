/**
 * The fake PostHog's named query endpoints API ("Endpoints" product: PostHog's `products/endpoints/backend/api.py` and
 * `openapi.py` of the seed era, late 2025; operations 19–27 of docs/api-compatibility.md plus list, create and
 * retrieve), under `/api/projects/:id/endpoints` and the deprecated alias `/api/environments/:id/endpoints`, trailing
 * slash optional: endpoints with immutable versions, materialization status, the per-endpoint OpenAPI document, runs
 * with the fake's own query cache, last execution times, upstream's error bodies, credentials and scopes as
 * fake-flag-api.ts.
 *
 * Scopes follow the seed era with one leniency, as later upstreams do: PATCH needs
 * `endpoint:write`, and materialization_status and last_execution_times need `endpoint:read`, where the seed era
 * refused every personal API key on them. Project secret keys (`phs_…`) are not accepted (seed era): unless they
 * are also generic keys, they are answered 401 as an invalid personal key, as the flag API does off remote_config.
 *
 * Runs are deterministic: HogQL rows are `[name, version, runNumber, variables, filters_override, query_override]`
 * (the last three as sorted-keys JSON; variables are the effective values, the query's defaults overridden by the
 * request), where runNumber counts the endpoint's real (uncached) runs, so a test tells a fresh run from a cached
 * one. Nothing is seeded: tests call the handle's `seed`.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fakeUser, personalKeyRefusal, presentedKey } from './fake-flag-store.js';
import type { FakeMode, FakePersonalKey, FakeProject } from './fake-upstream.js';

/** What the endpoints API needs from the fake. */
export interface FakeEndpointsApiDeps {
  projects: Map<number, FakeProject>;
  personalKeys: Map<string, FakePersonalKey>;
  /** Generic keys: legacy unscoped personal keys, allowed everything on every project. */
  keys: ReadonlySet<string>;
  /** The fake's failure mode; `garbage` and `truncated` also spoil successful answers here. */
  mode?: () => FakeMode;
}

/** A materialization as a test sets it (upstream's materialized shape). */
export interface FakeMaterialization {
  /** `Running`, `Completed`, `Failed`, `Cancelled`, `Modified` or `Unknown`. */
  status: string;
  /** ISO time of the last materialization, or null. setMaterialization defaults it to now for `Completed`. */
  last_materialized_at?: string | null;
  error?: string;
  /** `5min` … `30day`, or null. */
  sync_frequency?: string | null;
}

/** What `seed` takes: the create body's fields, plus earlier versions' queries. */
export interface FakeEndpointSeed {
  name: string;
  /** The current query (default `{"kind": "HogQLQuery", "query": "SELECT 1"}`). */
  query?: Record<string, unknown>;
  /** Queries of earlier versions, oldest first: with them, `query` is version `previousQueries.length + 1`. */
  previousQueries?: Array<Record<string, unknown>>;
  description?: string;
  is_active?: boolean;
  cache_age_seconds?: number | null;
  derived_from_insight?: string | null;
  materialization?: FakeMaterialization | null;
}

/** One run request that reached the run handler (after authentication and permission). */
export interface FakeRunCall {
  projectId: number;
  name: string;
  method: string;
  /** The parsed POST body (null for GET or an empty body; the raw text when it is not JSON). */
  body: unknown;
  /** The version run, when it got that far. */
  version: number | null;
  status: number;
  /** Whether the answer came from the fake's cache (null when no result was produced). */
  cached: boolean | null;
  /** The run number in the results (null when no result was produced). */
  runNumber: number | null;
}

type Json = Record<string, unknown>;
type Principal = { scopes: string[] | null; record?: FakePersonalKey };
type Answer = { status: number; body?: unknown; headers?: Record<string, string>; delayMs?: number };
type Version = { id: string; version: number; query: Json; createdAt: number };
type Stored = {
  id: string;
  projectId: number;
  name: string;
  description: string;
  parameters: Json;
  is_active: boolean;
  cache_age_seconds: number | null;
  derived_from_insight: string | null;
  createdAt: number;
  updatedAt: number;
  /** Oldest first; the last is the current version. */
  versions: Version[];
  materialization: Required<FakeMaterialization> | null;
};
type CacheEntry = { runNumber: number; lastRefresh: number; results: unknown[] };

const read = 'endpoint:read';
const write = 'endpoint:write';
/** Route table: path action → method → [route name, required scope]. PATCH, materialization_status and last_execution_times: lenient (see top). */
const collectionRoutes: Record<string, Record<string, [string, string]>> = {
  '': { GET: ['list', read], POST: ['create', write] },
  last_execution_times: { POST: ['last_execution_times', read] },
};
const detailRoutes: Record<string, Record<string, [string, string]>> = {
  '': { GET: ['retrieve', read], PATCH: ['partial_update', write], PUT: ['update', write], DELETE: ['destroy', write] },
  materialization_status: { GET: ['materialization_status', read] },
  'openapi.json': { GET: ['openapi_spec', read] },
  run: { GET: ['run', read], POST: ['run', read] },
  versions: { GET: ['versions', read] },
};
const nameRule = /^[a-zA-Z][a-zA-Z0-9_-]{0,127}$/;
const nameMessage = 'Endpoint name must start with a letter, contain only alphanumeric characters, hyphens, or underscores, and be between 1 and 128 characters long.';
const materializable = ['FunnelsQuery', 'HogQLQuery', 'LifecycleQuery', 'PathsQuery', 'RetentionQuery', 'StickinessQuery', 'TrendsQuery'];
const syncFrequencies: Record<string, number> = { '5min': 300, '30min': 1800, '1hour': 3600, '6hour': 21600, '12hour': 43200, '24hour': 86400, '7day': 604800, '30day': 2592000 };
const refreshTypes = ['blocking', 'force_blocking', 'async', 'async_except_on_cache_miss', 'lazy_async', 'force_async', 'force_cache'];
const syncModes = new Set(['blocking', 'force_blocking', 'async_except_on_cache_miss']);
const runKeys = ['client_query_id', 'refresh', 'variables', 'query_override', 'filters_override', 'version', 'debug'];
const requestKeys = ['name', 'query', 'description', 'is_active', 'cache_age_seconds', 'is_materialized', 'sync_frequency', 'derived_from_insight'];
/** Optional HogQLQuery fields model_dump() writes as explicit nulls (the serialized endpoint). */
const hogqlNulls = ['explain', 'filters', 'modifiers', 'name', 'response', 'tags', 'values', 'variables', 'version'];
/** Keys of the run response removed unless `debug`. */
const debugKeys = ['calculation_trigger', 'cache_key', 'explain', 'modifiers', 'resolved_date_range', 'timings', 'hogql'];
const sixMonthsMs = 183 * 86_400_000;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const error = (status: number, type: string, code: string, detail: string, attr: string | null = null): Answer => ({ status, body: { type, code, detail, attr } });
const notFound = (detail = 'Not found.'): Answer => error(404, 'invalid_request', 'not_found', detail);
const forbidden = (detail: string): Answer => error(403, 'authentication_error', 'permission_denied', detail);
const unauthorized = (detail: string, code = 'authentication_failed'): Answer => error(401, 'authentication_error', code, detail);
const invalid = (detail: string, attr: string | null = null): Answer => error(400, 'validation_error', 'invalid_input', detail, attr);
const pyType = (v: unknown): string => (Array.isArray(v) ? 'list' : v === null ? 'NoneType' : typeof v === 'string' ? 'str' : typeof v === 'boolean' ? 'bool' : typeof v === 'number' ? (Number.isInteger(v) ? 'int' : 'float') : 'dict');
const pyRepr = (v: unknown): string =>
  typeof v === 'string'
    ? v.includes("'") && !v.includes('"') ? `"${v}"` : `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`
    : v === null || v === undefined ? 'None'
    : typeof v === 'boolean' ? (v ? 'True' : 'False')
    : Array.isArray(v) ? `[${v.map(pyRepr).join(', ')}]`
    : isObject(v) ? `{${Object.entries(v).map(([k, x]) => `${pyRepr(k)}: ${pyRepr(x)}`).join(', ')}}`
    : JSON.stringify(v);
/** A Pydantic validation failure as PostHog's PydanticModelMixin reports it (400 parse_error, first error only). */
const pydantic = (model: string, loc: string, message: string, type: string, input: unknown): Answer =>
  error(400, 'invalid_request', 'parse_error', `JSON parse error - 1 validation error for ${model}\n${loc === '' ? '' : `${loc}\n`}  ${message} [type=${type}, input_value=${pyRepr(input)}, input_type=${pyType(input)}]`);
/** Sorted-keys JSON (upstream's `json.dumps(sort_keys=True)` comparison of queries; also the fake's cache key parts). */
export const canonical = (v: unknown): string =>
  Array.isArray(v) ? `[${v.map(canonical).join(',')}]` : isObject(v) ? `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}` : JSON.stringify(v ?? null);
/** DRF's rendering of a datetime, and Python's isoformat() (version objects). */
const drfTime = (ms: number): string => new Date(ms).toISOString().replace('Z', '000Z');
const isoformat = (ms: number): string => new Date(ms).toISOString().replace('Z', '000+00:00');

/** model_dump(): a HogQLQuery's absent optional fields become explicit nulls. */
function normalizeQuery(query: Json): Json {
  const out = structuredClone(query);
  if (out.kind === 'HogQLQuery') for (const k of hogqlNulls) if (!(k in out)) out[k] = null;
  return out;
}

/** A HogQL query's variables as `{code_name: value}` (its defaults). */
function queryVariables(query: Json): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!isObject(query.variables)) return out;
  for (const v of Object.values(query.variables)) if (isObject(v) && typeof v.code_name === 'string') out[v.code_name] = v.value ?? null;
  return out;
}

/** The seed-era can_materialize rule: a reason, or null. */
function cannotMaterialize(query: Json | undefined): string | null {
  if (!query || Object.keys(query).length === 0) return 'No query defined';
  const kind = String(query.kind);
  if (!materializable.includes(kind)) return `Query type '${kind}' cannot be materialized. Supported types: ${materializable.join(', ')}`;
  if (Object.keys(queryVariables(query)).length > 0 || (isObject(query.variables) && Object.keys(query.variables).length > 0)) return 'Queries with variables cannot be materialized.';
  return null;
}

/** Default cache age when cache_age_seconds is null: by the insight's interval; HogQL as a day interval. */
function defaultCacheAgeSeconds(query: Json): number {
  const byInterval: Record<string, number> = { minute: 300, hour: 3600, day: 21600, week: 86400, month: 86400 };
  return (typeof query.interval === 'string' ? byInterval[query.interval] : undefined) ?? 21600;
}

/** Validate an EndpointRequest body (create/update): a parse_error, or null. */
function checkEndpointRequest(body: Json): Answer | null {
  const model = 'EndpointRequest';
  for (const [k, v] of Object.entries(body)) {
    if (!requestKeys.includes(k)) return pydantic(model, k, 'Extra inputs are not permitted', 'extra_forbidden', v);
    if (v === null) continue;
    if ((k === 'name' || k === 'description' || k === 'derived_from_insight') && typeof v !== 'string') return pydantic(model, k, 'Input should be a valid string', 'string_type', v);
    if ((k === 'is_active' || k === 'is_materialized') && typeof v !== 'boolean') return pydantic(model, k, 'Input should be a valid boolean', 'bool_type', v);
    if (k === 'cache_age_seconds' && typeof v !== 'number') return pydantic(model, k, 'Input should be a valid number', 'float_type', v);
    if (k === 'sync_frequency' && !(typeof v === 'string' && v in syncFrequencies))
      return pydantic(model, k, `Input should be ${Object.keys(syncFrequencies).map((f) => `'${f}'`).join(', ').replace(/, ('[^']+')$/, ' or $1')}`, 'enum', v);
    if (k === 'query') {
      if (!isObject(v) || typeof v.kind !== 'string') return pydantic(model, k, 'Input should be a valid dictionary or object to extract fields from', 'model_attributes_type', v);
      if (v.kind === 'HogQLQuery' && typeof v.query !== 'string') return pydantic(model, 'query.HogQLQuery.query', 'Field required', 'missing', v);
    }
  }
  return null;
}

const cacheAgeRefusal = (v: unknown): Answer | null =>
  typeof v === 'number' && (v < 300 || v > 86400) ? invalid('Cache age must be between 300 and 86400 seconds.', 'cache_age_seconds') : null;

/** Create the endpoints API over the fake's projects and keys. */
export function createFakeEndpointsApi(deps: FakeEndpointsApiDeps) {
  const endpoints = new Map<number, Map<string, Stored>>();
  const cache = new Map<string, CacheEntry>();
  const runCounts = new Map<string, number>();
  const lastRuns = new Map<string, number>();
  const counts: Record<string, number> = {};
  const runCalls: FakeRunCall[] = [];
  const throttleHistory = new Map<string, number[]>();
  let runLimit: { limit: number; windowMs: number } | null = null;
  let runDelayMs = 0;
  let runErrorDelayMs = 0;
  let clock: (() => number) | null = null;
  let offsetMs = 0;
  const now = (): number => (clock ?? Date.now)() + offsetMs;

  const projectEndpoints = (projectId: number): Map<string, Stored> => {
    let map = endpoints.get(projectId);
    if (!map) endpoints.set(projectId, (map = new Map()));
    return map;
  };
  const endpointKey = (projectId: number, name: string): string => `${projectId}\u0000${name}`;
  const current = (e: Stored): Version => e.versions[e.versions.length - 1] as Version;
  const dropCache = (projectId: number, name: string): void => {
    const prefix = `${endpointKey(projectId, name)}\u0000`;
    for (const key of [...cache.keys()]) if (key.startsWith(prefix)) cache.delete(key);
  };

  function materializationOf(e: Stored): Json {
    const m = e.materialization;
    if (m) return { status: m.status, can_materialize: true, last_materialized_at: m.last_materialized_at, error: m.error, sync_frequency: m.sync_frequency };
    const reason = cannotMaterialize(current(e).query);
    return { can_materialize: reason === null, reason };
  }

  /** The seed-era endpoint object, keys in upstream's order. */
  function present(e: Stored): Json {
    return {
      id: e.id,
      name: e.name,
      description: e.description,
      query: structuredClone(current(e).query),
      parameters: structuredClone(e.parameters),
      is_active: e.is_active,
      cache_age_seconds: e.cache_age_seconds,
      endpoint_path: `/api/environments/${e.projectId}/endpoints/${e.name}/run`,
      created_at: drfTime(e.createdAt),
      updated_at: drfTime(e.updatedAt),
      created_by: fakeUser,
      is_materialized: e.materialization !== null,
      current_version: current(e).version,
      versions_count: e.versions.length,
      derived_from_insight: e.derived_from_insight,
      materialization: materializationOf(e),
    };
  }

  /** A version object. */
  const presentVersion = (v: Version): Json => ({ id: v.id, version: v.version, query: structuredClone(v.query), created_at: isoformat(v.createdAt), created_by: fakeUser });

  function insert(projectId: number, fields: { name: string; query: Json; previous?: Json[]; description?: string; is_active?: boolean; cache_age_seconds?: number | null; derived_from_insight?: string | null }): Stored {
    const at = now();
    const queries = [...(fields.previous ?? []), fields.query].map(normalizeQuery);
    const stored: Stored = {
      id: randomUUID(),
      projectId,
      name: fields.name,
      description: fields.description ?? '',
      parameters: {},
      is_active: fields.is_active ?? true,
      cache_age_seconds: fields.cache_age_seconds ?? null,
      derived_from_insight: fields.derived_from_insight ?? null,
      createdAt: at,
      updatedAt: at,
      versions: queries.map((query, i) => ({ id: randomUUID(), version: i + 1, query, createdAt: at })),
      materialization: null,
    };
    projectEndpoints(projectId).set(fields.name, stored);
    return stored;
  }

  /** Create. */
  function create(projectId: number, body: Json): Answer {
    const bad = checkEndpointRequest(body);
    if (bad) return bad;
    if (body.query === undefined || body.query === null) return invalid('Must specify query');
    if (typeof body.name !== 'string' || body.name === '') return invalid('Endpoint must have a name.');
    if (!nameRule.test(body.name)) return invalid(nameMessage);
    const age = cacheAgeRefusal(body.cache_age_seconds);
    if (age) return age;
    if (projectEndpoints(projectId).has(body.name)) return invalid('Failed to create endpoint.');
    const stored = insert(projectId, {
      name: body.name,
      query: body.query as Json,
      description: (body.description as string | null) ?? '',
      is_active: (body.is_active as boolean | null) ?? true,
      cache_age_seconds: (body.cache_age_seconds as number | null) ?? null,
      derived_from_insight: (body.derived_from_insight as string | null) ?? null,
    });
    return { status: 201, body: present(stored) };
  }

  /** PATCH/PUT: a changed query makes a new version; materialization follows the new version. */
  function update(e: Stored, body: Json): Answer {
    const bad = checkEndpointRequest(body);
    if (bad) return bad;
    const age = cacheAgeRefusal(body.cache_age_seconds);
    if (age) return age;
    const activeAfter = typeof body.is_active === 'boolean' ? body.is_active : e.is_active;
    const enable = body.is_materialized === true;
    const disable = body.is_materialized === false;
    const frequency = typeof body.sync_frequency === 'string' ? body.sync_frequency : null;
    if (enable && !activeAfter) return invalid('Cannot enable materialization on inactive endpoint.', 'is_materialized');
    if (frequency !== null && !activeAfter) return invalid('Cannot set sync_frequency on inactive endpoint.', 'sync_frequency');
    if (frequency !== null && disable) return invalid('Cannot set sync_frequency when disabling materialization.', 'sync_frequency');

    // Worked out on copies, committed only when all of it succeeds (upstream's transaction).
    const at = now();
    const wasMaterialized = e.materialization;
    let materialization = e.materialization;
    const description = typeof body.description === 'string' ? body.description : e.description;
    const cacheAge = 'cache_age_seconds' in body ? ((body.cache_age_seconds as number | null) ?? null) : e.cache_age_seconds;
    if (!activeAfter) materialization = null;
    const versions = [...e.versions];
    let rememberedFrequency = wasMaterialized?.sync_frequency ?? null;
    if (isObject(body.query)) {
      const query = normalizeQuery(body.query);
      if (canonical(query) !== canonical(current(e).query)) {
        if (materialization) rememberedFrequency = materialization.sync_frequency;
        materialization = null;
        versions.push({ id: randomUUID(), version: current(e).version + 1, query, createdAt: at });
      }
    }
    if (activeAfter) {
      if (enable || (body.is_materialized === undefined && wasMaterialized !== null)) {
        if (cannotMaterialize((versions[versions.length - 1] as Version).query) !== null) return invalid('Failed to update endpoint.');
        const sync = frequency ?? rememberedFrequency ?? '24hour';
        materialization = materialization ? { ...materialization, sync_frequency: sync } : { status: 'Unknown', last_materialized_at: null, error: '', sync_frequency: sync };
      }
      if (disable) materialization = null;
    }
    e.description = description;
    e.is_active = activeAfter;
    e.cache_age_seconds = cacheAge;
    e.versions = versions;
    e.materialization = materialization;
    e.updatedAt = at;
    return { status: 200, body: present(e) };
  }

  /** The OpenAPI document of one endpoint (seed-era `openapi.py`). */
  function openapi(req: IncomingMessage, e: Stored): Json {
    const query = current(e).query;
    const hogql = query.kind === 'HogQLQuery';
    const variables = Object.keys(queryVariables(query));
    const runPath = `/api/environments/${e.projectId}/endpoints/${e.name}/run`;
    const properties: Json = {
      client_query_id: { type: 'string', description: 'Client provided query ID. Can be used to retrieve the status or cancel the query.' },
      filters_override: { $ref: '#/components/schemas/DashboardFilter' },
      refresh: { type: 'string', enum: ['blocking', 'force_blocking'], default: 'blocking', description: 'Whether results should be calculated sync or async.' },
      version: { type: 'integer', description: `Specific endpoint version to execute (1-${current(e).version})` },
    };
    if (hogql && variables.length > 0) properties.variables = { $ref: '#/components/schemas/Variables' };
    if (!hogql) properties.query_override = { type: 'object', additionalProperties: true, description: 'Override query fields (shallow merge)' };
    const schemas: Json = {
      EndpointRunRequest: { type: 'object', properties, additionalProperties: false },
      DashboardFilter: {
        type: 'object',
        properties: { date_from: { type: 'string', nullable: true }, date_to: { type: 'string', nullable: true }, properties: { type: 'array', items: { $ref: '#/components/schemas/PropertyFilter' }, nullable: true } },
      },
      PropertyFilter: {
        type: 'object',
        required: ['key'],
        properties: {
          key: { type: 'string' },
          value: { oneOf: [{ type: 'string' }, { type: 'number' }, { type: 'array', items: { type: 'string' } }] },
          operator: { type: 'string', enum: ['exact', 'is_not', 'icontains', 'not_icontains', 'regex', 'not_regex', 'gt', 'lt', 'gte', 'lte', 'is_set', 'is_not_set', 'is_date_exact', 'is_date_before', 'is_date_after', 'in', 'not_in'] },
          type: { type: 'string', enum: ['event', 'person', 'session', 'cohort', 'group', 'hogql'] },
        },
      },
    };
    if (hogql && variables.length > 0) schemas.Variables = { type: 'object', properties: Object.fromEntries(variables.map((v) => [v, { description: `Variable: ${v}` }])), additionalProperties: true };
    return {
      openapi: '3.0.3',
      info: { title: e.name, description: e.description || `PostHog Endpoint: ${e.name}`, version: String(current(e).version) },
      servers: [{ url: `http://${req.headers.host ?? 'localhost'}` }],
      paths: {
        [runPath]: {
          post: {
            operationId: `run_${e.name.replace(/-/g, '_')}`,
            summary: `Execute ${e.name}`,
            description: e.description || `Execute the ${e.name} endpoint`,
            security: [{ PersonalAPIKey: [] }],
            requestBody: { required: false, content: { 'application/json': { schema: { $ref: '#/components/schemas/EndpointRunRequest' } } } },
            responses: {
              200: {
                description: 'Query results',
                content: {
                  'application/json': {
                    schema: {
                      type: 'object',
                      properties: {
                        results: { type: 'array', items: {}, description: 'Query result rows' },
                        columns: { type: 'array', items: { type: 'string' }, description: 'Column names (for HogQL queries)' },
                        hasMore: { type: 'boolean', description: 'Whether there are more results available' },
                      },
                      required: ['results'],
                    },
                  },
                },
              },
              400: { description: 'Invalid request' },
              401: { description: 'Authentication required' },
              404: { description: 'Endpoint not found' },
            },
          },
        },
      },
      components: {
        securitySchemes: { PersonalAPIKey: { type: 'http', scheme: 'bearer', description: 'Personal API Key from PostHog. Get one at /settings/user-api-keys' } },
        schemas,
      },
    };
  }

  /** Validate an EndpointRunRequest: the coerced body, or a parse_error. */
  function checkRunRequest(data: unknown): { request: Json } | Answer {
    const model = 'EndpointRunRequest';
    if (!isObject(data)) return pydantic(model, '', `Input should be a valid dictionary or instance of ${model}`, 'model_type', data);
    const body: Json = { ...data };
    for (const [k, v] of Object.entries(data)) {
      if (!runKeys.includes(k)) return pydantic(model, k, 'Extra inputs are not permitted', 'extra_forbidden', v);
      if (v === null) continue;
      if (k === 'client_query_id' && typeof v !== 'string') return pydantic(model, k, 'Input should be a valid string', 'string_type', v);
      if (k === 'refresh' && !(typeof v === 'string' && refreshTypes.includes(v)))
        return pydantic(model, k, `Input should be ${refreshTypes.map((r) => `'${r}'`).join(', ').replace(/, ('[^']+')$/, ' or $1')}`, 'enum', v);
      if ((k === 'variables' || k === 'query_override') && !isObject(v)) return pydantic(model, k, 'Input should be a valid dictionary', 'dict_type', v);
      if (k === 'filters_override' && !isObject(v)) return pydantic(model, k, 'Input should be a valid dictionary or instance of DashboardFilter', 'model_type', v);
      if (k === 'version') {
        // Pydantic's lax mode: integral floats and digit strings are integers too.
        if (typeof v === 'number' && !Number.isInteger(v)) return pydantic(model, k, 'Input should be a valid integer, got a number with a fractional part', 'int_from_float', v);
        if (typeof v === 'string' && !/^\s*[+-]?\d+\s*$/.test(v)) return pydantic(model, k, 'Input should be a valid integer, unable to parse string as an integer', 'int_parsing', v);
        if (typeof v !== 'number' && typeof v !== 'string') return pydantic(model, k, 'Input should be a valid integer', 'int_type', v);
        body.version = Number.parseInt(String(v), 10);
      }
      if (k === 'debug') {
        const truthy = [true, 1, 'true', 'True', '1', 'yes', 'on', 't', 'y'];
        const falsy = [false, 0, 'false', 'False', '0', 'no', 'off', 'f', 'n'];
        if (truthy.includes(v as never)) body.debug = true;
        else if (falsy.includes(v as never)) body.debug = false;
        else return pydantic(model, k, 'Input should be a valid boolean', typeof v === 'string' ? 'bool_parsing' : 'bool_type', v);
      }
    }
    return { request: body };
  }

  /** Run: preconditions in upstream's order, then the fake's cache (`cache_age_seconds`). */
  function run(req: IncomingMessage, url: URL, projectId: number, name: string, raw: Buffer): Answer {
    const call: FakeRunCall = { projectId, name, method: req.method ?? 'GET', body: null, version: null, status: 0, cached: null, runNumber: null };
    runCalls.push(call);
    const done = (answer: Answer): Answer => {
      call.status = answer.status;
      return answer;
    };
    const e = projectEndpoints(projectId).get(name);
    if (!e || !e.is_active) return done(notFound());
    let data: Json = {};
    if (req.method === 'POST') {
      const got = parse(raw);
      call.body = 'data' in got ? (raw.toString('utf8').trim() === '' ? null : got.data) : raw.toString('utf8');
      if (!('data' in got)) return done(got);
      const checked = checkRunRequest(got.data);
      if (!('request' in checked)) return done(checked);
      data = checked.request;
    }
    const hogql = current(e).query.kind === 'HogQLQuery';
    const nonEmpty = (v: unknown) => isObject(v) && Object.keys(v).length > 0;
    if (hogql && nonEmpty(data.query_override)) return done(invalid('Only variables and filters_override are allowed when executing a HogQL query'));
    if (!hogql && nonEmpty(data.variables)) return done(invalid('Only query_override and filters_override are allowed when executing an Insight query'));
    let requested: number | null = typeof data.version === 'number' ? data.version : null;
    const param = url.searchParams.get('version');
    if (requested === null && param !== null && param !== '') {
      if (!/^\s*[+-]?\d+\s*$/.test(param)) return done({ status: 400, body: { error: `Invalid version parameter: ${param}` } });
      requested = Number.parseInt(param, 10);
    }
    const version = requested === null ? current(e) : e.versions.find((v) => v.version === requested);
    if (!version) return done({ status: 404, body: { error: `Version ${requested} not found for endpoint '${name}'`, current_version: current(e).version } });
    call.version = version.version;
    const defaults = queryVariables(version.query);
    const variables: Record<string, unknown> = { ...defaults };
    if (Object.keys(defaults).length > 0 && isObject(data.variables)) {
      for (const [k, v] of Object.entries(data.variables)) {
        if (!(k in defaults)) return done(invalid(`Variable '${k}' not found in query`));
        variables[k] = v;
      }
    }
    const refresh = 'refresh' in data ? data.refresh : 'blocking';
    if (typeof refresh !== 'string' || !syncModes.has(refresh)) return done(invalid('Only sync modes are supported (refresh param)'));

    // The materialized path.
    const m = e.materialization;
    const fresh = m?.last_materialized_at ? Date.parse(m.last_materialized_at) + (syncFrequencies[m.sync_frequency ?? '24hour'] ?? 86400) * 1000 > now() : false;
    const materialized = m !== null && m.status === 'Completed' && fresh && requested === null && Object.keys(data.variables ?? {}).length === 0 && refresh !== 'force_blocking' && !nonEmpty(data.query_override);

    const at = now();
    const ageMs = (e.cache_age_seconds ?? defaultCacheAgeSeconds(version.query)) * 1000;
    const overrides = [canonical(variables), canonical(data.filters_override ?? null), canonical(data.query_override ?? null)];
    const key = [endpointKey(projectId, name), version.version, materialized ? 'm' : '', ...overrides].join('\u0000');
    let entry = cache.get(key);
    const cached = entry !== undefined && refresh !== 'force_blocking' && at < entry.lastRefresh + ageMs;
    if (!cached || !entry) {
      const counter = endpointKey(projectId, name);
      const runNumber = (runCounts.get(counter) ?? 0) + 1;
      runCounts.set(counter, runNumber);
      if (!materialized) lastRuns.set(counter, at);
      entry = { runNumber, lastRefresh: at, results: [[name, version.version, runNumber, ...overrides]] };
      cache.set(key, entry);
    }
    call.cached = cached;
    call.runNumber = entry.runNumber;

    const sql = typeof version.query.query === 'string' ? version.query.query : '';
    const timing: Json = {
      is_cached: cached,
      last_refresh: drfTime(entry.lastRefresh),
      next_allowed_client_refresh: drfTime(entry.lastRefresh + 60_000),
      cache_target_age: drfTime(entry.lastRefresh + ageMs),
      timezone: 'UTC',
    };
    const debugFields: Json = { calculation_trigger: null, cache_key: `cache_${key.replace(/\W+/g, '_').slice(0, 40)}`, modifiers: {}, resolved_date_range: null, timings: [], hogql: sql || null };
    let out: Json = hogql
      ? {
          results: structuredClone(entry.results),
          columns: ['name', 'version', 'run', 'variables', 'filters_override', 'query_override'],
          types: [['name', 'String'], ['version', 'Int64'], ['run', 'Int64'], ['variables', 'String'], ['filters_override', 'String'], ['query_override', 'String']],
          hasMore: false,
          limit: 100,
          offset: 0,
          error: null,
          query: sql,
          clickhouse: sql,
          metadata: null,
          query_status: null,
          ...timing,
          query_metadata: {},
          ...debugFields,
        }
      : { results: structuredClone(entry.results), error: null, query_status: null, ...timing, ...debugFields };
    if (data.debug !== true) out = Object.fromEntries(Object.entries(out).filter(([k]) => !debugKeys.includes(k)));
    if (materialized) {
      out.endpoint_materialized = true;
      out.endpoint_materialized_at = m?.last_materialized_at ?? null;
    }
    out.endpoint_version = version.version;
    out.endpoint_version_created_at = isoformat(version.createdAt);
    return done({ status: 200, body: out, ...(runDelayMs > 0 ? { delayMs: runDelayMs } : {}) });
  }

  /** last_execution_times: real (non-materialized, uncached) runs within six months. */
  function lastExecutionTimes(projectId: number, raw: Buffer): Answer {
    const got = parse(raw);
    if (!('data' in got)) return got;
    const model = 'EndpointLastExecutionTimesRequest';
    const data = got.data;
    if (!isObject(data)) return pydantic(model, '', `Input should be a valid dictionary or instance of ${model}`, 'model_type', data);
    for (const [k, v] of Object.entries(data)) if (k !== 'names') return pydantic(model, k, 'Extra inputs are not permitted', 'extra_forbidden', v);
    if (!('names' in data)) return pydantic(model, 'names', 'Field required', 'missing', data);
    const names = data.names;
    if (!Array.isArray(names)) return pydantic(model, 'names', 'Input should be a valid list', 'list_type', names);
    const badIndex = names.findIndex((n) => typeof n !== 'string');
    if (badIndex >= 0) return pydantic(model, `names.${badIndex}`, 'Input should be a valid string', 'string_type', names[badIndex]);
    for (const n of names as string[]) if (!nameRule.test(n)) return invalid(`Invalid endpoint name: ${n}`);
    const status = (results: unknown): Answer => ({
      status: 200,
      body: {
        query_status: {
          id: '', query_async: true, team_id: projectId, insight_id: null, dashboard_id: null, error: false, complete: true, error_message: null,
          results, pickup_time: null, start_time: null, end_time: null, expiration_time: null, task_id: null, query_progress: null,
        },
      },
    });
    if (names.length === 0) return status(null);
    const since = now() - sixMonthsMs;
    const rows: unknown[] = [];
    for (const n of new Set(names as string[])) {
      const at = lastRuns.get(endpointKey(projectId, n));
      if (at !== undefined && at >= since) rows.push([n, drfTime(at)]);
    }
    return status(rows);
  }

  /** Everything after authentication and permission. */
  function serve(route: string, req: IncomingMessage, url: URL, projectId: number, name: string, versionNumber: string, raw: Buffer): Answer {
    if (route === 'method_not_allowed') return error(405, 'invalid_request', 'method_not_allowed', `Method "${req.method}" not allowed.`);
    const body = (): { data: Json } | Answer => {
      const got = parse(raw);
      if (!('data' in got)) return got;
      if (!isObject(got.data)) return error(400, 'validation_error', 'invalid_input', `Invalid data. Expected a dictionary, but got ${pyType(got.data)}.`);
      return { data: got.data };
    };
    switch (route) {
      case 'list': {
        const active = url.searchParams.get('is_active');
        let all = [...projectEndpoints(projectId).values()].sort((a, b) => a.createdAt - b.createdAt);
        if (active !== null && active !== '') {
          const wanted = ['true', 'True', '1'].includes(active) ? true : ['false', 'False', '0'].includes(active) ? false : null;
          if (wanted === null) return invalid('Enter a valid boolean.', 'is_active');
          all = all.filter((e) => e.is_active === wanted);
        }
        const createdBy = url.searchParams.get('created_by');
        if (createdBy !== null && createdBy !== '' && createdBy !== String(fakeUser.id)) all = [];
        return { status: 200, body: { results: all.map(present) } };
      }
      case 'create': {
        const got = body();
        return 'data' in got ? create(projectId, got.data) : got;
      }
      case 'last_execution_times': return lastExecutionTimes(projectId, raw);
      case 'run': return run(req, url, projectId, name, raw);
    }
    const e = projectEndpoints(projectId).get(name);
    if (!e) return notFound();
    switch (route) {
      case 'retrieve': return { status: 200, body: present(e) };
      case 'partial_update':
      case 'update': {
        const got = body();
        return 'data' in got ? update(e, got.data) : got;
      }
      case 'destroy':
        projectEndpoints(projectId).delete(name);
        dropCache(projectId, name);
        return { status: 204 };
      case 'materialization_status': return { status: 200, body: materializationOf(e) };
      case 'openapi_spec': return { status: 200, body: openapi(req, e) };
      case 'versions': return { status: 200, body: [...e.versions].reverse().map(presentVersion) };
      case 'version_detail': {
        const v = e.versions.find((x) => x.version === Number(versionNumber));
        return v ? { status: 200, body: presentVersion(v) } : { status: 404, body: { error: `Version ${Number(versionNumber)} not found` } };
      }
    }
    return notFound();
  }

  /** The 403 detail for a principal on a project and scope (undefined: only whether it reaches the project), or null. */
  const refusal = (p: Principal, projectId: number, scope: string | undefined): string | null => personalKeyRefusal(p.scopes, p.record, projectId, scope);

  /** DRF's SimpleRateThrottle on runs, per presented key (off unless setRunLimit): a 429, or null. */
  function throttle(key: string): Answer | null {
    if (!runLimit) return null;
    const at = now();
    const history = (throttleHistory.get(key) ?? []).filter((t) => t > at - runLimit!.windowMs);
    throttleHistory.set(key, history);
    if (history.length >= runLimit.limit) {
      const wait = Math.max(1, Math.ceil(((history[0] as number) + runLimit.windowMs - at) / 1000));
      return { ...error(429, 'throttled_error', 'throttled', `Request was throttled. Expected available in ${wait} second${wait === 1 ? '' : 's'}.`), headers: { 'retry-after': String(wait) } };
    }
    history.push(at);
    return null;
  }

  /** Route, authenticate, resolve the project, check permissions, then serve. */
  function answer(req: IncomingMessage, url: URL, raw: Buffer, projectPart: string, rest: string): Answer {
    let segments: string[];
    try {
      segments = rest === '' ? [] : rest.split('/').map(decodeURIComponent);
    } catch {
      return notFound('Endpoint not found.');
    }
    const [first = '', second = '', third] = segments;
    const isCollection = segments.length === 0 || (segments.length === 1 && Object.hasOwn(collectionRoutes, first));
    let table = isCollection ? collectionRoutes[first] : segments.length <= 2 && Object.hasOwn(detailRoutes, second) ? detailRoutes[second] : undefined;
    // versions/:version_number only matches digits (route regex [0-9]+); anything else falls to the API catch-all.
    if (!isCollection && second === 'versions' && segments.length === 3 && /^[0-9]+$/.test(third ?? '')) table = { GET: ['version_detail', read] };
    if (!table || segments.includes('') || first.includes('.')) return notFound('Endpoint not found.');
    const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
    const [route, scope] = table[method] ?? ['method_not_allowed', undefined];
    counts[route] = (counts[route] ?? 0) + 1;

    const presented = presentedKey(req.headers.authorization, url, raw, () => parse(raw));
    if (presented === undefined) return unauthorized('Authentication credentials were not provided.', 'not_authenticated');
    if (!Array.isArray(presented)) return presented;
    const [key, source] = presented;
    const record = deps.personalKeys.get(key);
    let principal: Principal;
    if (deps.keys.has(key)) principal = { scopes: null };
    else if (record) principal = { scopes: record.scopes, record };
    else return unauthorized(`Personal API key found in request ${source} is invalid.`);

    let projectId: number | undefined;
    if (projectPart === '@current') projectId = [...deps.projects.keys()].sort((a, b) => a - b).find((pid) => refusal(principal, pid, undefined) === null);
    else if (/^\d+$/.test(projectPart)) projectId = Number(projectPart);
    if (projectId === undefined) return notFound('Project not found.');
    const scoped = principal.scopes !== null && principal.scopes.length > 0;
    if (scoped && route === 'method_not_allowed') return forbidden('This action does not support Personal API Key access');
    const denied = refusal(principal, projectId, scope);
    if (denied !== null) return forbidden(denied);
    if (!deps.projects.has(projectId)) return notFound('Project not found.');
    if (route === 'run') {
      const throttled = throttle(key);
      if (throttled) return runErrorDelayMs > 0 ? { ...throttled, delayMs: runErrorDelayMs } : throttled;
    }
    return serve(route, req, url, projectId, isCollection ? '' : first, third ?? '', raw);
  }

  /** Answer one request; false when the path is not under `/api/{projects,environments}/:id/endpoints`. */
  function handle(req: IncomingMessage, res: ServerResponse, url: URL, raw: Buffer): boolean {
    const match = /^\/api\/(?:projects|environments)\/([^/]+)\/endpoints(?:\/(.*))?$/.exec(url.pathname);
    if (!match) return false;
    let reply: Answer;
    try {
      reply = answer(req, url, raw, match[1] ?? '', (match[2] ?? '').replace(/\/$/, ''));
    } catch {
      reply = error(500, 'server_error', 'error', 'A server error occurred.');
    }
    const mode = deps.mode?.();
    if (reply.delayMs) setTimeout(() => respond(req, res, reply, mode), reply.delayMs);
    else respond(req, res, reply, mode);
    return true;
  }

  function reset(): void {
    endpoints.clear();
    cache.clear();
    runCounts.clear();
    lastRuns.clear();
    for (const k of Object.keys(counts)) delete counts[k];
    runCalls.length = 0;
    throttleHistory.clear();
    runLimit = null;
    runDelayMs = 0;
    runErrorDelayMs = 0;
    clock = null;
    offsetMs = 0;
  }

  const find = (projectId: number, name: string): Stored => {
    const e = endpoints.get(projectId)?.get(name);
    if (!e) throw new Error(`no endpoint ${name} in project ${projectId}`);
    return e;
  };

  return {
    handle,
    /** Create an endpoint directly (no validation beyond the project existing); returns its serialized object. Replaces one of the same name. */
    seed(projectId: number, endpoint: FakeEndpointSeed): Json {
      if (!deps.projects.has(projectId)) throw new Error(`no project ${projectId}`);
      dropCache(projectId, endpoint.name);
      const stored = insert(projectId, {
        name: endpoint.name,
        query: endpoint.query ?? { kind: 'HogQLQuery', query: 'SELECT 1' },
        previous: endpoint.previousQueries ?? [],
        description: endpoint.description ?? '',
        is_active: endpoint.is_active ?? true,
        cache_age_seconds: endpoint.cache_age_seconds ?? null,
        derived_from_insight: endpoint.derived_from_insight ?? null,
      });
      if (endpoint.materialization) stored.materialization = { last_materialized_at: null, error: '', sync_frequency: '24hour', ...endpoint.materialization };
      return present(stored);
    },
    /** A project's endpoints as serialized objects, oldest first. */
    endpoints: (projectId: number): Json[] => [...(endpoints.get(projectId)?.values() ?? [])].sort((a, b) => a.createdAt - b.createdAt).map(present),
    /** One endpoint as its serialized object, or undefined. */
    endpoint: (projectId: number, name: string): Json | undefined => {
      const e = endpoints.get(projectId)?.get(name);
      return e ? present(e) : undefined;
    },
    /** Real (uncached) executions of the endpoint name so far in the project (= the last run number); survives DELETE, cleared by reset(). */
    runs: (projectId: number, name: string): number => runCounts.get(endpointKey(projectId, name)) ?? 0,
    /** Every run request that passed authentication, permission and throttling, in order (see FakeRunCall). */
    runCalls: (): FakeRunCall[] => runCalls.map((c) => ({ ...c })),
    /**
     * Requests per route name, counted before authentication: `list`, `create`, `retrieve`, `partial_update` (PATCH),
     * `update` (PUT), `destroy`, `materialization_status`, `openapi_spec`, `run` (GET and POST), `versions`,
     * `version_detail`, `last_execution_times`, `method_not_allowed`.
     */
    counts: (): Record<string, number> => ({ ...counts }),
    /** Materialize (a materialization status; `last_materialized_at` defaults to now for `Completed`, `sync_frequency` to `24hour`) or un-materialize (null). */
    setMaterialization(projectId: number, name: string, status: FakeMaterialization | null): void {
      const e = find(projectId, name);
      e.materialization =
        status === null
          ? null
          : { error: '', sync_frequency: '24hour', ...status, last_materialized_at: status.last_materialized_at !== undefined ? status.last_materialized_at : status.status === 'Completed' ? isoformat(now()) : null };
    },
    /** Throttle runs: at most `limit` per presented key within `windowMs` (default 60 s), else 429 + Retry-After; null turns it off (default). */
    setRunLimit(limit: number | null, windowMs = 60_000): void {
      runLimit = limit === null ? null : { limit, windowMs };
      throttleHistory.clear();
    },
    /** Delay (ms) before a successful run's answer is written (its result is computed on arrival); 0 by default. */
    setRunDelay(ms: number): void {
      runDelayMs = ms;
    },
    /** Delay (ms) before a throttled run's 429 is written; 0 by default. */
    setRunErrorDelay(ms: number): void {
      runErrorDelayMs = ms;
    },
    /** The fake's clock (timestamps, cache ages, throttle windows, six months of last_execution_times); null: Date.now. */
    setClock(fn: (() => number) | null): void {
      clock = fn;
    },
    /** Move the fake's clock forward by `ms` (on top of setClock's). */
    advance(ms: number): void {
      offsetMs += ms;
    },
    /** Forget the fake's query cache (every project, or one), as if Redis were flushed. */
    clearCache(projectId?: number): void {
      for (const key of [...cache.keys()]) if (projectId === undefined || key.startsWith(`${projectId}\u0000`)) cache.delete(key);
    },
    /** Back to the start: no endpoints, caches, counters, run log, limit, delay or clock changes. */
    reset,
  };
}

/** The request body as JSON (empty: `{}`), or a 400 parse_error. */
function parse(raw: Buffer): { data: unknown } | Answer {
  const text = raw.toString('utf8');
  if (text.trim() === '') return { data: {} };
  try {
    return { data: JSON.parse(text) as unknown };
  } catch (e) {
    return error(400, 'invalid_request', 'parse_error', `JSON parse error - ${(e as Error).message}`);
  }
}

/** Write an answer: JSON, or an empty body when it has none; garbage/truncated modes spoil 2xx bodies. */
function respond(req: IncomingMessage, res: ServerResponse, answer: Answer, mode: FakeMode | undefined): void {
  if (res.destroyed) return;
  const text = answer.body === undefined ? '' : JSON.stringify(answer.body);
  const ok = answer.status < 300 && text !== '';
  if (ok && mode?.kind === 'garbage') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return void res.end('<html>upstream proxy error</html>');
  }
  res.writeHead(answer.status, { ...answer.headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
  if (ok && mode?.kind === 'truncated') {
    res.write(text.slice(0, Math.floor(text.length / 2)));
    return void setTimeout(() => req.socket.destroy(), 5);
  }
  res.end(text);
}

/** The endpoints API's handle. */
export type FakeEndpointsApi = ReturnType<typeof createFakeEndpointsApi>;
