/**
 * check-config's part of the project-token rule (src/upstream/project-token.ts): the same resolution the start
 * does — stored snapshots first, then upstream's `GET /api/projects/:id/` with the sidecar's key — so a
 * configuration whose projects' tokens cannot be had is refused before it is deployed.
 */
import type { Config } from './config/load.js';
import { ConfigError } from './errors.js';
import { createIntegrity } from './integrity.js';
import { createLogger } from './logger.js';
import { createMetrics } from './metrics/metrics.js';
import { Registry } from './metrics/prom.js';
import { createSealer } from './seal.js';
import { loadInitialSnapshots } from './store/load-snapshots.js';
import { createPersistence } from './store/persist.js';
import { resolveProjectTokens } from './upstream/project-token.js';

/** Problems with the configured projects' tokens (none when every project has one in the configuration). */
export async function projectTokenProblems(config: Config): Promise<string[]> {
  if (config.projects !== null && config.projects.every((p) => p.token !== null)) return [];
  const logger = createLogger('silent');
  const metrics = createMetrics(new Registry(), { version: 'check-config', commit: 'check-config' });
  // The same files the start reads: sealed ones verified with the same secret.
  const integrity = config.seal ? createIntegrity({ sealer: createSealer(config.seal.secret, config.seal.source), metrics, logger }) : null;
  const persistence = config.snapshotDir ? createPersistence({ dir: config.snapshotDir, integrity, logger, metrics, now: Date.now }) : null;
  const stored = await loadInitialSnapshots({ projects: config.projects, bootstrapFile: config.bootstrapFile, persistence, logger, metrics, polling: config.upstream !== null });
  // undici is loaded only when there is an upstream to ask.
  const upstream = config.upstream
    ? (await import('./upstream/client.js')).createUpstreamClient({ ...config.upstream, userAgent: 'flag-sidecar/check-config', metrics })
    : null;
  try {
    await resolveProjectTokens(stored, { configured: config.projects, client: upstream, key: config.upstream?.key ?? null, logger });
    return [];
  } catch (error) {
    return error instanceof ConfigError ? [...error.problems] : [(error as Error).message];
  } finally {
    await persistence?.close();
    await upstream?.close();
  }
}
