/**
 * OpenFeature Remote Evaluation Protocol (OFREP, open-feature/protocol service/openapi.yaml): a thin mapping onto
 * the evaluation behind `POST /flags` (routes/evaluate.ts) — the same evaluator, and flags the snapshot cannot
 * decide asked of upstream's /flags in one call, never guessed.
 * - `POST /ofrep/v1/evaluate/flags/{key}`: one flag (404 FLAG_NOT_FOUND, 500 GENERAL when neither side decides it);
 * - `POST /ofrep/v1/evaluate/flags`: every flag, with an ETag over the answer; `If-None-Match` → 304;
 * - `GET /ofrep/v1/configuration`: the provider-configuration extension.
 * The project is selected by its token (`Authorization: Bearer phc_…` or `X-API-Key: phc_…`), optional with one
 * project; projects of FLAG_SIDECAR_OFREP_REQUIRE_KEY take a key of the normal kinds instead (the access rules of
 * auth/scopes.ts). Refusals have OFREP's shapes: `{errorCode, errorDetails}` (with `key` for one flag), 429 with
 * Retry-After where the sidecar cannot verify a key right now.
 */
import { createHash } from 'node:crypto';
import type { CompiledDefinitions, CompiledFlag } from '../../eval/compile.js';
import type { FlagsQuery } from '../../eval/flags-response.js';
import { decidedJson, failureJson, OfrepError, ofrepContext, remoteJson } from '../../eval/ofrep.js';
import { ApiError } from '../../errors.js';
import { etagMatches } from '../../store/snapshot.js';
import type { Store } from '../../store/store.js';
import { readBody } from '../body.js';
import { maxFlagsJsonDepth } from '../flags-decoding.js';
import { exceedsJsonDepth } from '../json-depth.js';
import { jsonReply, reusableReply } from '../respond.js';
import type { Reply, RequestContext, Route } from '../router.js';
import type { Access } from './access.js';
import { distinctIdOf, requestRuntime, type Evaluated } from './evaluate.js';

/** Dependencies of the OFREP routes. */
export interface OfrepRouteDeps {
  readonly store: Store;
  readonly access: Access;
  readonly definitions: (projectId: number) => CompiledDefinitions | null;
  /** The evaluation of POST /flags (routes/evaluate.ts). */
  readonly evaluate: (projectId: number, body: Record<string, unknown>, query: FlagsQuery) => Evaluated | Promise<Evaluated>;
  /** Projects whose OFREP routes take a key instead of the project token. */
  readonly requireKey: 'all' | ReadonlySet<number>;
  /** Whether upstream can be asked (a key the snapshot lacks is then upstream's to find). */
  readonly online: boolean;
  readonly maxBodyBytes: number;
  /** The sidecar's poll interval: polling its answers faster shows nothing newer. */
  readonly pollIntervalMs: number;
}

type OfrepRoute = 'ofrep_evaluate_flag' | 'ofrep_evaluate_flags' | 'ofrep_configuration';

const bearer = (header: string | undefined): string | undefined => {
  const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
};

/** An ApiError (auth, body limits) in OFREP's terms: its status, `{errorDetails}`; 503 "cannot verify now" → 429. */
function refusal(error: ApiError): Reply {
  const body = Buffer.from(JSON.stringify({ errorDetails: error.detail }));
  if (error.status === 503 || error.status === 429) return jsonReply(429, body, { 'retry-after': error.headers?.['retry-after'] ?? '1' });
  return jsonReply(error.status === 404 ? 403 : error.status, body, error.headers ?? undefined);
}

const failure = (error: OfrepError, key?: string): Reply => jsonReply(error.status, Buffer.from(failureJson(error.errorCode, error.details, key)));

/** A body's JSON, or OFREP's PARSE_ERROR. An empty body is an empty request. */
function parseBody(raw: Buffer): unknown {
  if (raw.length === 0) return {};
  const text = raw.toString('utf8');
  if (exceedsJsonDepth(text, maxFlagsJsonDepth)) throw new OfrepError(400, 'PARSE_ERROR', 'JSON nesting too deep.');
  try {
    return JSON.parse(text);
  } catch {
    throw new OfrepError(400, 'PARSE_ERROR', 'The request body is not valid JSON.');
  }
}

/**
 * A method an OFREP path does not take (a provider misconfigured, a probe): 405 with `Allow` and OFREP's
 * `{errorDetails}`, before any credential is asked for. null for paths outside OFREP.
 */
export function ofrepWrongMethod(ctx: RequestContext): Reply | null {
  if (!ctx.path.startsWith('/ofrep/')) return null;
  const allow = /^\/ofrep\/v1\/configuration\/?$/.test(ctx.path) ? 'GET, HEAD' : 'POST';
  return jsonReply(405, Buffer.from(JSON.stringify({ errorDetails: `Method ${JSON.stringify(ctx.method)} not allowed here: use ${allow}.` })), { allow });
}

/** The OFREP routes. */
export function ofrepRoutes(deps: OfrepRouteDeps): Route[] {
  const { store, access } = deps;
  const keyRequired = (projectId: number): boolean => deps.requireKey === 'all' || deps.requireKey.has(projectId);

  /**
   * The project a request selects, authorized as its project requires; throws ApiError. A number at once when the
   * project takes no key (a promise only when a key is checked): each await costs the request a microtask turn.
   */
  function project(route: OfrepRoute, ctx: RequestContext): number | Promise<number> {
    const fromHeader = bearer(ctx.headers.authorization);
    const apiKey = typeof ctx.headers['x-api-key'] === 'string' ? ctx.headers['x-api-key'].trim() : undefined;
    const token = [fromHeader, apiKey].find((value) => value?.startsWith('phc_'));
    const key = [fromHeader, apiKey].find((value) => value !== undefined && value !== '' && !value.startsWith('phc_'));
    let projectId: number | undefined;
    if (token !== undefined) {
      projectId = store.projectIdForToken(token);
      if (projectId === undefined) throw new ApiError(401, 'authentication_error', 'authentication_failed', 'No project of this sidecar has this project token.');
    } else if (store.projectIds().length === 1) projectId = store.projectIds()[0];
    if (projectId !== undefined && !keyRequired(projectId)) return projectId;
    if (key === undefined) {
      const detail =
        projectId === undefined
          ? 'This sidecar serves several projects: select one with its project token (Authorization: Bearer phc_… or X-API-Key: phc_…).'
          : 'This project requires an API key with feature_flag:read for OpenFeature (Authorization: Bearer <key>).';
      throw new ApiError(401, 'authentication_error', 'not_authenticated', detail);
    }
    // The key as the access layer reads it: from the Authorization header, where X-API-Key may have carried it.
    const keyed = fromHeader === key ? ctx : (Object.create(ctx, { headers: { value: { ...ctx.headers, authorization: `Bearer ${key}` } } }) as RequestContext);
    const authorized = access.authorize(route, 'local', keyed, projectId === undefined ? null : String(projectId));
    return authorized instanceof Promise ? authorized.then((a) => a.projectId as number) : (authorized.projectId as number);
  }

  /** The evaluation inputs of a body, and the /flags body upstream is asked with for what the snapshot lacks. */
  function queryOf(projectId: number, raw: Buffer, ctx: RequestContext, flagKeys: readonly string[] | null) {
    const context = ofrepContext(parseBody(raw));
    // A browser (by its User-Agent) gets the flags of the client runtime; any other caller every flag. Node's
    // fetch sends Sec-Fetch-Mode, which /flags would take for a browser: OFREP's server providers use fetch.
    const runtime = requestRuntime(undefined, { 'user-agent': ctx.headers['user-agent'] }) ?? 'all';
    const query: FlagsQuery = {
      distinctId: distinctIdOf(context.targetingKey),
      personProperties: context.personProperties,
      groups: context.groups,
      groupProperties: context.groupProperties,
      flagKeys,
      runtime,
      contexts: null,
    };
    const body: Record<string, unknown> = {
      token: store.get(projectId)?.token ?? undefined,
      distinct_id: query.distinctId,
      person_properties: context.personProperties,
      groups: context.groups,
      group_properties: context.groupProperties,
      evaluation_runtime: runtime,
    };
    return { query, body };
  }

  const flagLookup = (projectId: number) => {
    const defs = deps.definitions(projectId);
    return (key: string): CompiledFlag | undefined => defs?.byKey.get(key);
  };
  const quotaLimited = new OfrepError(500, 'GENERAL', 'PostHog reports this project quota-limited for feature flags: no values are served.');
  const sourceOf = (projectId: number): string => store.get(projectId)?.cohorts?.source ?? 'upstream';
  /** A 200 of one flag's JSON: jsonReply's headers and the source, in one object (no spreads per request). */
  const sourcedJson = (projectId: number, json: string): Reply => {
    const body = Buffer.from(json);
    return { status: 200, headers: { 'content-type': 'application/json', 'content-length': String(body.length), 'x-flag-sidecar-source': sourceOf(projectId) }, body };
  };

  async function evaluateFlag(ctx: RequestContext): Promise<Reply> {
    const flagKey = ctx.params[0] as string;
    const raw = await readBody(ctx.request, deps.maxBodyBytes);
    // Awaited only when a promise (a key checked, upstream asked): each await is a microtask turn of the request.
    const selected = project('ofrep_evaluate_flag', ctx);
    const projectId = typeof selected === 'number' ? selected : await selected;
    if (store.get(projectId)?.quotaBody) throw quotaLimited;
    const { query, body } = queryOf(projectId, raw, ctx, [flagKey]);
    const evaluation = deps.evaluate(projectId, body, query);
    const { decided, undecided, remote } = evaluation instanceof Promise ? await evaluation : evaluation;
    const flagOf = flagLookup(projectId);
    const local = decided[0];
    const fromUpstream = remote.details[0];
    const json = local ? decidedJson(local) : fromUpstream ? remoteJson(fromUpstream, flagOf)?.json : undefined;
    if (json !== undefined) return sourcedJson(projectId, json);
    // Not found: upstream answered without it; offline, the snapshot lacks it; or the snapshot holds it but does
    // not serve it to this caller (its evaluation runtime). Else upstream was needed and did not answer.
    // (Without a snapshot yet, every key went to upstream: only its answer can say a flag does not exist.)
    const snapshot = deps.definitions(projectId) !== null;
    const notFound = remote.missing.includes(flagKey) || (snapshot && ((!deps.online && flagOf(flagKey) === undefined) || !undecided.includes(flagKey)));
    if (notFound) throw new OfrepError(404, 'FLAG_NOT_FOUND', `No flag with key ${JSON.stringify(flagKey)} is served for this project.`);
    throw new OfrepError(500, 'GENERAL', 'The flag cannot be decided from the snapshot and upstream did not answer for it; try again.');
  }

  async function evaluateFlags(ctx: RequestContext): Promise<Reply> {
    const raw = await readBody(ctx.request, deps.maxBodyBytes);
    const selected = project('ofrep_evaluate_flags', ctx);
    const projectId = typeof selected === 'number' ? selected : await selected;
    if (store.get(projectId)?.quotaBody) throw quotaLimited;
    const { query, body } = queryOf(projectId, raw, ctx, null);
    const evaluation = deps.evaluate(projectId, body, query);
    const { decided, undecided, remote } = evaluation instanceof Promise ? await evaluation : evaluation;
    // Without a snapshot yet, every flag was upstream's to answer: a failed answer leaves nothing to list.
    if (deps.definitions(projectId) === null && remote.errors) throw new OfrepError(500, 'GENERAL', 'No flag definitions loaded yet and upstream did not answer; try again.');
    const flagOf = flagLookup(projectId);
    const parts = decided.map(decidedJson);
    const answered = new Set<string>();
    for (const fragment of remote.details) {
      const result = remoteJson(fragment, flagOf);
      if (result === null) continue;
      parts.push(result.json);
      answered.add(result.key);
    }
    for (const key of undecided) {
      if (!answered.has(key)) parts.push(failureJson('GENERAL', 'Cannot be decided from the snapshot and upstream did not answer for it.', key));
    }
    const text = `{"flags":[${parts.join(',')}]}`;
    const etag = `"${createHash('sha1').update(text).digest('base64url')}"`;
    const headers = { etag, 'cache-control': 'private, must-revalidate', 'x-flag-sidecar-source': sourceOf(projectId) };
    const ifNoneMatch = ctx.headers['if-none-match'];
    if (ifNoneMatch !== undefined && etagMatches(ifNoneMatch, etag.slice(1, -1))) return { status: 304, headers, body: null };
    return jsonReply(200, Buffer.from(text), headers);
  }

  const configurationBody = Buffer.from(
    JSON.stringify({
      name: 'flag-sidecar',
      capabilities: {
        cacheInvalidation: { polling: { enabled: true, minPollingIntervalMs: Math.min(deps.pollIntervalMs, 60_000) } },
        flagEvaluation: { supportedTypes: ['boolean', 'string', 'int', 'float'] },
        caching: { enabled: false },
      },
    }),
  );
  const configurationEtag = `"${createHash('sha1').update(configurationBody).digest('base64url')}"`;
  const configurationOk = reusableReply(200, { 'content-type': 'application/json', 'content-length': String(configurationBody.length), etag: configurationEtag }, configurationBody);
  const configurationSame = reusableReply(304, { etag: configurationEtag }, null);

  async function configuration(ctx: RequestContext): Promise<Reply> {
    const selected = project('ofrep_configuration', ctx);
    if (typeof selected !== 'number') await selected;
    const ifNoneMatch = ctx.headers['if-none-match'];
    return ifNoneMatch !== undefined && etagMatches(ifNoneMatch, configurationEtag.slice(1, -1)) ? configurationSame : configurationOk;
  }

  /** Every refusal in OFREP's shape (`key` on the single-flag route). */
  const handle =
    (run: (ctx: RequestContext) => Promise<Reply>, single: boolean) =>
    (ctx: RequestContext): Promise<Reply> =>
      run(ctx).catch((error: unknown) => {
        if (error instanceof OfrepError) return failure(error, single ? ctx.params[0] : undefined);
        if (error instanceof ApiError) return refusal(error);
        throw error;
      });

  return [
    { name: 'ofrep_evaluate_flags', methods: ['POST'], template: '/ofrep/v1/evaluate/flags', handler: handle(evaluateFlags, false) },
    { name: 'ofrep_evaluate_flag', methods: ['POST'], template: '/ofrep/v1/evaluate/flags/:key', handler: handle(evaluateFlag, true) },
    { name: 'ofrep_configuration', methods: ['GET'], template: '/ofrep/v1/configuration', handler: handle(configuration, false) },
  ];
}
