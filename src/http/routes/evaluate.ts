/**
 * Local evaluation served over HTTP:
 * - `POST /flags` (and `/decide`), the endpoint the official SDKs call when they evaluate remotely: the body's
 *   project token selects the project (no API key, as upstream); flags are evaluated from the compiled snapshot;
 *   those the SDK would find inconclusive (and requested keys the snapshot lacks) are asked of upstream's
 *   `/flags` in one call for just those keys and merged; when upstream cannot answer they are left out with
 *   `errorsWhileComputingFlags: true`, never guessed. The answer's shape follows `v` (and `/decide`) as upstream's
 *   (flags-response.ts answerShape). Bodies are read as upstream reads them (flags-decoding.ts): JSON,
 *   gzip, base64, form data.
 *   A token the sidecar does not serve is forwarded upstream whole (offline: upstream's 401).
 * - evaluation_reasons (op 15): answered locally when every flag is decided from the query (`distinct_id`,
 *   `groups`, and the sidecar's extensions `person_properties`, `group_properties`) and none only after an
 *   earlier condition it could not decide (the server, holding stored person properties, might match that one,
 *   with another condition index); else read through.
 */
import type { AbsentKeys } from '../../eval/absent-keys.js';
import type { CompiledDefinitions } from '../../eval/compile.js';
import { answerEvaluatedAt, answerShape, decideBody, evaluateQuery, freshStamp, legacyBody, reasonsBody, stampLength, v2Body, type Decided, type FlagsQuery } from '../../eval/flags-response.js';
import { noRemote, remotePart, type RemotePart } from '../../eval/remote-part.js';
import { ApiError, offline } from '../../errors.js';
import type { Metrics } from '../../metrics/metrics.js';
import type { Store } from '../../store/store.js';
import type { UpstreamClient } from '../../upstream/client.js';
import type { StaticCohorts } from '../../upstream/static-cohorts.js';
import { bytesDigest, maxKeptBodyBytes, type AnswerCache, type KeptAnswer } from '../answer-cache.js';
import { readBodyThen } from '../body.js';
import { decodeFlagsRequest } from '../flags-decoding.js';
import { bodyTooLargeText, missingDistinctId, noProjectToken, PlainTextError, plainTextReply, unknownProjectToken } from '../flags-service-errors.js';
import { responseFrom } from '../forward.js';
import { exceedsJsonDepth, maxApiJsonDepth } from '../json-depth.js';
import { jsonReply, type SplitReply } from '../respond.js';
import { later, type Handler, type Reply, type RequestContext, type Route } from '../router.js';
import type { LeftOutOffline } from '../offline-left-out.js';
import type { Access } from './access.js';

/** Dependencies of the evaluation routes. */
export interface EvaluationRouteDeps {
  readonly store: Store;
  /** The compiled definitions of a project's current snapshot, or null before it has one. */
  readonly definitions: (projectId: number) => CompiledDefinitions | null;
  readonly access: Access;
  /** null offline. */
  readonly upstream: UpstreamClient | null;
  /** Longest wait for upstream's answer on the undecided flags. */
  readonly upstreamTimeoutMs: number;
  readonly maxBodyBytes: number;
  readonly metrics: Metrics;
  readonly now: () => number;
  /** evaluation_reasons read through upstream (when not every flag is decided locally). */
  readonly readThroughReasons: Handler;
  /** Keys upstream answered absent, answered absent again without asking (absent-keys.ts). */
  readonly absentKeys: AbsentKeys;
  /** Static cohort members pulled from upstream (static-cohorts.ts); null offline. */
  readonly staticCohorts: StaticCohorts | null;
  /** Whole answers kept for bodies sent again (answer-cache.ts); null: off. */
  readonly answers: AnswerCache | null;
  /** Told the keys left out of an answer for want of an upstream (offline-left-out.ts); absent: nobody is. */
  readonly leftOutOffline?: LeftOutOffline;
}

/** One query evaluated: the flags decided from the snapshot, upstream's part, and when it was evaluated. */
export interface Evaluated {
  readonly decided: readonly Decided[];
  /** The keys the snapshot could not decide (asked of upstream). */
  readonly undecided: readonly string[];
  readonly remote: RemotePart;
  readonly nowMs: number;
  /**
   * Until when (ms since the epoch, inclusive) the same query gets the same flags while the definitions and the
   * static cohorts stay: -Infinity unless every flag was decided from the snapshot (nothing asked of upstream or
   * answered from memory of its answers); Infinity unless a filter relative to now was checked.
   */
  readonly validUntil: number;
}

/** The caller's body asking for just `keys`: one key list, under the SDKs' name (upstream refuses both names). */
function narrowed(body: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const { flag_keys: _flagKeys, ...rest } = body;
  return { ...rest, flag_keys_to_evaluate: keys };
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * An evaluation's 200 with the snapshot's source: jsonReply's headers and the source, in one object literal (one
 * shape for every answer). jsonReply's `{ ...json, ...extra }` cost ~11k instructions a request over HTTP: a
 * spread defining each property in the runtime, and a new shape node's header loop enumerated afresh.
 */
const sourcedReply = (body: Buffer, source: string): Reply => ({
  status: 200,
  headers: { 'content-type': 'application/json', 'content-length': String(body.length), 'x-flag-sidecar-source': source },
  body,
});

/** A kept answer's reply: sourcedReply's headers, its head and a fresh stamp written after it (no copy of the head). */
const keptReply = (head: Buffer, stamp: Buffer, source: string): SplitReply => ({
  status: 200,
  headers: { 'content-type': 'application/json', 'content-length': String(head.length + stamp.length), 'x-flag-sidecar-source': source },
  body: head,
  tail: stamp,
});

/** Object-valued fields, each group's properties an object too; anything else counts as absent. */
function groupPropertiesOf(value: unknown): Record<string, Record<string, unknown>> {
  if (!isObject(value)) return {};
  const all: Record<string, Record<string, unknown>> = {};
  for (const [name, properties] of Object.entries(value)) if (isObject(properties)) all[name] = properties;
  return all;
}

/** upstream keeps the first 200 characters (code points, as Rust's `chars()`) of a longer distinct_id. */
const maxDistinctIdLength = 200;
const firstCharacters = (text: string, count: number): string => (text.length <= count ? text : Array.from(text).slice(0, count).join(''));

/** A distinct id as upstream's flags service keeps it (its first 200 characters). */
export const distinctIdOf = (id: string): string => firstCharacters(id, maxDistinctIdLength);

const runtimes = new Set(['server', 'client', 'all']);
const browserMarks = ['Mozilla/', 'Chrome/', 'Safari/', 'Firefox/', 'Edge/'];
const serverPrefixes = ['posthog-python/', 'posthog-ruby/', 'posthog-php/', 'posthog-java/', 'posthog-go/', 'posthog-node/', 'posthog-dotnet/', 'posthog-elixir/'];
const mobilePrefixes = ['posthog-android/', 'posthog-ios/', 'posthog-react-native/', 'posthog-flutter/'];

/**
 * The caller's runtime as upstream's flags service decides it: `evaluation_runtime` when given (any case; an
 * unknown value means all), else the User-Agent (browsers and mobile SDKs: client; server SDKs, curl,
 * python-requests: server), else browser-only headers (client), else unknown.
 */
export function requestRuntime(explicit: unknown, headers: RequestContext['headers']): FlagsQuery['runtime'] {
  if (typeof explicit === 'string') {
    const runtime = explicit.toLowerCase();
    return runtimes.has(runtime) ? (runtime as 'server' | 'client' | 'all') : 'all';
  }
  const agent = headers['user-agent'];
  if (agent !== undefined) {
    if (browserMarks.some((mark) => agent.includes(mark))) return 'client';
    if (serverPrefixes.some((prefix) => agent.startsWith(prefix)) || agent.includes('python-requests/') || agent.includes('curl/')) return 'server';
    if (mobilePrefixes.some((prefix) => agent.startsWith(prefix))) return 'client';
  }
  if (headers.origin !== undefined || headers.referer !== undefined || headers['sec-fetch-mode'] !== undefined || headers['sec-fetch-site'] !== undefined) return 'client';
  return null;
}

const stringList = (value: unknown): string[] | null => (Array.isArray(value) ? value.filter((k): k is string => typeof k === 'string') : null);

/**
 * The evaluation inputs of a /flags body (fields and aliases as upstream reads them: serde, the field itself
 * first); no distinct_id is its 400. Each field read where it is named: one helper reading every name was a
 * megamorphic keyed load.
 */
function flagsQuery(body: Record<string, unknown>, headers: RequestContext['headers']): FlagsQuery {
  const id = body.distinct_id ?? body.$distinct_id;
  if (typeof id !== 'string' && typeof id !== 'number') {
    throw missingDistinctId();
  }
  const given = body.person_properties ?? body.$properties;
  const person = isObject(given) ? given : {};
  // A top-level device_id (posthog-js sends `$device_id` there) is the one used for device bucketing, as upstream.
  const deviceId = body.device_id ?? body.$device_id;
  const personProperties = typeof deviceId === 'string' && deviceId !== '' ? { ...person, $device_id: deviceId } : person;
  const groups = body.groups ?? body.$groups;
  return {
    distinctId: distinctIdOf(String(id)),
    personProperties,
    groups: isObject(groups) ? groups : {},
    groupProperties: groupPropertiesOf(body.group_properties ?? body.$group_properties),
    flagKeys: stringList(body.flag_keys ?? body.flag_keys_to_evaluate),
    runtime: requestRuntime(body.evaluation_runtime, headers),
    contexts: stringList(body.evaluation_contexts ?? body.evaluation_environments),
    // With an anonymous id upstream writes hash-key overrides for continuity flags: those stay upstream's to answer.
    decideContinuity: (body.anon_distinct_id ?? body.$anon_distinct_id) == null,
  };
}

/** The evaluation routes (/flags, /decide) and the evaluation_reasons handler. */
export function createEvaluationRoutes(deps: EvaluationRouteDeps) {
  const { store, upstream, metrics, answers } = deps;
  const answerLookups = metrics.cacheLookups.of('flags_answer');

  /** One upstream /flags call for `keys` (null: all of them); never throws. */
  async function askUpstream(body: Record<string, unknown>, keys: readonly string[] | null): Promise<RemotePart> {
    if (upstream === null) return noRemote(true);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), deps.upstreamTimeoutMs);
    try {
      const result = await upstream.request({
        operation: 'flags',
        method: 'POST',
        path: '/flags/?v=2',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(keys === null ? body : narrowed(body, keys)),
        signal: controller.signal,
      });
      if (result.kind !== 'response' || result.status < 200 || result.status >= 300) return noRemote(true);
      return remotePart(result.body, keys);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Evaluate `query` for a project: from its compiled snapshot, the flags it cannot decide (and requested keys it
   * lacks) asked of upstream's /flags in one call with `body` narrowed to them; counted in the metrics. Never
   * guesses: what neither decides is left out, `remote.errors` set. A promise only when upstream is asked (the
   * /flags hot path answers without one).
   */
  function evaluate(projectId: number, body: Record<string, unknown>, given: FlagsQuery): Evaluated | Promise<Evaluated> {
    const defs = deps.definitions(projectId);
    // Field by field: a spread and then a property (`{ ...given, staticCohorts }`) was defined in V8's runtime,
    // ~5.5k instructions a request over HTTP.
    const query: FlagsQuery = {
      distinctId: given.distinctId,
      personProperties: given.personProperties,
      groups: given.groups,
      groupProperties: given.groupProperties,
      flagKeys: given.flagKeys,
      runtime: given.runtime,
      contexts: given.contexts,
      decideContinuity: given.decideContinuity,
      staticCohorts: deps.staticCohorts?.membership(projectId),
    };
    const nowMs = deps.now();
    if (defs === null) {
      const none = { decided: [], undecided: [], partial: false };
      return askUpstream(body, query.flagKeys === null ? null : [...new Set(query.flagKeys)]).then((remote) => counted(defs, none, remote, 0, nowMs, -Infinity));
    }
    const evaluated = evaluateQuery(defs, query, nowMs);
    const ask = evaluated.undecided.filter((key) => defs.byKey.has(key) || !deps.absentKeys.has(defs, query, key, nowMs));
    /** Requested keys upstream answered absent a moment ago: absent again, without asking (absent-keys.ts). */
    const knownAbsent = evaluated.undecided.length - ask.length;
    const local = { decided: evaluated.decided, undecided: ask, partial: evaluated.partial };
    const settle = (remote: RemotePart): Evaluated => {
      if (!remote.errors) deps.absentKeys.remember(defs, query, remote.missing.filter((key) => !defs.byKey.has(key)), nowMs);
      return counted(defs, local, remote, knownAbsent, nowMs, evaluated.undecided.length === 0 ? evaluated.validUntil : -Infinity);
    };
    if (ask.length > 0 && upstream === null) deps.leftOutOffline?.(projectId, defs === null ? [] : ask.filter((key) => defs.byKey.has(key)));
    return ask.length > 0 ? askUpstream(body, ask).then(settle) : settle(noRemote(false));
  }

  /** The answer of evaluate once upstream's part is known, counted in the metrics. */
  function counted(
    defs: CompiledDefinitions | null,
    local: { readonly decided: readonly Decided[]; readonly undecided: readonly string[] },
    given: RemotePart,
    knownAbsent: number,
    nowMs: number,
    validUntil: number,
  ): Evaluated {
    let remote = given;
    // A key upstream left out is its answer (absent), unless the definitions hold it: then it is an error.
    const held = remote.missing.filter((key) => defs?.byKey.has(key) === true).length;
    if (held > 0) remote = { ...remote, errors: true };
    const answeredUpstream = remote.details.length + remote.missing.length - held;
    metrics.flagEvaluations.add('local', local.decided.length + knownAbsent);
    if (answeredUpstream > 0) metrics.flagEvaluations.add('upstream', answeredUpstream);
    const unresolved = local.undecided.length - answeredUpstream;
    if (unresolved > 0) metrics.flagEvaluations.add('unresolved', unresolved);
    return { decided: local.decided, undecided: local.undecided, remote, nowMs, validUntil };
  }

  async function forwardWhole(ctx: RequestContext, raw: Buffer): Promise<Reply> {
    if (upstream === null) throw unknownProjectToken();
    const headers: Record<string, string> = { 'content-type': ctx.headers['content-type'] ?? 'application/json' };
    const encoding = ctx.headers['content-encoding'];
    if (encoding) headers['content-encoding'] = encoding;
    const result = await upstream.request({
      operation: 'flags',
      method: 'POST',
      path: ctx.rawQuery === '' ? ctx.path : `${ctx.path}?${ctx.rawQuery}`,
      headers,
      body: raw,
    });
    const response = responseFrom(result);
    return { status: response.status, headers: response.headers, body: response.body };
  }

  /**
   * `/flags` and `/decide`: answered from the body's callback, with no promise in between unless the answer waits
   * (a gzip body, upstream). As a promise chain (readBody, three async functions, the router's `then`) it cost
   * more instructions than the whole answer's assembly at 30 flags.
   */
  function flagsRoute(ctx: RequestContext): typeof later {
    // As readBody: a stream error before the body is whole is the answer (the socket is gone: nothing is written).
    let read = false;
    ctx.request.on('error', (error: Error) => {
      if (read) return;
      read = true;
      ctx.answerError(error);
    });
    readBodyThen(ctx.request, deps.maxBodyBytes, (error, raw) => {
      if (read) return;
      read = true;
      if (error !== null) answerFlags(ctx, () => {
        throw error instanceof ApiError && error.status === 413 ? bodyTooLargeText() : error;
      });
      else answerFlags(ctx, () => evaluateFlags(ctx, raw as Buffer));
    });
    return later;
  }

  /** Answer with what `run` gives; a PlainTextError (thrown, or the promise's) is the flags service's plain text. */
  function answerFlags(ctx: RequestContext, run: () => Reply | Promise<Reply>): void {
    let reply: Reply | Promise<Reply>;
    try {
      reply = run();
    } catch (error) {
      if (error instanceof PlainTextError) ctx.answer(plainTextReply(error));
      else ctx.answerError(error);
      return;
    }
    ctx.answer(reply instanceof Promise ? reply.catch(plainText) : reply);
  }

  const plainText = (error: unknown): Reply => {
    if (error instanceof PlainTextError) return plainTextReply(error);
    throw error;
  };

  function evaluateFlags(ctx: RequestContext, raw: Buffer): Reply | Promise<Reply> {
    // A body sent again byte for byte may get its kept answer (answer-cache.ts); not a gzip one.
    const digest = answers !== null && raw.length <= maxKeptBodyBytes && ctx.headers['content-encoding'] === undefined ? bytesDigest(raw) : null;
    if (digest !== null) {
      const kept = keptAnswer(ctx, raw, digest);
      if (kept !== null) return kept;
    }
    const hints = { contentType: ctx.headers['content-type'], contentEncoding: ctx.headers['content-encoding'], compression: ctx.query.get('compression') };
    const body = decodeFlagsRequest(raw, hints, deps.maxBodyBytes);
    return body instanceof Promise ? body.then((decoded) => answerBody(ctx, raw, decoded, null)) : answerBody(ctx, raw, body, digest);
  }

  /** The answer kept for a body sent again, with a fresh stamp, when it still holds; else null (evaluate afresh). */
  function keptAnswer(ctx: RequestContext, raw: Buffer, digest: number): Reply | null {
    const kept = (answers as AnswerCache).get(digest, raw);
    if (kept === undefined) {
      answerLookups.miss += 1;
      return null;
    }
    const nowMs = deps.now();
    if (kept.path !== ctx.path || kept.rawQuery !== ctx.rawQuery || !(nowMs >= kept.validFrom && nowMs <= kept.validUntil) || !stillHolds(kept, ctx)) {
      // Evaluated afresh (and kept again if it can be); until then nothing stale is held.
      (answers as AnswerCache).drop(digest, raw);
      answerLookups.miss += 1;
      return null;
    }
    answerLookups.hit += 1;
    metrics.flagEvaluations.add('local', kept.decided);
    const project = store.get(kept.projectId);
    return keptReply(kept.head, freshStamp(Math.floor(nowMs), kept.minimal), project?.cohorts?.source ?? 'upstream');
  }

  /** The project, its definitions, its static cohorts, its quota and the caller's runtime are what they were. */
  function stillHolds(kept: KeptAnswer, ctx: RequestContext): boolean {
    const { projectId } = kept;
    return (
      store.projectIdForToken(kept.token) === projectId &&
      deps.definitions(projectId) === kept.defs.deref() &&
      (deps.staticCohorts?.membership(projectId) ?? null) === (kept.membership?.deref() ?? null) &&
      !store.get(projectId)?.quotaBody &&
      (kept.headerRuntime === undefined || requestRuntime(undefined, ctx.headers) === kept.headerRuntime)
    );
  }

  /**
   * Offer a reusable answer to the answer cache: its bytes before the stamp, copied out of the body's slab. The
   * entry (its copy, its weak references) is made only when the cache takes it: most first sights never are.
   */
  function keep(raw: Buffer, digest: number, ctx: RequestContext, kept: Omit<KeptAnswer, 'head' | 'path' | 'rawQuery' | 'defs' | 'membership'>, defs: CompiledDefinitions, body: Buffer): void {
    const headLength = body.length - stampLength(Math.floor(kept.validFrom), kept.minimal);
    // The head ends with `"requestId":` (flags-response.ts); anything else is no answer to reuse.
    if (headLength <= 0 || body[headLength - 1] !== 0x3a) return;
    (answers as AnswerCache).offer(digest, raw, () => {
      const head = Buffer.allocUnsafeSlow(headLength);
      body.copy(head, 0, 0, headLength);
      const membership = deps.staticCohorts?.membership(kept.projectId);
      return { ...kept, defs: new WeakRef(defs), membership: membership === undefined ? null : new WeakRef(membership), path: ctx.path, rawQuery: ctx.rawQuery, head };
    });
  }

  function answerBody(ctx: RequestContext, raw: Buffer, body: Record<string, unknown>, digest: number | null): Reply | Promise<Reply> {
    const given = body.token ?? body.$token ?? body.api_key ?? ctx.query.get('token') ?? ctx.query.get('api_key');
    const token = typeof given === 'string' ? given.trim() : '';
    if (token === '') throw noProjectToken();
    const projectId = store.projectIdForToken(token);
    if (projectId === undefined) return forwardWhole(ctx, raw);
    // The shape as upstream's service picks it (/decide: its legacy decide shapes).
    const shape = answerShape(ctx.path.startsWith('/decide'), ctx.query.get('v'), ctx.query.get('config'));
    const v2 = shape === 'v2';
    const project = store.get(projectId);
    const defs = deps.definitions(projectId);
    // Every body carries `evaluatedAt`, as upstream's: the SDKs put it in `$feature_flag_evaluated_at`. Slim flag
    // events when the snapshot (or upstream's part of the answer) says the project opted in, as upstream's v2 says.
    const answer = (decided: readonly Decided[], remote: RemotePart, nowMs: number): Buffer => {
      const minimalFlagCalledEvents = defs?.minimalFlagCalledEvents === true || remote.minimalFlagCalledEvents;
      // requestId null: a fresh random UUID v4, written into the body (the answer is its only user).
      const stamp = { requestId: null, evaluatedAt: answerEvaluatedAt(decided, remote, nowMs), minimalFlagCalledEvents };
      if (shape === 'decideV1' || shape === 'decideV2') return decideBody(shape === 'decideV1' ? 1 : 2, decided, remote, stamp);
      return v2 ? v2Body(decided, remote, stamp) : legacyBody(decided, remote, stamp);
    };
    if (project?.quotaBody) {
      const quota: RemotePart = { ...noRemote(false), quotaLimited: ['feature_flags'] };
      return jsonReply(200, answer([], quota, deps.now()));
    }
    // evaluate adds the static cohorts' membership.
    const query: FlagsQuery = flagsQuery(body, ctx.headers);
    if (body.disable_flags === true) return jsonReply(200, answer([], noRemote(false), deps.now()));
    const runtimeNamed = typeof body.evaluation_runtime === 'string';
    // What upstream is asked for the undecided flags: the caller's runtime made explicit, as ours is not the caller's.
    if (query.runtime !== null && !runtimeNamed) body.evaluation_runtime = query.runtime;
    const reply = ({ decided, remote, nowMs }: Evaluated): Reply => sourcedReply(answer(decided, remote, nowMs), project?.cohorts?.source ?? 'upstream');
    const evaluated = evaluate(projectId, body, query);
    if (evaluated instanceof Promise) return evaluated.then(reply);
    const replied = reply(evaluated);
    if (digest !== null && evaluated.validUntil > evaluated.nowMs && defs !== null) {
      // Reusable: nothing from upstream, so the stamp is the sidecar's (answerEvaluatedAt) and the opt-in the snapshot's.
      const fields = {
        token,
        projectId,
        headerRuntime: runtimeNamed || !defs.limited ? undefined : query.runtime,
        minimal: v2 && defs.minimalFlagCalledEvents,
        decided: evaluated.decided.length,
        validFrom: evaluated.nowMs,
        validUntil: evaluated.validUntil,
      };
      keep(raw, digest, ctx, fields, defs, replied.body as Buffer);
    }
    return replied;
  }

  /** A JSON object in a query parameter (absent: `{}`); anything else is upstream's 400. */
  function jsonParam(ctx: RequestContext, name: string): Record<string, unknown> {
    const text = ctx.query.get(name);
    if (text === undefined || text === '') return {};
    let value: unknown;
    try {
      // Deeper than the /api routes accept is no object the evaluator will walk.
      value = exceedsJsonDepth(text, maxApiJsonDepth) ? undefined : JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (!isObject(value)) throw new ApiError(400, 'validation_error', 'invalid_input', `${name} must be a JSON object`, name);
    return value;
  }

  async function evaluationReasons(ctx: RequestContext): Promise<Reply> {
    const { projectId } = await deps.access.authorize('flag_evaluation_reasons', 'local', ctx, ctx.params[0] ?? null);
    const distinctId = ctx.query.get('distinct_id');
    if (!distinctId) throw new ApiError(400, 'validation_error', 'invalid_input', 'distinct_id is required');
    const query: FlagsQuery = {
      distinctId,
      groups: jsonParam(ctx, 'groups'),
      personProperties: jsonParam(ctx, 'person_properties'),
      groupProperties: groupPropertiesOf(jsonParam(ctx, 'group_properties')),
      flagKeys: null,
      runtime: 'all',
      contexts: null,
      // Django's evaluation_reasons lists every inactive flag as "disabled" (posthog/api/feature_flag.py).
      listInactive: true,
    };
    const defs = projectId === null ? null : deps.definitions(projectId);
    if (defs !== null) {
      const local = evaluateQuery(defs, query, deps.now());
      // Partial answers follow the SDK on /flags; here the caller asks for the server's reasons, so they read through.
      if (local.undecided.length === 0 && !local.partial) {
        metrics.flagEvaluations.add('local', local.decided.length);
        return sourcedReply(reasonsBody(local.decided), store.get(projectId as number)?.cohorts?.source ?? 'upstream');
      }
    }
    if (upstream === null) throw offline();
    return deps.readThroughReasons(ctx);
  }

  const routes: Route[] = [
    { name: 'flags_evaluate', methods: ['POST'], template: '/flags', handler: flagsRoute },
    { name: 'decide_evaluate', methods: ['POST'], template: '/decide', handler: flagsRoute },
  ];
  return { routes, evaluationReasons: (ctx: RequestContext) => evaluationReasons(ctx), evaluate };
}
