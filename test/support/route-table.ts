/**
 * The API listener's route table as the sidecar builds it (src/http/routes/api.ts), for tests that must cover
 * every route: built offline from the default configuration, only names, methods and templates are used.
 */
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { createPrincipalResolver } from '../../src/auth/principal.js';
import { loadConfig } from '../../src/config/load.js';
import { createAccess } from '../../src/http/routes/access.js';
import { apiRoutes } from '../../src/http/routes/api.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createReadThroughCache } from '../../src/store/read-through.js';
import { createStore } from '../../src/store/store.js';
import { rootDir } from './start-sidecar.js';

/** One route of the table. */
export interface RouteRow {
  readonly name: string;
  readonly methods: readonly string[];
  readonly template: string;
}

/** Every API route, in matching order. */
export function apiRouteTable(): RouteRow[] {
  const config = loadConfig({}, { readFile: (path) => readFileSync(path, 'utf8'), rootDir });
  const store = createStore([]);
  const metrics = createMetrics(new Registry(), { version: 't', commit: 't' });
  const resolver = createPrincipalResolver({ ownKey: null, ownProjects: [], staticKeys: [] });
  return apiRoutes({
    config,
    store,
    access: createAccess({ store, resolver, introspector: null, secretKeys: null, metrics, now: Date.now }),
    cache: createReadThroughCache({ maxBytes: 1 << 20, maxEntries: 10, staleMaxMs: 0, now: Date.now }),
    upstream: null,
    poller: null,
    logger: createLogger('silent'),
    metrics,
    now: Date.now,
  }).map(({ name, methods, template }) => ({ name, methods, template }));
}

/** A template's path with its parameters filled: `:project_id` → `projectId`, any other → `1` for ids, `x` for names. */
export function fillTemplate(template: string, projectId: string): string {
  return template.replace(/:(\w+)/g, (_, name: string) => (name === 'project_id' ? projectId : name === 'name' ? 'x' : '1'));
}
