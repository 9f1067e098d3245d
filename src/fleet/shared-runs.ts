/**
 * Named-endpoint run results and run grants shared through Redis, so a run computed for one sidecar serves the
 * fleet under the same rules as in one sidecar (src/http/routes/endpoint-run.ts):
 *
 * - A result is stored under a digest of what its local cache key is built from (project, endpoint, version,
 *   debug, variables and overrides), with upstream's freshness as its TTL, and only while the endpoint's
 *   generation token is the one read before the run went upstream (a compare-and-set script), so a result from
 *   before a write is never stored after it. Results over `maxSharedRunBytes` are not shared.
 * - A write to an endpoint replaces its generation token (`retire`), which retires every stored result of it.
 * - A key's grant (upstream ran the endpoint for that key) is stored as a digest with the grant TTL; a refusal
 *   deletes it. A result is served to a key only once it holds a grant, locally or from here.
 *
 * Results and grants are sealed (seal.ts) under their Redis key, so only a sidecar holding the fleet's secret can
 * share them; one that does not verify is ignored (counted `invalid`, and as unverifiable in integrity.ts).
 * Everything read is validated (shared-run-entry.ts). Every call answers within the Redis timeout and never
 * rejects: with Redis down or slow a lookup finds nothing and a store is skipped, so the sidecar runs upstream
 * as one without fleet mode. Lookups and writes are counted in `flag_sidecar_fleet_shared_cache_total`
 * (cache endpoint_run or endpoint_grant).
 */
import { createHash } from 'node:crypto';
import type { Integrity } from '../integrity.js';
import type { Logger } from '../logger.js';
import { sealContext } from '../seal.js';
import type { FleetMetrics } from '../metrics/fleet-metrics.js';
import type { CachedResponse } from '../store/read-through.js';
import { decodeSharedRun, encodeSharedRun, maxSharedRunBytes, maxSharedRunMs, type SharedRun } from './shared-run-entry.js';
import type { FleetKeys } from './keys.js';
import { redisScript, type FleetRedis } from './redis.js';

/** Dependencies of createSharedRuns. */
export interface SharedRunsDeps {
  readonly redis: FleetRedis;
  readonly keys: FleetKeys;
  readonly integrity: Integrity;
  readonly metrics: FleetMetrics;
  readonly logger: Logger;
  readonly now: () => number;
  readonly random: () => number;
}

/** What a lookup found: the endpoint's generation token (for a later store), a valid result, the key's grant. */
export interface SharedLookup {
  readonly gen: string;
  readonly run: SharedRun | null;
  /** Until when (ms since the epoch) the key's grant holds in the fleet; 0: none. */
  readonly grantUntil: number;
}

/** Longest a generation token is kept: longer than any result stored under it. */
const generationTtlMs = maxSharedRunMs + 3_600_000;
/** Longest generation token accepted from Redis. */
const maxGenLength = 64;

/** Store ARGV[2] in KEYS[2] for ARGV[3] ms, only while KEYS[1] (the generation, '' when absent) is ARGV[1]. */
const storeScript = redisScript(`local g = redis.call('GET', KEYS[1]) or ''
if g ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return 1`);

const digest = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Create the shared run store. */
export function createSharedRuns(deps: SharedRunsDeps) {
  const { redis, keys, metrics, now } = deps;
  const { sealer } = deps.integrity;
  const count = (cache: 'endpoint_run' | 'endpoint_grant', result: 'hit' | 'miss' | 'write' | 'error' | 'invalid' | 'skipped'): void =>
    metrics.sharedCache.inc({ cache, result });
  let warned = false;
  const invalid = (what: string): void => {
    if (!warned) deps.logger.warn({ what }, 'ignored an invalid shared endpoint entry from Redis (logged once)');
    warned = true;
  };
  const genKey = (projectId: number, name: string): string => keys.endpointGeneration(projectId, digest(name));
  const runKey = (projectId: number, entryKey: string): string => keys.endpointRun(projectId, digest(`${projectId}\u0000${entryKey}`));
  const grantKey = (projectId: number, grant: string): string => keys.endpointGrant(projectId, digest(grant));

  /** A generation token from a reply: '' when absent; null when not a short string. */
  function genOf(reply: unknown): string | null {
    if (reply === null) return '';
    const text = Buffer.isBuffer(reply) ? reply.toString('utf8') : reply;
    return typeof text === 'string' && text.length <= maxGenLength ? text : null;
  }

  /** The payload sealed in `reply` under Redis key `name`, or null (counted as unverifiable). */
  function opened(kind: 'endpoint_run' | 'endpoint_grant', name: string, reply: Buffer): Buffer | null {
    const payload = sealer.open(reply, sealContext(kind, name));
    if (payload === null) deps.integrity.unverifiable(kind, name, reply);
    return payload;
  }

  /** The stored run (sealed under Redis key `name`) if valid and of generation `gen`; counted. */
  function runOf(name: string, reply: Buffer | null, gen: string): SharedRun | null {
    if (reply === null) {
      count('endpoint_run', 'miss');
      return null;
    }
    const payload = reply.length > maxSharedRunBytes + 2048 ? null : opened('endpoint_run', name, reply);
    const decoded = payload === null ? null : decodeSharedRun(payload, now());
    if (decoded === null) {
      count('endpoint_run', 'invalid');
      invalid('run');
      return null;
    }
    // A result stored under an older generation was retired by a write: a miss.
    const current = decoded.gen === gen;
    count('endpoint_run', current ? 'hit' : 'miss');
    return current ? decoded.run : null;
  }

  /** Until when a stored grant (sealed under Redis key `name`) holds (0: none, expired or invalid); counted. */
  function grantOf(name: string, reply: unknown): number {
    if (reply === null) {
      count('endpoint_grant', 'miss');
      return 0;
    }
    const payload = Buffer.isBuffer(reply) && reply.length <= 256 ? opened('endpoint_grant', name, reply) : null;
    const text = payload?.toString('latin1');
    const until = typeof text === 'string' && /^\d{1,16}$/.test(text) ? Number(text) : NaN;
    if (!Number.isSafeInteger(until)) {
      count('endpoint_grant', 'invalid');
      invalid('grant');
      return 0;
    }
    count('endpoint_grant', until > now() ? 'hit' : 'miss');
    return until > now() ? until : 0;
  }

  return {
    /**
     * In one round trip: the endpoint's generation, the stored result of run `entryKey` (the local cache key
     * without project and local generation) of endpoint `name`, and the grant `grant` (the local grant key); null
     * when Redis did not answer in time or is down.
     */
    async lookup(projectId: number, name: string, entryKey: string, grant: string): Promise<SharedLookup | null> {
      if (!redis.up()) return null;
      let reply: unknown;
      const names = { run: runKey(projectId, entryKey), grant: grantKey(projectId, grant) };
      try {
        reply = await redis.command('endpoint_run_get', ['MGET', genKey(projectId, name), names.run, names.grant], true);
      } catch {
        count('endpoint_run', 'error');
        return null;
      }
      const [genReply, runReply, grantReply] = Array.isArray(reply) && reply.length === 3 ? reply : [undefined, undefined, undefined];
      const gen = genOf(genReply);
      if (gen === null || (runReply !== null && !Buffer.isBuffer(runReply))) {
        count('endpoint_run', 'invalid');
        invalid('generation');
        return null;
      }
      const grantUntil = grantOf(names.grant, grantReply);
      return { gen, run: runOf(names.run, runReply, gen), grantUntil };
    },

    /** Share a 2xx result fresh for `ttlMs`, if the endpoint's generation is still `gen`. Never rejects. */
    async store(projectId: number, name: string, entryKey: string, gen: string, response: CachedResponse, ttlMs: number): Promise<void> {
      const at = now();
      const ttl = Math.min(Math.floor(ttlMs), maxSharedRunMs);
      if (ttl <= 0 || response.status < 200 || response.status > 299) return;
      const encoded = encodeSharedRun({ response, fetchedAt: at, expiresAt: at + ttl }, gen);
      if (encoded === null) return count('endpoint_run', 'skipped');
      if (!redis.up()) return;
      const key = runKey(projectId, entryKey);
      try {
        const value = sealer.seal(encoded, sealContext('endpoint_run', key));
        const stored = await redis.script('endpoint_run_set', storeScript, [genKey(projectId, name), key], [gen, value, String(ttl)]);
        count('endpoint_run', stored === 1 ? 'write' : 'skipped');
      } catch {
        count('endpoint_run', 'error');
      }
    },

    /** Retire every stored result of endpoint `name` (after a write to it); false when Redis did not take it. Never rejects. */
    async retire(projectId: number, name: string): Promise<boolean> {
      if (!redis.up()) return false;
      const token = `${now().toString(36)}.${Math.floor(deps.random() * 2 ** 48).toString(36)}`;
      try {
        await redis.command('endpoint_run_retire', ['SET', genKey(projectId, name), token, 'PX', String(generationTtlMs)]);
        return true;
      } catch {
        count('endpoint_run', 'error');
        return false;
      }
    },

    /** Record that upstream ran the endpoint for the key of `grant` (until `until`), or refused it (`until` null). Never rejects. */
    async setGrant(projectId: number, grant: string, until: number | null): Promise<void> {
      if (!redis.up()) return;
      const key = grantKey(projectId, grant);
      const ttl = until === null ? 0 : Math.floor(until - now());
      const args = until === null || ttl <= 0 ? ['DEL', key] : ['SET', key, sealer.seal(String(Math.floor(until)), sealContext('endpoint_grant', key)), 'PX', String(ttl)];
      try {
        await redis.command('endpoint_grant_set', args);
        if (args[0] === 'SET') count('endpoint_grant', 'write');
      } catch {
        count('endpoint_grant', 'error');
      }
    },
  };
}

/** The shared run store. */
export type SharedRuns = ReturnType<typeof createSharedRuns>;
