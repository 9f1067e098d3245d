/**
 * Project tokens the configuration left out (`FLAG_SIDECAR_PROJECTS=1` rather than `1:phc_…`). SDK paths select
 * the project by its token, so a project without one would answer every SDK 401. At start each missing token is
 * learned from upstream's `GET /api/projects/:id/` (its `api_token`; the sidecar's key needs `project:read`) —
 * all projects at once — so a token reset in PostHog is picked up by the next start; the stored snapshot's token
 * (bootstrap file or snapshot dir) is used offline, with a project secret key, and when upstream does not give
 * one (unreachable, refusing, or slower than `storedWaitMs`, so an outage delays the start by no more). Where
 * each token came from is logged (never the token itself). What cannot be had stops the start: a ConfigError
 * naming the fix (exit 2) when upstream refuses or the key cannot read projects, an Error when upstream could not
 * be asked (exit 1).
 */
import { keyKind } from '../auth/credential.js';
import type { ProjectSpec } from '../config/parsers.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../logger.js';
import { withChanges, type ProjectSnapshot } from '../store/snapshot.js';
import type { UpstreamClient } from './client.js';
import { upstreamAnswered } from './error-body.js';

/** Inputs of resolveProjectTokens. */
export interface ProjectTokenDeps {
  /** The configured projects (null offline: the files decide). */
  readonly configured: readonly ProjectSpec[] | null;
  /** null offline. */
  readonly client: UpstreamClient | null;
  readonly key: string | null;
  readonly logger: Logger;
  /** How long upstream's answer is waited for when a stored token could be used instead (default 3 s). */
  readonly storedWaitMs?: number;
}

const fix = (id: number): string =>
  `set it in FLAG_SIDECAR_PROJECTS as ${id}:phc_… (PostHog: Project settings → Project API key)`;

/** The token of `/api/projects/:id/`'s answer, or a problem. */
async function askUpstream(id: number, client: UpstreamClient, key: string, signal?: AbortSignal): Promise<{ token: string } | { refused: string } | { failed: string }> {
  const result = await client.request({
    operation: 'project',
    method: 'GET',
    path: `/api/projects/${id}/`,
    headers: { authorization: `Bearer ${key}`, accept: 'application/json' },
    ...(signal ? { signal } : {}),
  });
  if (result.kind === 'failure') return { failed: `${result.cause} (${result.code})` };
  if (result.status === 200) {
    try {
      const token = (JSON.parse(result.body.toString('utf8')) as { api_token?: unknown }).api_token;
      if (typeof token === 'string' && /^phc_[A-Za-z0-9_-]+$/.test(token)) return { token };
    } catch {
      // handled below
    }
    return { failed: 'upstream answered 200 without a usable api_token' };
  }
  const answered = upstreamAnswered(result.status, result.body);
  return result.status >= 500 || result.status === 429 ? { failed: answered } : { refused: answered };
}

type Resolved = { readonly snapshot: ProjectSnapshot } | { readonly refused: string } | { readonly failed: string };

/** `snapshots` with every missing token filled in; throws when one cannot be had (see the module comment). */
export async function resolveProjectTokens(snapshots: readonly ProjectSnapshot[], deps: ProjectTokenDeps): Promise<ProjectSnapshot[]> {
  const configured = new Map((deps.configured ?? []).map((p) => [p.id, p.token]));
  const { client, key, logger } = deps;
  const canAsk = client !== null && key !== null && keyKind(key) === 'personal';
  const resolve = async (snapshot: ProjectSnapshot): Promise<Resolved> => {
    const id = snapshot.projectId;
    const stored = snapshot.token;
    if (stored !== null && (configured.get(id) != null || !canAsk)) {
      if (configured.get(id) === null) logger.info({ project: id, from: 'stored snapshot' }, 'project token taken from the stored snapshot');
      return { snapshot };
    }
    if (!canAsk) {
      return client === null || key === null
        ? { refused: `FLAG_SIDECAR_PROJECTS: project ${id} has no token (offline, and the bootstrap file has none), so SDKs cannot reach it: ${fix(id)}, or add its "token" to the bootstrap file` }
        : { refused: `FLAG_SIDECAR_PROJECTS: project ${id} has no token, and a project secret key cannot read it from upstream: ${fix(id)}` };
    }
    const answer = await askUpstream(id, client, key, stored !== null ? AbortSignal.timeout(deps.storedWaitMs ?? 3000) : undefined);
    if ('token' in answer) {
      if (stored !== null && stored !== answer.token) {
        logger.warn({ project: id, from: 'upstream' }, "project token changed upstream: the stored snapshot's is replaced (SDKs must use the new one)");
      } else {
        logger.info({ project: id, from: 'upstream' }, 'project token learned from upstream (GET /api/projects/:id/)');
      }
      return { snapshot: withChanges(snapshot, { token: answer.token }) };
    }
    if (stored !== null) {
      logger.warn({ project: id, from: 'stored snapshot', cause: 'refused' in answer ? answer.refused : answer.failed }, 'project token taken from the stored snapshot; upstream did not confirm it');
      return { snapshot };
    }
    return 'refused' in answer
      ? { refused: `FLAG_SIDECAR_PROJECTS: project ${id} has no token, and upstream would not give it to the sidecar's key (${answer.refused}): ${fix(id)}, or give the key the project:read scope` }
      : { failed: `project ${id}: ${answer.failed}` };
  };
  const results = await Promise.all(snapshots.map(resolve));
  const refused = results.flatMap((r) => ('refused' in r ? [r.refused] : []));
  const failed = results.flatMap((r) => ('failed' in r ? [r.failed] : []));
  if (refused.length > 0) throw new ConfigError(refused);
  if (failed.length > 0) {
    throw new Error(`could not learn a project token from upstream (${failed.join('; ')}); the next start asks again; to start without upstream, set each token in FLAG_SIDECAR_PROJECTS (id:phc_…)`);
  }
  return results.flatMap((r) => ('snapshot' in r ? [r.snapshot] : []));
}
