/**
 * Remote-config payloads kept warm (reference/flags-api.md op 11): once a caller has read a flag's remote
 * config, the sidecar keeps upstream's answer and refreshes it with its own upstream key after every healthy
 * poll of the project, so later reads of that flag never wait on upstream.
 *
 * Upstream answers by credential kind only where payloads are encrypted (plaintext for personal keys, a
 * redaction marker for project secret keys), so entries are kept per kind, and only for the kind of the
 * sidecar's own key: that key's answer is exactly what every caller of that kind gets. Callers of the other kind
 * use the per-key read-through cache. Only 200 and 404 answers are kept; when the own key is refused (401/403)
 * the entry is dropped; when upstream fails the entry is kept, but never served past `staleMaxMs` since its last
 * refresh. Entries nobody read for `idleMs` stop being refreshed and go; at most `maxEntries` are kept.
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from '../logger.js';
import type { CachedResponse } from '../store/read-through.js';
import type { UpstreamClient } from './client.js';

/** The kind of credential an answer is for. */
export type CredentialClass = 'secret' | 'personal';

/** A warm answer and when it was last confirmed by upstream. */
export interface WarmEntry {
  readonly projectId: number;
  readonly flag: string;
  readonly response: CachedResponse;
  readonly fetchedAt: number;
  readonly readAt: number;
}

/** Dependencies and settings of createRemoteConfigWarmer. */
export interface WarmerDeps {
  readonly client: UpstreamClient;
  readonly ownKey: string;
  readonly now: () => number;
  readonly logger: Logger;
  readonly maxEntries: number;
  readonly idleMs: number;
  readonly staleMaxMs: number;
}

/** The credential class of a key kind (OAuth tokens are answered as personal keys). */
export const credentialClass = (kind: 'secret' | 'oauth' | 'personal'): CredentialClass => (kind === 'secret' ? 'secret' : 'personal');

/** Create the warmer. */
export function createRemoteConfigWarmer(deps: WarmerDeps) {
  const { client, now } = deps;
  const ownClass = credentialClass(deps.ownKey.startsWith('phs_') ? 'secret' : 'personal');
  const entries = new LRUCache<string, WarmEntry>({ max: deps.maxEntries });
  const keyOf = (projectId: number, flag: string): string => `${projectId}\u0000${flag}`;
  const keepable = (status: number): boolean => status === 200 || status === 404;

  async function refreshOne(entry: WarmEntry): Promise<void> {
    const result = await client.request({
      operation: 'remote_config_refresh',
      method: 'GET',
      path: `/api/projects/${entry.projectId}/feature_flags/${encodeURIComponent(entry.flag)}/remote_config/`,
      headers: { authorization: `Bearer ${deps.ownKey}`, accept: 'application/json' },
    });
    const key = keyOf(entry.projectId, entry.flag);
    if (entries.peek(key) !== entry) return; // dropped or replaced meanwhile
    if (result.kind === 'response' && keepable(result.status)) {
      const headers: Record<string, string> = { 'content-length': String(result.body.length) };
      const type = result.headers['content-type'];
      if (typeof type === 'string') headers['content-type'] = type;
      entries.set(key, { ...entry, response: { status: result.status, headers, body: result.body }, fetchedAt: now() });
      return;
    }
    if (result.kind === 'response' && (result.status === 401 || result.status === 403)) {
      entries.delete(key);
      deps.logger.warn({ project: entry.projectId, status: result.status }, 'own key refused for remote_config; flag no longer kept warm');
    }
  }

  return {
    /** The kind of caller whose answers are kept. */
    ownClass,
    /** A warm answer for `flag` (id or key as the caller wrote it) of `projectId`, if one may be served now. */
    get(projectId: number, flag: string, cls: CredentialClass): WarmEntry | undefined {
      if (cls !== ownClass) return undefined;
      const key = keyOf(projectId, flag);
      const entry = entries.get(key);
      if (entry === undefined) return undefined;
      const at = now();
      if (at - entry.fetchedAt > deps.staleMaxMs) {
        entries.delete(key);
        return undefined;
      }
      if (at - entry.readAt > 1000) entries.set(key, { ...entry, readAt: at });
      return entry;
    },
    /** Keep an answer a caller of the own key's kind got from upstream. */
    seed(projectId: number, flag: string, cls: CredentialClass, response: CachedResponse): void {
      if (cls !== ownClass || !keepable(response.status)) return;
      const at = now();
      entries.set(keyOf(projectId, flag), { projectId, flag, response, fetchedAt: at, readAt: at });
    },
    /** Refresh every entry of `projectId` read within the idle time; forget the others. */
    async refresh(projectId: number): Promise<void> {
      const at = now();
      const due: WarmEntry[] = [];
      for (const [key, entry] of [...entries.entries()]) {
        if (entry.projectId !== projectId) continue;
        if (at - entry.readAt > deps.idleMs) entries.delete(key);
        else due.push(entry);
      }
      // One at a time: a gentle, bounded load on upstream's remote_config limit.
      for (const entry of due) await refreshOne(entry);
    },
    /** Forget a project's entries (after a write through the sidecar: the next read asks upstream). */
    drop(projectId: number): void {
      for (const [key, entry] of [...entries.entries()]) if (entry.projectId === projectId) entries.delete(key);
    },
    /** Entries held. */
    size: (): number => entries.size,
  };
}

/** The warmer handle. */
export type RemoteConfigWarmer = ReturnType<typeof createRemoteConfigWarmer>;
