import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);
import {
  createVariant,
  emptyProject,
  parseDefinitionsText,
  validateDefinitions,
  withChanges
} from "./chunk-YXIUFDAM.js";

// src/errors.ts
var ApiError = class extends Error {
  constructor(status, type, code, detail, attr = null, headers = null) {
    super(detail);
    this.status = status;
    this.type = type;
    this.code = code;
    this.detail = detail;
    this.attr = attr;
    this.headers = headers;
    this.name = "ApiError";
  }
  status;
  type;
  code;
  detail;
  attr;
  headers;
  /** The auth denial reason when auth/authenticate.ts `deny` threw it (the access log's reason), else null. */
  denial = null;
  /** Upstream's JSON body for this error, key order as upstream renders it. */
  body() {
    return Buffer.from(
      JSON.stringify({ type: this.type, code: this.code, detail: this.detail, attr: this.attr })
    );
  }
};
var VerifierBusyError = class extends ApiError {
  constructor(retryAfterSeconds) {
    const wait = `${retryAfterSeconds} second${retryAfterSeconds === 1 ? "" : "s"}`;
    super(
      429,
      "throttled_error",
      "throttled",
      `Request was throttled: too many API keys are being verified at once. Expected available in ${wait}.`,
      null,
      { "retry-after": String(retryAfterSeconds) }
    );
    this.retryAfterSeconds = retryAfterSeconds;
    this.name = "VerifierBusyError";
  }
  retryAfterSeconds;
};
var ConfigError = class extends Error {
  constructor(problems) {
    super(`invalid configuration:
  - ${problems.join("\n  - ")}`);
    this.problems = problems;
    this.name = "ConfigError";
  }
  problems;
};
var SnapshotFileError = class extends Error {
  constructor(file, message) {
    super(`${file}: ${message}`);
    this.file = file;
    this.name = "SnapshotFileError";
  }
  file;
};
var notAuthenticated = () => new ApiError(401, "authentication_error", "not_authenticated", "Authentication credentials were not provided.");
var keySourceText = {
  header: "Authorization header",
  query: "query string",
  body: "request body"
};
var invalidPersonalKey = (source) => new ApiError(
  401,
  "authentication_error",
  "authentication_failed",
  `Personal API key found in request ${keySourceText[source]} is invalid.`
);
var invalidAccessToken = () => new ApiError(401, "authentication_error", "authentication_failed", "Invalid access token.");
var incorrectCredentials = () => new ApiError(401, "authentication_error", "authentication_failed", "Incorrect authentication credentials.");
var missingScope = (scope) => new ApiError(403, "authentication_error", "permission_denied", `API key missing required scope '${scope}'`);
var projectNotInKeyScope = (projectId) => new ApiError(
  403,
  "authentication_error",
  "permission_denied",
  `API key does not have access to the requested project: ID ${projectId}.`
);
var personalKeyNotSupported = () => new ApiError(403, "authentication_error", "permission_denied", "This action does not support Personal API Key access");
var permissionDenied = () => new ApiError(403, "authentication_error", "permission_denied", "You do not have permission to perform this action.");
var projectNotFound = () => new ApiError(404, "invalid_request", "not_found", "Project not found.");
var notFound = () => new ApiError(404, "invalid_request", "not_found", "Not found.");
var methodNotAllowed = (method) => new ApiError(405, "invalid_request", "method_not_allowed", `Method "${method}" not allowed.`);
var serverError = () => new ApiError(500, "server_error", "error", "A server error occurred.");
var unavailable = (detail) => new ApiError(503, "server_error", "service_unavailable", detail);
var shuttingDown = () => unavailable("The sidecar is shutting down and took no action on this request; send it again.");
var bodyTooLarge = (limit) => new ApiError(413, "invalid_request", "request_too_large", `Request body is larger than the ${limit} bytes accepted.`);
var parseError = (reason) => new ApiError(400, "invalid_request", "parse_error", `JSON parse error - ${reason}`);
function upstreamFailure(cause) {
  if (cause === "timeout") return new ApiError(504, "server_error", "upstream_timeout", "Upstream did not answer in time (timeout).");
  const what = {
    connect: "could not be reached (connect)",
    reset: "closed the connection (reset)",
    too_large: "sent a response above the size limit (too_large)",
    aborted: "request was aborted (aborted)",
    other: "request failed (other)"
  };
  return new ApiError(502, "server_error", "upstream_unavailable", `Upstream ${what[cause]}.`);
}
var offline = () => unavailable("This operation needs upstream, and the sidecar runs offline (no FLAG_SIDECAR_UPSTREAM_URL).");

// src/store/persist.ts
import { mkdir, open, readdir, readFile, rename, stat, unlink } from "node:fs/promises";
import { join } from "node:path";

// src/store/snapshot-file.ts
import { createHash } from "node:crypto";
var formatVersion = 1;
var isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
var loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
var sha256 = (data) => createHash("sha256").update(data).digest("hex");
function parseTime(value, fallback, fail, where) {
  if (value === void 0 || value === null) return fallback;
  const at = typeof value === "string" ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(at)) fail(`${where}.fetched_at is not an ISO date`);
  return at;
}
function variantFromValue(value, fetchedAt, options, fail, where) {
  const checked = validateDefinitions(value);
  if (!checked.ok) fail(`${where}: ${checked.error}`);
  const body = Buffer.from(JSON.stringify(value));
  return createVariant({ body, definitions: checked.value, upstreamEtag: null, fetchedAt, source: options.source });
}
function variantFromRecord(value, options, fail, where) {
  if (!isObject(value) || typeof value.body !== "string") fail(`${where} has no "body" string`);
  const body = Buffer.from(value.body, "utf8");
  if (typeof value.sha256 === "string" && value.sha256 !== sha256(body)) fail(`${where}: body does not match its sha256 (corrupt file)`);
  if (loneSurrogate.test(value.body)) fail(`${where}: body is not valid UTF-8 text (a lone surrogate)`);
  const parsed = parseDefinitionsText(value.body);
  if (!parsed.ok) fail(`${where}: ${parsed.error}`);
  const upstreamEtag = value.upstream_etag;
  if (upstreamEtag !== void 0 && upstreamEtag !== null && typeof upstreamEtag !== "string") fail(`${where}.upstream_etag is not a string`);
  const servedEtag = value.served_etag;
  if (servedEtag !== void 0 && servedEtag !== null && typeof servedEtag !== "string") fail(`${where}.served_etag is not a string`);
  return createVariant({
    body,
    definitions: parsed.value,
    upstreamEtag: upstreamEtag ?? null,
    servedEtag: servedEtag ?? null,
    fetchedAt: parseTime(value.fetched_at, options.mtimeMs, fail, where),
    source: options.source
  });
}
function projectFromEntry(entry, index, options, fail) {
  const where = `projects[${index}]`;
  if (!isObject(entry)) fail(`${where} is not an object`);
  const id = entry.project_id;
  if (typeof id !== "number" || !Number.isInteger(id) || id < 1) fail(`${where}.project_id is not a positive integer`);
  const token = entry.token ?? null;
  if (token !== null && (typeof token !== "string" || !token.startsWith("phc_"))) fail(`${where}.token is not a phc_ token`);
  const fetchedAt = parseTime(entry.fetched_at, options.mtimeMs, fail, where);
  const variants = {};
  if (entry.variants !== void 0) {
    if (!isObject(entry.variants)) fail(`${where}.variants is not an object`);
    for (const name of ["cohorts", "plain"]) {
      const record = entry.variants[name];
      if (record !== void 0 && record !== null) variants[name] = variantFromRecord(record, options, fail, `${where}.variants.${name}`);
    }
  }
  if (entry.local_evaluation !== void 0) {
    if (variants.cohorts) fail(`${where} has both "variants" and "local_evaluation"`);
    variants.cohorts = variantFromValue(entry.local_evaluation, fetchedAt, options, fail, `${where}.local_evaluation`);
  }
  if (entry.local_evaluation_without_cohorts !== void 0) {
    if (variants.plain) fail(`${where} has both "variants.plain" and "local_evaluation_without_cohorts"`);
    variants.plain = variantFromValue(entry.local_evaluation_without_cohorts, fetchedAt, options, fail, `${where}.local_evaluation_without_cohorts`);
  }
  if (!variants.cohorts) fail(`${where} has no local_evaluation body (with cohorts)`);
  return withChanges(emptyProject(id, token), {
    cohorts: variants.cohorts,
    plain: variants.plain ?? null,
    plainWanted: entry.plain_wanted === true || variants.plain !== void 0
  });
}
function parseSnapshotFile(text, options) {
  const fail = (message) => {
    throw new SnapshotFileError(options.file, message);
  };
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return fail(`not valid JSON (truncated or corrupt?): ${error.message}`);
  }
  if (!isObject(value)) return fail("not a JSON object");
  if (Array.isArray(value.flags)) {
    if (options.bareProjectId === null) {
      return fail("a bare local_evaluation body needs exactly one project in FLAG_SIDECAR_PROJECTS to say whose it is");
    }
    const body = Buffer.from(text, "utf8");
    const checked = validateDefinitions(value);
    if (!checked.ok) return fail(checked.error);
    const cohorts = createVariant({ body, definitions: checked.value, upstreamEtag: null, fetchedAt: options.mtimeMs, source: options.source });
    return [withChanges(emptyProject(options.bareProjectId, null), { cohorts })];
  }
  if (value.flag_sidecar_snapshot !== formatVersion) {
    return fail(`neither a local_evaluation body nor a snapshot file ("flag_sidecar_snapshot": ${formatVersion})`);
  }
  if (!Array.isArray(value.projects) || value.projects.length === 0) return fail('"projects" is not a non-empty array');
  const projects = value.projects.map((entry, index) => projectFromEntry(entry, index, options, fail));
  const ids = new Set(projects.map((p) => p.projectId));
  if (ids.size !== projects.length) fail("a project is listed twice");
  return projects;
}
function variantRecord(variant) {
  return {
    fetched_at: new Date(variant.fetchedAt).toISOString(),
    upstream_etag: variant.upstreamEtag,
    ...variant.servedEtag === null ? {} : { served_etag: variant.servedEtag },
    sha256: sha256(variant.body),
    body: variant.body.toString("utf8")
  };
}
function projectRecord(project) {
  const variants = {};
  if (project.cohorts) variants.cohorts = variantRecord(project.cohorts);
  if (project.plain) variants.plain = variantRecord(project.plain);
  return { project_id: project.projectId, token: project.token, plain_wanted: project.plainWanted, variants };
}
function serializeSnapshotFile(projects, now) {
  return `${JSON.stringify({ flag_sidecar_snapshot: formatVersion, written_at: new Date(now).toISOString(), projects: projects.map(projectRecord) }, null, 1)}
`;
}
var serializeProjectFile = (project, now) => serializeSnapshotFile([project], now);

// src/store/persist.ts
function persistRetryDelay(failures, minMs, maxMs) {
  const first = Math.min(minMs, maxMs);
  return Math.min(maxMs, first * 2 ** Math.min(30, Math.max(0, failures - 1)));
}
var fileName = (projectId) => `project-${projectId}.json`;
var filePattern = /^project-(\d+)\.json$/;
async function writeFileAtomic(path, data) {
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  try {
    const handle = await open(tmp, "w", 384);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, path);
  } catch (error) {
    await unlink(tmp).catch(() => void 0);
    throw error;
  }
  const dir = await open(join(path, ".."), "r").catch(() => null);
  if (dir) await dir.sync().catch(() => void 0).finally(() => dir.close());
}
function createPersistence(deps) {
  const { dir, logger, metrics, now } = deps;
  const write = deps.write ?? writeFileAtomic;
  const retryMaxMs = deps.retryMaxMs ?? 3e4;
  const retryMinMs = deps.retryMinMs ?? 2e3;
  const pending = /* @__PURE__ */ new Map();
  const running = /* @__PURE__ */ new Map();
  const retries = /* @__PURE__ */ new Map();
  const states = /* @__PURE__ */ new Map();
  let closed = false;
  const stateOf = (projectId) => {
    let state = states.get(projectId);
    if (state === void 0) {
      state = { lastSuccessAt: null, lastError: null, failures: 0 };
      states.set(projectId, state);
    }
    return state;
  };
  function clearRetry(projectId) {
    clearTimeout(retries.get(projectId)?.timer);
    retries.delete(projectId);
  }
  function succeeded(projectId) {
    const state = stateOf(projectId);
    if (state.failures > 0) logger.info({ project: projectId, dir, failures: state.failures }, "snapshot persisted again");
    state.lastSuccessAt = now();
    state.failures = 0;
    if (!pending.has(projectId)) clearRetry(projectId);
  }
  function failed(projectId, error) {
    const state = stateOf(projectId);
    const message = error instanceof Error ? error.message : String(error);
    state.failures += 1;
    state.lastError = { message, at: now() };
    metrics.persistFailures.inc({ project: String(projectId) });
    const retryInMs = persistRetryDelay(state.failures, retryMinMs, retryMaxMs);
    logger.error({ project: projectId, dir, err: message, failures: state.failures, retryInMs: closed ? null : retryInMs }, "could not persist snapshot");
    clearRetry(projectId);
    if (closed) return;
    const timer = setTimeout(() => {
      retries.delete(projectId);
      kick(projectId);
    }, retryInMs);
    timer.unref();
    retries.set(projectId, { timer, at: now() + retryInMs });
  }
  async function drain(projectId) {
    for (; ; ) {
      const next = pending.get(projectId);
      if (next === void 0) {
        running.delete(projectId);
        return;
      }
      pending.delete(projectId);
      try {
        await mkdir(dir, { recursive: true });
        await write(join(dir, fileName(projectId)), serializeProjectFile(next, now()));
        succeeded(projectId);
      } catch (error) {
        if (!pending.has(projectId)) pending.set(projectId, next);
        running.delete(projectId);
        return failed(projectId, error);
      }
    }
  }
  function kick(projectId) {
    let run = running.get(projectId);
    if (run === void 0) {
      run = drain(projectId);
      running.set(projectId, run);
    }
    return run;
  }
  async function flush() {
    for (const projectId of [...retries.keys()]) {
      clearRetry(projectId);
      void kick(projectId);
    }
    while (running.size > 0) await Promise.all(running.values());
  }
  return {
    /** Queue `project` to be written; resolves when it (or a newer one) is on disk or has failed. Never rejects. */
    save(project) {
      pending.set(project.projectId, project);
      return kick(project.projectId);
    },
    /** Write every queued snapshot now (failed ones get one more try at once) and wait for them. */
    flush,
    /** Flush, then stop retrying (at shutdown): what still fails stays unwritten and is logged. */
    async close() {
      closed = true;
      await flush();
      for (const projectId of [...retries.keys()]) clearRetry(projectId);
    },
    /** Persistence state of a project (all null and false before its first write). */
    status(projectId) {
      const state = states.get(projectId);
      return {
        lastSuccessAt: state?.lastSuccessAt ?? null,
        lastError: state?.lastError ?? null,
        consecutiveFailures: state?.failures ?? 0,
        pending: pending.has(projectId) || running.has(projectId),
        nextRetryAt: retries.get(projectId)?.at ?? null
      };
    },
    /**
     * Read every project file of the directory (only `only`'s projects when given); bad files are skipped, and so
     * is a file whose project has a token other than the one configured for that id in `tokens` (another
     * project's data: a directory reused across upstreams or organizations).
     */
    async loadAll(only, tokens = /* @__PURE__ */ new Map()) {
      const names = await readdir(dir).catch((error) => {
        if (error.code !== "ENOENT") logger.warn({ dir, err: error.message }, "cannot read snapshot dir");
        return [];
      });
      const loaded = [];
      for (const name of names.sort()) {
        if (name.includes(".tmp-")) {
          await unlink(join(dir, name)).catch(() => void 0);
          continue;
        }
        const id = Number(filePattern.exec(name)?.[1] ?? Number.NaN);
        if (Number.isNaN(id) || only !== null && !only.has(id)) continue;
        const file = join(dir, name);
        try {
          const [text, info] = await Promise.all([readFile(file, "utf8"), stat(file)]);
          const projects = parseSnapshotFile(text, { file, source: "disk", bareProjectId: id, mtimeMs: info.mtimeMs });
          const project = projects.find((p) => p.projectId === id);
          if (!project || projects.length !== 1) throw new Error(`${file}: does not hold exactly project ${id}`);
          const expected = tokens.get(id);
          if (expected !== void 0 && project.token !== null && project.token !== expected) {
            throw new Error(`${file}: holds the project with token ${project.token.slice(0, 8)}\u2026, not the configured ${expected.slice(0, 8)}\u2026`);
          }
          loaded.push(project);
          metrics.snapshotLoads.inc({ source: "disk", outcome: "loaded" });
        } catch (error) {
          metrics.snapshotLoads.inc({ source: "disk", outcome: "rejected" });
          logger.warn({ file, err: error.message }, "ignoring unusable persisted snapshot");
        }
      }
      return loaded;
    }
  };
}

// src/config/redact.ts
var keyShaped = /ph[a-bd-z]_[A-Za-z0-9_-]+/g;
var urlCredentials = /\/\/[^/@\s"]*@/g;
function redactSecrets(text, secrets) {
  let out = text;
  for (const secret of secrets) {
    const value = secret.trim();
    if (value.length >= 4) out = out.split(value).join("[redacted]");
  }
  return out.replace(keyShaped, "[redacted key]").replace(urlCredentials, "//[redacted]@");
}

// src/upstream/error-body.ts
var scanBytes = 4096;
function errorBodyExcerpt(body, maxChars = 200) {
  const text = body.subarray(0, scanBytes).toString("utf8");
  let shown = text;
  try {
    const parsed = JSON.parse(text);
    if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) {
      const { code, detail } = parsed;
      if (typeof detail === "string") shown = typeof code === "string" ? `${code}: ${detail}` : detail;
    }
  } catch {
  }
  const flat = redactSecrets(shown.replace(/[\u0000-\u001f\u007f]+/g, " ").trim(), []);
  return flat.length > maxChars ? `${flat.slice(0, maxChars)}\u2026` : flat;
}
function upstreamAnswered(status, body) {
  const excerpt = errorBodyExcerpt(body);
  return excerpt === "" ? `upstream answered ${status}` : `upstream answered ${status}: ${excerpt}`;
}

export {
  redactSecrets,
  ApiError,
  VerifierBusyError,
  ConfigError,
  notAuthenticated,
  invalidPersonalKey,
  invalidAccessToken,
  incorrectCredentials,
  missingScope,
  projectNotInKeyScope,
  personalKeyNotSupported,
  permissionDenied,
  projectNotFound,
  notFound,
  methodNotAllowed,
  serverError,
  unavailable,
  shuttingDown,
  bodyTooLarge,
  parseError,
  upstreamFailure,
  offline,
  parseSnapshotFile,
  serializeSnapshotFile,
  writeFileAtomic,
  createPersistence,
  upstreamAnswered
};
//# sourceMappingURL=chunk-NKODD5P7.js.map
