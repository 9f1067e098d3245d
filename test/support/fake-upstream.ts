/**
 * A fake PostHog for tests, behaving like PostHog's `local_evaluation` (`posthog/api/feature_flag.py`) and its
 * flags service's `/flags/definitions` (`rust/feature-flags/src/api/flag_definitions.rs`) for the local_evaluation
 * paths: Bearer auth (401 bodies; OAuth access tokens as fake-oauth.ts), `?token=` project selection, ETag `W/"<16 hex>"` with 304 on If-None-Match, `send_cohorts` by presence. Failure modes can be switched on at any time: down (connection
 * refused), reset, slow, a fixed status and body (500, 429, 402, 403…), garbage, a body that fails validation,
 * a truncated body, a huge body. Every request is recorded. The rest of the flag management API is delegated to fake-flag-api.ts,
 * the capture endpoints (events recorded) to fake-capture.ts.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createFakeCapture } from './fake-capture.js';
import { createFakeCohorts, type FakeStaticCohort } from './fake-cohorts.js';
import { createFakeEndpointsApi } from './fake-endpoints-api.js';
import { createFakeFlagApi } from './fake-flag-api.js';
import { FlagsDecodeError, readFlagsRequest } from './fake-flags-request.js';
import { oauthRefusal, oauthToken, type FakeOAuthToken } from './fake-oauth.js';

/** One project of the fake. */
export interface FakeProject {
  token: string;
  definitions: Record<string, unknown>;
  /** The project's secret key (`phs_…`): accepted for this project's local_evaluation, 403 for others. */
  secretKey?: string;
  /** Static cohorts by id (fake-cohorts.ts): absent from the definitions' `cohorts`, as upstream leaves them out. */
  staticCohorts?: Record<string, FakeStaticCohort>;
  /** Over its feature-flag quota: the definitions paths answer 402 (setQuotaLimited). */
  quotaLimited?: boolean;
}

/** Failure modes. */
export type FakeMode =
  | { kind: 'normal' }
  | { kind: 'slow'; delayMs: number }
  | { kind: 'status'; status: number; body: string; headers?: Record<string, string> }
  | { kind: 'garbage' }
  | { kind: 'invalid' }
  | { kind: 'truncated' }
  | { kind: 'reset' }
  /** Every request answered 200 with a JSON body of `bytes` bytes (above the sidecar's FLAG_SIDECAR_UPSTREAM_MAX_BODY). */
  | { kind: 'huge'; bytes: number };

/** A personal key the fake knows, as `/api/personal_api_keys/@current/` returns it. */
export interface FakePersonalKey {
  scopes: string[] | null;
  scoped_teams?: number[] | null;
  label?: string;
  /** Answer 403 to its introspection, as older upstreams do for scoped keys. */
  refuseIntrospection?: boolean;
  /** Organization scoping (the fake gives every project one organization, `org-<project id>`). */
  scoped_organizations?: string[];
  /** Projects whose member the key's user is (default: all). */
  member_of?: number[];
}

/** A recorded request. */
export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
}

/** The low end of the OS's ephemeral port range (Linux's ip_local_port_range; 32768, its default, elsewhere). */
const ephemeralLow = ((): number => {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 20_100 ? low : 32_768;
  } catch {
    return 32_768;
  }
})();

const body401 = JSON.stringify({
  type: 'authentication_error',
  code: 'authentication_failed',
  detail: 'Personal API key found in request Authorization header is invalid.',
  attr: null,
});
const body401none = JSON.stringify({
  type: 'authentication_error',
  code: 'not_authenticated',
  detail: 'Authentication credentials were not provided.',
  attr: null,
});

/**
 * A quota-limited project's 402 on the definitions paths, after authentication and before the ETag check. Django's
 * local_evaluation (posthog/api/feature_flag.py, `FeatureFlagViewSet.local_evaluation`) writes its own dict, without
 * `attr`; the flags service's /flags/definitions (rust/feature-flags api/flag_definitions.rs, `flags_definitions`)
 * answers `ClientFacingError::BillingLimit` as api/errors.rs serializes it: `AuthenticationErrorResponse`, whose
 * fields are type, code, detail, attr.
 */
const quotaBodyDjango = JSON.stringify({ type: 'quota_limited', detail: 'You have exceeded your feature flag request quota', code: 'payment_required' });
const quotaBodyFlagsService = JSON.stringify({ type: 'quota_limited', code: 'payment_required', detail: 'You have exceeded your feature flag request quota', attr: null });

/** Sorted-keys JSON, as upstream hashes it for the ETag. */
function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${sortedJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Start the fake on 127.0.0.1 (port 0 unless given). */
export async function startFakeUpstream(options: {
  projects: Record<number, FakeProject>;
  keys: string[];
  personalKeys?: Record<string, FakePersonalKey>;
  /** OAuth access tokens (`pha_…`) the fake knows (fake-oauth.ts). */
  oauthTokens?: Record<string, FakeOAuthToken>;
  port?: number;
  /** /flags leaves out keys the project has no flag for, as upstream does (default: it answers every key asked). */
  omitUnknownFlags?: boolean;
}) {
  const personalKeys = new Map(Object.entries(options.personalKeys ?? {}));
  const oauthTokens = new Map(Object.entries(options.oauthTokens ?? {}));
  const projects = new Map(Object.entries(options.projects).map(([id, p]) => [Number(id), p]));
  const keys = new Set(options.keys);
  const requests: RecordedRequest[] = [];
  const flagsCalls: Array<{ query: string; body: { token?: string; api_key?: string; flag_keys_to_evaluate?: string[] } }> = [];
  let mode: FakeMode = { kind: 'normal' };
  let server: Server | null = null;
  let port = options.port ?? 0;
  const flagApi = createFakeFlagApi({
    projects,
    personalKeys,
    oauthTokens,
    keys,
    updateDefinitions: (projectId, definitions) => {
      const project = projects.get(projectId);
      if (project) project.definitions = definitions;
    },
    mode: () => mode,
  });
  const endpointsApi = createFakeEndpointsApi({ projects, personalKeys, keys, mode: () => mode });
  const capture = createFakeCapture();
  const cohorts = createFakeCohorts({
    keys,
    personalKeys,
    cohorts: new Map([...projects].map(([id, p]) => [id, new Map(Object.entries(p.staticCohorts ?? {}))])),
    baseUrl: () => `http://127.0.0.1:${port}`,
  });

  /** The project's flags as upstream serves them (local_evaluation and /flags alike): no deleted flags, no encrypted remote configs. */
  function servedFlags(project: FakeProject): Array<{ key: string; id: number; active?: unknown; has_experiment?: boolean }> {
    const all = (project.definitions.flags as Array<Record<string, unknown>> | undefined) ?? [];
    return all.filter((f) => f.deleted !== true && !(f.is_remote_configuration === true && f.has_encrypted_payloads === true)) as never;
  }

  /**
   * The served flags upstream's flags service answers `missing_dependency` (false, no condition index) before their
   * conditions: an active flag whose conditions' flag filter names (by id, or by key as local_evaluation rewrites
   * it) no served flag — deleted, an encrypted remote config, or none at all — directly or through a served flag
   * (PostHog/posthog products/feature_flags/backend/flags_cache.py `_compute_flag_dependencies`,
   * rust/feature-flags/src/flags/flag_matching.rs `FeatureFlagMatcher::evaluate_single_flag`). A survey's flag is
   * served, so its dependants evaluate normally, as upstream.
   */
  function missingDependencyKeys(flags: ReadonlyArray<Record<string, unknown>>): Set<string> {
    const find = (ref: unknown) => flags.find((f) => String(f.id) === String(ref) || f.key === ref);
    const targets = (flag: Record<string, unknown>): unknown[] =>
      flag.active !== true
        ? []
        : ((((flag.filters as { groups?: Array<{ properties?: Array<{ type?: string; key?: unknown }> }> } | undefined)?.groups) ?? []).flatMap((g) => g.properties ?? []).filter((p) => p?.type === 'flag').map((p) => p.key));
    const missing = new Set<string>();
    const broken = (flag: Record<string, unknown>, path: ReadonlySet<unknown>): boolean =>
      targets(flag).some((ref) => {
        const dep = find(ref);
        return dep === undefined || path.has(dep) || broken(dep, new Set([...path, dep]));
      });
    for (const flag of flags) if (broken(flag, new Set([flag]))) missing.add(String(flag.key));
    return missing;
  }

  function bodyFor(project: FakeProject, withCohorts: boolean): string {
    const flags = servedFlags(project);
    const served = flags.length === ((project.definitions.flags as unknown[] | undefined)?.length ?? 0) ? project.definitions : { ...project.definitions, flags };
    const defs = withCohorts ? served : { ...served, cohorts: {} };
    return JSON.stringify(defs);
  }

  function etagFor(body: string): string {
    return createHash('sha256').update(sortedJson(JSON.parse(body))).digest('hex').slice(0, 16);
  }

  /**
   * `GET /api/projects/:id/` as upstream's ProjectViewSet answers it: the project with its `api_token`, for a key
   * with `project:read` (or all scopes); 403 for a personal key without it, for a project secret key, or outside
   * the key's scoped teams; 401 for an unknown key; 404 for an unknown project.
   */
  function serveProject(id: number, req: IncomingMessage, res: ServerResponse): void {
    const presented = /^Bearer\s+(\S.*)$/.exec((req.headers.authorization ?? '').trim())?.[1]?.trim();
    const personal = presented === undefined ? undefined : personalKeys.get(presented);
    const answer = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const forbid = (detail: string): void => answer(403, { type: 'authentication_error', code: 'permission_denied', detail, attr: null });
    if (presented === undefined) return answer(401, JSON.parse(body401none));
    if ([...projects.values()].some((p) => p.secretKey === presented)) return forbid('You do not have permission to perform this action.');
    if (!keys.has(presented) && personal === undefined) return answer(401, JSON.parse(body401));
    if (personal !== undefined) {
      const scopes = personal.scopes === null || personal.scopes.length === 0 ? ['*'] : personal.scopes;
      if (!scopes.some((sc) => sc === '*' || sc === 'project:read' || sc === 'project:write')) return forbid("API key missing required scope 'project:read'");
      const teams = personal.scoped_teams ?? [];
      if (teams.length > 0 && !teams.includes(id)) return forbid(`API key does not have access to the requested project: ID ${id}.`);
    }
    const project = projects.get(id);
    if (!project) return answer(404, { type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null });
    answer(200, { id, organization: `org-${id}`, name: `Project ${id}`, api_token: project.token });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    requests.push({ method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers });
    const url = new URL(req.url ?? '/', 'http://fake');
    const m = mode;
    if (m.kind === 'reset') return void req.socket.destroy();
    if (m.kind === 'slow') await new Promise((r) => setTimeout(r, m.delayMs));
    if (m.kind === 'status') {
      res.writeHead(m.status, { 'content-type': 'application/json', ...m.headers });
      return void res.end(m.body);
    }
    if (m.kind === 'huge') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(`{"flags":[],"pad":"${'x'.repeat(Math.max(0, m.bytes - 22))}"}`);
    }
    if (url.pathname.replace(/\/$/, '') === '/api/personal_api_keys/@current') {
      const presented = /^Bearer\s+(\S.*)$/.exec((req.headers.authorization ?? '').trim())?.[1]?.trim();
      const record = presented === undefined ? undefined : personalKeys.get(presented);
      if (record?.refuseIntrospection) {
        res.writeHead(403, { 'content-type': 'application/json' });
        return void res.end(JSON.stringify({ type: 'authentication_error', code: 'permission_denied', detail: "API key missing required scope 'personal_api_key:read'", attr: null }));
      }
      if (!record) {
        // PersonalAPIKeyViewSet authenticates with PersonalAPIKeyAuthentication and SessionAuthentication only, and
        // the former skips a `pha_` header token: an OAuth token, valid or not, is no credential here.
        res.writeHead(401, { 'content-type': 'application/json' });
        return void res.end(presented === undefined || oauthToken(req.headers.authorization) !== undefined ? body401none : body401);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(
        JSON.stringify({
          id: 'key-id',
          label: record.label ?? 'fake key',
          value: null,
          mask_value: 'phx_...',
          created_at: '2026-01-01T00:00:00.000000Z',
          last_used_at: null,
          user_id: 17,
          // As the seed-era upstream, whose flag API lets such legacy keys do everything: scopes null, not ['*'].
          scopes: record.scopes,
          scoped_teams: record.scoped_teams ?? [],
          scoped_organizations: record.scoped_organizations ?? [],
          last_rolled_at: null,
        }),
      );
    }
    const projectRecord = /^\/api\/projects\/(\d+)\/?$/.exec(url.pathname);
    if (projectRecord && req.method === 'GET') return serveProject(Number(projectRecord[1]), req, res);
    const match = /^\/api\/projects\/(\d+)\/feature_flags\/local_evaluation\/?$/.exec(url.pathname);
    const sdkPath = url.pathname.replace(/\/$/, '') === '/flags/definitions' || url.pathname.replace(/\/$/, '') === '/api/feature_flag/local_evaluation';
    if (!match && !sdkPath) {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const evaluation = url.pathname.replace(/\/$/, '');
      if (req.method === 'POST' && (evaluation === '/flags' || evaluation === '/decide')) return serveFlags(url, Buffer.concat(chunks), req.headers, res);
      if (capture.handle(req.method, url, req.headers, Buffer.concat(chunks), res)) return;
      if (cohorts.handle(req, res, url)) return;
      if (flagApi.handle(req, res, url, Buffer.concat(chunks))) return;
      if (endpointsApi.handle(req, res, url, Buffer.concat(chunks))) return;
      res.writeHead(404, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null }));
    }
    // The flags service looks the team up by `?token=` before it authenticates (rust/feature-flags
    // api/flag_definitions.rs, `flags_definitions`): an unknown token is its TokenValidationError, key or not.
    const flagsService = url.pathname.replace(/\/$/, '') === '/flags/definitions';
    const definitionsToken = flagsService ? url.searchParams.get('token') : null;
    if (definitionsToken && req.method === 'GET' && ![...projects.values()].some((p) => p.token === definitionsToken)) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ type: 'authentication_error', code: 'authentication_failed', detail: 'The provided API key is invalid or has expired. Please check your API key and try again.', attr: null }));
    }
    const auth = /^Bearer\s+(\S.*)$/.exec((req.headers.authorization ?? '').trim());
    if (!auth) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return void res.end(body401none);
    }
    const presented = (auth[1] as string).trim();
    const token = url.searchParams.get('token');
    const id = token ? [...projects.entries()].find(([, p]) => p.token === token)?.[0] : Number(match?.[1]);
    const project = id === undefined ? undefined : projects.get(id);
    const oauth = oauthToken(req.headers.authorization);
    // local_evaluation's authenticators are upstream's defaults plus its own: an OAuth token is checked as one.
    const oauthDenied = oauth === undefined || !match ? null : oauthRefusal(oauthTokens, oauth, id ?? 0, 'feature_flag:read');
    if (oauthDenied !== null) {
      res.writeHead(oauthDenied.status, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify(oauthDenied.body));
    }
    const secretOf = [...projects.entries()].find(([, p]) => p.secretKey === presented)?.[0];
    const personal = personalKeys.get(presented);
    if (!keys.has(presented) && secretOf === undefined && personal === undefined && (oauth === undefined || !match)) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return void res.end(body401);
    }
    if (personal !== undefined && id !== undefined) {
      const scopes = personal.scopes === null || personal.scopes.length === 0 ? ['*'] : personal.scopes;
      const teams = personal.scoped_teams ?? [];
      const forbid = (detail: string) => {
        res.writeHead(403, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'authentication_error', code: 'permission_denied', detail, attr: null }));
      };
      if (teams.length > 0 && !teams.includes(id)) return void forbid(`API key does not have access to the requested project: ID ${id}.`);
      if (personal.member_of && !personal.member_of.includes(id)) return void forbid("You don't have access to the project.");
      const orgs = personal.scoped_organizations ?? [];
      if (orgs.length > 0 && !orgs.includes(`org-${id}`)) return void forbid(`API key does not have access to the requested organization: ID org-${id}.`);
      if (!scopes.some((sc) => sc === '*' || sc === 'feature_flag:read' || sc === 'feature_flag:write')) return void forbid("API key missing required scope 'feature_flag:read'");
    }
    if (secretOf !== undefined && secretOf !== id) {
      res.writeHead(403, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ type: 'authentication_error', code: 'permission_denied', detail: 'You do not have permission to perform this action.', attr: null }));
    }
    if (!project) {
      res.writeHead(404, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ type: 'invalid_request', code: 'not_found', detail: 'Project not found.', attr: null }));
    }
    if (project.quotaLimited) {
      res.writeHead(402, { 'content-type': 'application/json' });
      return void res.end(flagsService ? quotaBodyFlagsService : quotaBodyDjango);
    }
    if (m.kind === 'garbage') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end('<html>upstream proxy error</html>');
    }
    if (m.kind === 'invalid') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end('{"detail":"no flags here"}');
    }
    const body = bodyFor(project, url.searchParams.has('send_cohorts'));
    const etag = etagFor(body);
    const headers = { etag: `W/"${etag}"`, 'cache-control': 'private, must-revalidate' };
    const given = req.headers['if-none-match'];
    if (given !== undefined && given.replace(/^W\//, '').replace(/^"|"$/g, '') === etag) {
      res.writeHead(304, headers);
      return void res.end();
    }
    if (m.kind === 'truncated') {
      res.writeHead(200, { ...headers, 'content-type': 'application/json', 'content-length': String(body.length) });
      res.write(body.slice(0, Math.floor(body.length / 2)));
      return void setTimeout(() => req.socket.destroy(), 5);
    }
    res.writeHead(200, { ...headers, 'content-type': 'application/json' });
    res.end(body);
  }

  /**
   * Upstream's evaluation endpoint, as a stand-in for the server: every flag asked for (flag_keys_to_evaluate,
   * else all of the project's) is answered `enabled: true` with the reason description "server" (a flag with a
   * missing dependency: `missing_dependency`, see missingDependencyKeys) — but a deleted
   * flag or an encrypted remote config in the definitions is left out, as upstream leaves them out of both its
   * local_evaluation and its /flags answers (no error), and so is an inactive flag (`active` not true: upstream's
   * flags service evaluates only active flags, flag_matching.rs evaluate_flags_in_level; local_evaluation still
   * lists it). Each flag's `has_experiment` is its definition's, true when absent (upstream's default,
   * flag_models.rs). So a test sees
   * which answers came from here; `evaluatedAt` is the time it answered, in ms, and `minimalFlagCalledEvents` is
   * there when the definitions opt in, as upstream's. Each request body is kept in flagsCalls.
   */
  function serveFlags(url: URL, body: Buffer, headers: IncomingHttpHeaders, res: ServerResponse): void {
    let request: { token?: string; api_key?: string; flag_keys_to_evaluate?: string[] };
    try {
      request = readFlagsRequest(body, headers, url.searchParams);
    } catch (error) {
      if (!(error instanceof FlagsDecodeError)) throw error;
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
      return void res.end(error.message);
    }
    flagsCalls.push({ query: url.search, body: request });
    // The project token as upstream reads it: `token`, else `api_key` (what posthog-python sends).
    const project = [...projects.values()].find((p) => p.token === (request.token ?? request.api_key));
    if (!project) {
      res.writeHead(401, { 'content-type': 'text/plain' });
      return void res.end('The provided API key is invalid or has expired. Please check your API key and try again.');
    }
    const all = servedFlags(project).filter((f) => f.active === true);
    // A key of a flag upstream leaves out (deleted, an encrypted remote config, inactive) is not in its answer, and no error.
    const served = new Set(all.map((f) => f.key));
    const excluded = new Set(((project.definitions.flags as Array<{ key: string }> | undefined) ?? []).map((f) => f.key).filter((key) => !served.has(key)));
    const keys = (request.flag_keys_to_evaluate ?? all.map((f) => f.key)).filter((key) => !excluded.has(key));
    const flags: Record<string, unknown> = {};
    const missingDependency = missingDependencyKeys(servedFlags(project) as never);
    for (const key of keys) {
      const flag = all.find((f) => f.key === key);
      if (flag === undefined && options.omitUnknownFlags === true) continue;
      if (missingDependency.has(key)) {
        const reason = { code: 'missing_dependency', condition_index: null, description: 'Flag cannot be evaluated due to missing dependency' };
        flags[key] = { key, enabled: false, variant: null, reason, metadata: { id: flag?.id ?? null, version: 1, payload: null, has_experiment: flag?.has_experiment !== false } };
        continue;
      }
      const metadata = { id: flag?.id ?? null, version: 1, payload: '{"from":"server"}', has_experiment: flag?.has_experiment !== false };
      flags[key] = { key, enabled: true, variant: null, reason: { code: 'condition_match', condition_index: 0, description: 'server' }, metadata };
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    const minimal = project.definitions.minimal_flag_called_events === true ? { minimalFlagCalledEvents: true } : {};
    const stamp = { requestId: 'fake-request', evaluatedAt: Date.now() };
    const details = Object.values(flags) as Array<{ key: string; enabled: boolean; variant: string | null; metadata: { payload: unknown } }>;
    const value = (d: (typeof details)[number]): unknown => d.variant ?? d.enabled;
    const enabled = details.filter((d) => d.enabled);
    const answer = {
      v2: { flags, errorsWhileComputingFlags: false, ...stamp, ...minimal },
      legacy: { errorsWhileComputingFlags: false, featureFlags: Object.fromEntries(details.map((d) => [d.key, value(d)])), featureFlagPayloads: Object.fromEntries(details.filter((d) => d.metadata.payload != null).map((d) => [d.key, d.metadata.payload])), ...stamp },
      decide1: { featureFlags: enabled.map((d) => d.key), ...stamp },
      decide2: { featureFlags: Object.fromEntries(enabled.map((d) => [d.key, value(d)])), ...stamp },
    }[versionedShape(url)];
    res.end(JSON.stringify(answer));
  }

  /**
   * The flags service's choice of shape (handler/flags.rs `flags`, `get_versioned_response`): `/decide` stands for
   * a request the public host passes on with `X-Original-Endpoint: decide`.
   */
  function versionedShape(url: URL): 'v2' | 'legacy' | 'decide1' | 'decide2' {
    const decide = url.pathname.startsWith('/decide');
    const raw = url.searchParams.get('v') || null;
    let version = raw === null ? null : /^[+-]?\d{1,10}$/.test(raw) && Math.abs(Number(raw)) < 2 ** 31 ? Number(raw) : 1;
    if (version === null && !decide && !url.searchParams.has('config')) version = 2;
    if (!decide) return (version ?? 1) >= 2 ? 'v2' : 'legacy';
    return version === 2 ? 'decide2' : version === 3 ? 'legacy' : version !== null && version >= 4 ? 'v2' : 'decide1';
  }

  async function listen(): Promise<void> {
    // A client that goes away mid-request (a sidecar stopping with a request in flight) rejects the body read:
    // that ends the exchange, never the test run with an unhandled rejection.
    server = createServer((req, res) => void handle(req, res).catch(() => res.destroy()));
    const s = server;
    if (port === 0 && options.port === undefined) {
      // A port below the OS's ephemeral range, which every listener on port 0 draws from: while the fake is down
      // (goDown) no other server of the run — the other vitest worker's included — can be given its port, and a
      // sidecar polling it must meet a refused connection, not someone else's 404 (seen with two workers).
      for (let attempt = 0; ; attempt++) {
        const candidate = 20_000 + Math.floor(Math.random() * (ephemeralLow - 20_000));
        const taken = await new Promise<boolean>((resolve, reject) => {
          const fail = (error: NodeJS.ErrnoException): void => (error.code === 'EADDRINUSE' && attempt < 50 ? resolve(true) : reject(error));
          s.once('error', fail);
          s.listen(candidate, '127.0.0.1', () => {
            s.off('error', fail);
            resolve(false);
          });
        });
        if (!taken) break;
      }
    } else {
      await new Promise<void>((resolve) => s.listen(port, '127.0.0.1', resolve));
    }
    port = (s.address() as AddressInfo).port;
  }

  async function close(): Promise<void> {
    const s = server;
    server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  await listen();
  return {
    get url(): string {
      return `http://127.0.0.1:${port}`;
    },
    requests,
    /** Bodies of POST /flags so far (see serveFlags). */
    flagsCalls,
    /** Events received on the capture endpoints so far (fake-capture.ts). */
    events: capture.events,
    /** The OAuth access tokens the fake knows, by token (add, change or delete to model upstream's). */
    oauthTokens,
    /** Key introspections so far. */
    introspections: (): RecordedRequest[] => requests.filter((r) => r.url.startsWith('/api/personal_api_keys/')),
    /** Requests for local_evaluation (any of the three paths) so far. */
    polls: (): RecordedRequest[] => requests.filter((r) => r.url.includes('local_evaluation') || r.url.includes('/flags/definitions')),
    setMode(next: FakeMode): void {
      mode = next;
    },
    /** Revoke `key` (personal, project secret, OAuth or plain key): from now on upstream answers it 401 everywhere. */
    revokeKey(key: string): void {
      personalKeys.delete(key);
      oauthTokens.delete(key);
      keys.delete(key);
      for (const project of projects.values()) if (project.secretKey === key) delete project.secretKey;
    },
    /** Put a project over (or back under) its feature-flag quota: 402 on every definitions path, each with its own body. */
    setQuotaLimited(projectId: number, limited: boolean): void {
      const project = projects.get(projectId);
      if (!project) throw new Error(`no project ${projectId}`);
      project.quotaLimited = limited;
    },
    setDefinitions(projectId: number, definitions: Record<string, unknown>): void {
      const project = projects.get(projectId);
      if (!project) throw new Error(`no project ${projectId}`);
      project.definitions = definitions;
      flagApi.reseed(projectId);
    },
    /** The feature-flag management API (fake-flag-api.ts): flags(), setRemoteConfig(), counts(), setDefinitionsLag(). */
    flagApi,
    /** The named query endpoints API (fake-endpoints-api.ts): seed(), runs(), runCalls(), counts(), setMaterialization(), setRunLimit(), setClock(), advance(), reset()… */
    endpointsApi,
    /** Captured events (fake-capture.ts): events, batches(), force(). */
    capture,
    /** Static cohort requests answered so far (fake-cohorts.ts). */
    cohortRequests: cohorts.requests,
    /** A static cohort of the fake, to change or make hostile while it runs (fake-cohorts.ts). */
    staticCohort: cohorts.cohort,
    /** The ETag the fake serves now for a project's variant. */
    etag(projectId: number, withCohorts = true): string {
      const project = projects.get(projectId);
      if (!project) throw new Error(`no project ${projectId}`);
      return `W/"${etagFor(bodyFor(project, withCohorts))}"`;
    },
    /** Stop listening (connections are refused) until comeBack(). */
    goDown: close,
    /** Listen again on the same port. */
    comeBack: listen,
    close,
  };
}

/** The fake's handle. */
export type FakeUpstream = Awaited<ReturnType<typeof startFakeUpstream>>;
