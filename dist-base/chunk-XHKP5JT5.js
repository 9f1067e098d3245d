import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);
import {
  ConfigError,
  parseSnapshotFile,
  upstreamAnswered
} from "./chunk-NKODD5P7.js";
import {
  emptyProject,
  withChanges
} from "./chunk-YXIUFDAM.js";

// src/store/load-snapshots.ts
import { readFile, stat } from "node:fs/promises";
async function readBootstrap(deps) {
  const file = deps.bootstrapFile;
  if (file === null) return [];
  try {
    const [text, info] = await Promise.all([readFile(file, "utf8"), stat(file)]);
    const bareProjectId = deps.projects?.length === 1 ? deps.projects[0].id : null;
    const projects = parseSnapshotFile(text, { file, source: "bootstrap", bareProjectId, mtimeMs: info.mtimeMs });
    deps.metrics.snapshotLoads.inc({ source: "bootstrap", outcome: "loaded" });
    return projects;
  } catch (error) {
    deps.metrics.snapshotLoads.inc({ source: "bootstrap", outcome: "rejected" });
    deps.logger.error({ file, err: error.message }, "ignoring unusable bootstrap file");
    return [];
  }
}
var fetchedAt = (p) => p?.cohorts?.fetchedAt ?? -Infinity;
async function loadInitialSnapshots(deps) {
  const only = deps.projects ? new Set(deps.projects.map((p) => p.id)) : null;
  const tokens = new Map((deps.projects ?? []).flatMap((p) => p.token === null ? [] : [[p.id, p.token]]));
  const [bootstrap, disk] = await Promise.all([readBootstrap(deps), deps.persistence?.loadAll(only, tokens) ?? []]);
  const foreign = (p) => p.token !== null && tokens.has(p.projectId) && tokens.get(p.projectId) !== p.token;
  for (const p of bootstrap.filter(foreign)) {
    deps.metrics.snapshotLoads.inc({ source: "bootstrap", outcome: "rejected" });
    deps.logger.error(
      { file: deps.bootstrapFile, project: p.projectId, err: `holds the project with token ${p.token.slice(0, 8)}\u2026, not the configured one` },
      "ignoring unusable bootstrap file"
    );
  }
  const fromBootstrap = new Map(bootstrap.filter((p) => !foreign(p)).map((p) => [p.projectId, p]));
  const fromDisk = new Map(disk.map((p) => [p.projectId, p]));
  const specs = deps.projects ? [...deps.projects] : [.../* @__PURE__ */ new Set([...fromBootstrap.keys(), ...fromDisk.keys()])].sort((a, b) => a - b).map((id) => ({ id, token: null }));
  return specs.map((spec) => {
    const a = fromDisk.get(spec.id);
    const b = fromBootstrap.get(spec.id);
    const chosen = fetchedAt(a) >= fetchedAt(b) ? a : b;
    const token = spec.token ?? chosen?.token ?? a?.token ?? b?.token ?? null;
    if (chosen) {
      deps.logger.info(
        { project: spec.id, source: chosen.cohorts?.source, fetchedAt: new Date(fetchedAt(chosen)).toISOString() },
        deps.polling ? "serving stored snapshot until the first poll" : "serving stored snapshot (offline: never polled)"
      );
    }
    return chosen ? withChanges(chosen, { token }) : emptyProject(spec.id, token);
  });
}

// src/auth/credential.ts
var bearer = /^Bearer\s+(\S.*)$/;
function extractCredential(authorization, query, bodyKey) {
  if (authorization !== void 0) {
    const match = bearer.exec(authorization.trim());
    if (match) return { key: match[1].trim(), source: "header" };
  }
  if (bodyKey) return { key: bodyKey.trim(), source: "body" };
  const fromQuery = query?.get("personal_api_key");
  if (fromQuery) return { key: fromQuery.trim(), source: "query" };
  return null;
}
function keyKind(key) {
  if (key.startsWith("phs_")) return "secret";
  if (key.startsWith("pha_")) return "oauth";
  return "personal";
}

// src/upstream/project-token.ts
var fix = (id) => `set it in FLAG_SIDECAR_PROJECTS as ${id}:phc_\u2026 (PostHog: Project settings \u2192 Project API key)`;
async function askUpstream(id, client, key, signal) {
  const result = await client.request({
    operation: "project",
    method: "GET",
    path: `/api/projects/${id}/`,
    headers: { authorization: `Bearer ${key}`, accept: "application/json" },
    ...signal ? { signal } : {}
  });
  if (result.kind === "failure") return { failed: `${result.cause} (${result.code})` };
  if (result.status === 200) {
    try {
      const token = JSON.parse(result.body.toString("utf8")).api_token;
      if (typeof token === "string" && /^phc_[A-Za-z0-9_-]+$/.test(token)) return { token };
    } catch {
    }
    return { failed: "upstream answered 200 without a usable api_token" };
  }
  const answered = upstreamAnswered(result.status, result.body);
  return result.status >= 500 || result.status === 429 ? { failed: answered } : { refused: answered };
}
async function resolveProjectTokens(snapshots, deps) {
  const configured = new Map((deps.configured ?? []).map((p) => [p.id, p.token]));
  const { client, key, logger } = deps;
  const canAsk = client !== null && key !== null && keyKind(key) === "personal";
  const resolve = async (snapshot) => {
    const id = snapshot.projectId;
    const stored = snapshot.token;
    if (stored !== null && (configured.get(id) != null || !canAsk)) {
      if (configured.get(id) === null) logger.info({ project: id, from: "stored snapshot" }, "project token taken from the stored snapshot");
      return { snapshot };
    }
    if (!canAsk) {
      return client === null || key === null ? { refused: `FLAG_SIDECAR_PROJECTS: project ${id} has no token (offline, and the bootstrap file has none), so SDKs cannot reach it: ${fix(id)}, or add its "token" to the bootstrap file` } : { refused: `FLAG_SIDECAR_PROJECTS: project ${id} has no token, and a project secret key cannot read it from upstream: ${fix(id)}` };
    }
    const answer = await askUpstream(id, client, key, stored !== null ? AbortSignal.timeout(deps.storedWaitMs ?? 3e3) : void 0);
    if ("token" in answer) {
      if (stored !== null && stored !== answer.token) {
        logger.warn({ project: id, from: "upstream" }, "project token changed upstream: the stored snapshot's is replaced (SDKs must use the new one)");
      } else {
        logger.info({ project: id, from: "upstream" }, "project token learned from upstream (GET /api/projects/:id/)");
      }
      return { snapshot: withChanges(snapshot, { token: answer.token }) };
    }
    if (stored !== null) {
      logger.warn({ project: id, from: "stored snapshot", cause: "refused" in answer ? answer.refused : answer.failed }, "project token taken from the stored snapshot; upstream did not confirm it");
      return { snapshot };
    }
    return "refused" in answer ? { refused: `FLAG_SIDECAR_PROJECTS: project ${id} has no token, and upstream would not give it to the sidecar's key (${answer.refused}): ${fix(id)}, or give the key the project:read scope` } : { failed: `project ${id}: ${answer.failed}` };
  };
  const results = await Promise.all(snapshots.map(resolve));
  const refused = results.flatMap((r) => "refused" in r ? [r.refused] : []);
  const failed = results.flatMap((r) => "failed" in r ? [r.failed] : []);
  if (refused.length > 0) throw new ConfigError(refused);
  if (failed.length > 0) {
    throw new Error(`could not learn a project token from upstream (${failed.join("; ")}); the next start asks again; to start without upstream, set each token in FLAG_SIDECAR_PROJECTS (id:phc_\u2026)`);
  }
  return results.flatMap((r) => "snapshot" in r ? [r.snapshot] : []);
}

export {
  loadInitialSnapshots,
  extractCredential,
  keyKind,
  resolveProjectTokens
};
//# sourceMappingURL=chunk-XHKP5JT5.js.map
