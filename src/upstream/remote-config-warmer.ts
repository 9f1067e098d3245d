/**
 * Remote-config payloads kept warm (operation 11 of docs/api-compatibility.md): once a caller has asked for a flag's remote
 * config, the sidecar fetches it with its own upstream key and keeps the answer — a payload, or upstream's 404 for
 * a flag that is missing or not a remote configuration — so later reads of that flag never wait on upstream. Only
 * the sidecar's own key ever fills an entry, at the project's numeric path: a caller's answer (whose project
 * upstream may have resolved differently) is never kept here.
 *
 * An entry is asked again only when a healthy poll brings definitions in which the flag's remote config may have
 * changed (definition-mark.ts: the flag's version, or for a flag the definitions do not hold their ETag); a poll
 * that changes nothing of it confirms the entry, which is served on. A 404 is therefore never asked again until
 * the definitions change. The one exception is a flag upstream answered as a remote configuration (200) that the
 * definitions do not hold — an encrypted one, or any on older upstreams, which leave them out of local_evaluation:
 * nothing the sidecar polls shows its changes, so it is refreshed after every healthy poll while callers read it.
 *
 * Upstream answers by credential kind only where payloads are encrypted (plaintext for personal API keys, a
 * redaction marker for project secret keys and for anything else, OAuth included), so entries are served only
 * to callers of the own key's kind: that key's answer is exactly what they get. Other callers use the per-key
 * read-through cache. Only 200 and 404 answers are kept; when the own key is refused (401/403) the entry goes;
 * when upstream fails the entry is kept, but never served past `staleMaxMs` since a fetch or a healthy poll last
 * confirmed it (so not through an outage longer than that). Entries
 * nobody read for `idleMs` stop being refreshed and go; at most `maxEntries` are kept. A write through the
 * sidecar drops a project's entries, and a fetch under way at that moment keeps nothing.
 */
import { LRUCache } from 'lru-cache';
import { entryBound } from '../store/entry-bound.js';
import { keyKind } from '../auth/credential.js';
import type { Logger } from '../logger.js';
import type { CachedResponse } from '../store/read-through.js';
import type { UpstreamClient } from './client.js';
import type { DefinitionMark } from './definition-mark.js';

/** The kind of credential an answer is for. */
export type CredentialClass = 'secret' | 'personal' | 'oauth';

/** A warm answer and when it was fetched from upstream. */
export interface WarmEntry {
  readonly projectId: number;
  readonly flag: string;
  readonly response: CachedResponse;
  readonly fetchedAt: number;
  readonly readAt: number;
}

/** An entry as held: the flag's definition mark when it was fetched, and when upstream last confirmed it. */
interface Held extends WarmEntry {
  readonly mark: DefinitionMark;
  /** The fetch, or the last healthy poll whose definitions left the flag's mark as it was. */
  confirmedAt: number;
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
  /** The mark of `flag`'s definition in `projectId`'s current snapshot (definition-mark.ts). */
  readonly mark: (projectId: number, flag: string) => DefinitionMark;
}

/** The credential class of a key kind (upstream decrypts payloads for personal API keys only). */
export const credentialClass = (kind: 'secret' | 'oauth' | 'personal'): CredentialClass => kind;

/** Create the warmer. */
export function createRemoteConfigWarmer(deps: WarmerDeps) {
  const { client, now } = deps;
  const ownClass = credentialClass(keyKind(deps.ownKey));
  const entries = new LRUCache<string, Held>(entryBound(deps.maxEntries));
  const keyOf = (projectId: number, flag: string): string => `${projectId}\u0000${flag}`;
  const keepable = (status: number): boolean => status === 200 || status === 404;
  // Per project: bumped by drop(), so that a fetch started before keeps nothing.
  const generations = new Map<number, number>();
  const fetching = new Set<string>();
  const refreshing = new Set<number>();

  /** Fetch `flag` with the own key and keep (or refresh) its entry, unless the project was dropped meanwhile. */
  async function fetchOne(projectId: number, flag: string, readAt: number): Promise<void> {
    const key = keyOf(projectId, flag);
    const generation = generations.get(projectId) ?? 0;
    // Taken before asking: definitions that change during the fetch make the next poll ask again.
    const mark = deps.mark(projectId, flag);
    const result = await client.request({
      operation: 'remote_config_refresh',
      method: 'GET',
      path: `/api/projects/${projectId}/feature_flags/${encodeURIComponent(flag)}/remote_config/`,
      headers: { authorization: `Bearer ${deps.ownKey}`, accept: 'application/json' },
    });
    if ((generations.get(projectId) ?? 0) !== generation) return;
    if (result.kind === 'response' && keepable(result.status)) {
      const headers: Record<string, string> = { 'content-length': String(result.body.length) };
      const type = result.headers['content-type'];
      if (typeof type === 'string') headers['content-type'] = type;
      const response = { status: result.status, headers, body: result.body };
      const at = now();
      entries.set(key, { projectId, flag, response, fetchedAt: at, readAt: entries.peek(key)?.readAt ?? readAt, mark, confirmedAt: at });
      return;
    }
    if (result.kind === 'response' && (result.status === 401 || result.status === 403)) {
      entries.delete(key);
      deps.logger.warn({ project: projectId, status: result.status }, 'own key refused for remote_config; flag not kept warm');
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
      if (at - entry.confirmedAt > deps.staleMaxMs) {
        entries.delete(key);
        return undefined;
      }
      if (at - entry.readAt > 1000) entries.set(key, { ...entry, readAt: at });
      return entry;
    },
    /** Start keeping `flag` of `projectId` warm (a fetch with the own key), unless it is already or being fetched. */
    want(projectId: number, flag: string): void {
      const key = keyOf(projectId, flag);
      if (entries.has(key) || fetching.has(key) || fetching.size >= 16) return;
      fetching.add(key);
      void fetchOne(projectId, flag, now()).finally(() => fetching.delete(key));
    },
    /**
     * After a healthy poll of `projectId`: ask upstream again for the entries read within the idle time whose
     * flag's definition may have changed (or that it cannot show, see above), confirm the others, forget those
     * nobody read. Never two at once per project.
     */
    async refresh(projectId: number): Promise<void> {
      if (refreshing.has(projectId)) return;
      refreshing.add(projectId);
      try {
        const at = now();
        const due: Held[] = [];
        for (const [key, entry] of [...entries.entries()]) {
          if (entry.projectId !== projectId) continue;
          if (at - entry.readAt > deps.idleMs) {
            entries.delete(key);
            continue;
          }
          const mark = deps.mark(projectId, entry.flag);
          const unseen = !mark.described && entry.response.status === 200;
          if (mark.value !== entry.mark.value || unseen) due.push(entry);
          // A 404 for a flag the definitions do not hold is not confirmed by them: a remote config they leave out
          // (encrypted) may have been created since. It is served until the stale limit, then asked again.
          else if (mark.described || entry.response.status !== 404) entry.confirmedAt = at;
        }
        // One at a time: a gentle, bounded load on upstream's remote_config limit.
        for (const entry of due) if (entries.has(keyOf(projectId, entry.flag))) await fetchOne(projectId, entry.flag, entry.readAt);
      } finally {
        refreshing.delete(projectId);
      }
    },
    /** Forget a project's entries (after a write through the sidecar: the next read asks upstream). */
    drop(projectId: number): void {
      generations.set(projectId, (generations.get(projectId) ?? 0) + 1);
      for (const [key, entry] of [...entries.entries()]) if (entry.projectId === projectId) entries.delete(key);
    },
    /** Entries held. */
    size: (): number => entries.size,
  };
}

/** The warmer handle. */
export type RemoteConfigWarmer = ReturnType<typeof createRemoteConfigWarmer>;
