import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);
import {
  loadInitialSnapshots,
  resolveProjectTokens
} from "./chunk-XHKP5JT5.js";
import {
  ConfigError,
  createPersistence
} from "./chunk-NKODD5P7.js";
import {
  createLogger
} from "./chunk-X7V2ZQEL.js";
import {
  createMetrics
} from "./chunk-R6EN27N5.js";
import {
  Registry
} from "./chunk-STRLSS22.js";
import "./chunk-YXIUFDAM.js";
import "./chunk-64F6AQPD.js";

// src/check-tokens.ts
async function projectTokenProblems(config) {
  if (config.projects !== null && config.projects.every((p) => p.token !== null)) return [];
  const logger = createLogger("silent");
  const metrics = createMetrics(new Registry(), { version: "check-config", commit: "check-config" });
  const persistence = config.snapshotDir ? createPersistence({ dir: config.snapshotDir, logger, metrics, now: Date.now }) : null;
  const stored = await loadInitialSnapshots({ projects: config.projects, bootstrapFile: config.bootstrapFile, persistence, logger, metrics, polling: config.upstream !== null });
  const upstream = config.upstream ? (await import("./client-VEJER4OG.js")).createUpstreamClient({ ...config.upstream, userAgent: "flag-sidecar/check-config", metrics }) : null;
  try {
    await resolveProjectTokens(stored, { configured: config.projects, client: upstream, key: config.upstream?.key ?? null, logger });
    return [];
  } catch (error) {
    return error instanceof ConfigError ? [...error.problems] : [error.message];
  } finally {
    await persistence?.close();
    await upstream?.close();
  }
}
export {
  projectTokenProblems
};
//# sourceMappingURL=check-tokens-RN5KDF2K.js.map
