/**
 * Shared key checks (fleet mode): what upstream answered about a key — a principal, a refusal to describe it,
 * a grant on a project, a 401 or a 403 — is written to Redis under the key's SHA-256 digest (never the key), so
 * that the fleet asks upstream about a key once per TTL, not once per sidecar. The auth caches
 * (auth/introspect.ts, auth/secret-keys.ts) read here on a miss of their own, before asking upstream.
 *
 * Guarantees:
 * - a read never waits longer than the Redis timeout, and never fails: Redis down, slow or erroring is a miss;
 *   concurrent reads of one entry share one GET;
 * - every entry is sealed (seal.ts) under its Redis key, so only a sidecar holding the fleet's secret can vouch
 *   for a key; one that does not verify is a miss, counted (result `invalid`, and as unverifiable in
 *   integrity.ts) and logged once, and the key is asked about upstream;
 * - what is read is validated strictly and held to this sidecar's TTLs (shared-key-entries.ts); anything
 *   invalid is a miss, counted (result `invalid`) and logged once;
 * - writes are fire-and-forget (never awaited on a request path), bounded in size, and expire with the answer
 *   (a positive at the end of its grace, a refusal at the end of the negative TTL). A refusal always replaces
 *   what is there (a key upstream stopped accepting loses its shared record at once); a positive never replaces
 *   an answer vouched for later.
 * Metrics: flag_sidecar_fleet_shared_cache_total{cache: principal|grant, result: hit|miss|write|error|invalid}.
 */
import type { Integrity } from '../integrity.js';
import type { Logger } from '../logger.js';
import { sealContext, sealHeaderBytes } from '../seal.js';
import type { FleetMetrics } from '../metrics/fleet-metrics.js';
import type { FleetKeys } from './keys.js';
import { redisScript, type FleetRedis } from './redis.js';
import { decodeSharedEntry, encodeSharedEntry, keepUntilOf, sharedEntryMaxBytes, vouchedAtOf, type SharedEntry, type SharedSlot } from './shared-key-entries.js';

/** Dependencies and settings of createSharedKeys (the TTLs are the auth cache's own). */
export interface SharedKeysDeps {
  readonly redis: FleetRedis;
  readonly keys: FleetKeys;
  readonly integrity: Integrity;
  readonly metrics: FleetMetrics;
  readonly logger: Logger;
  readonly now: () => number;
  readonly ttlMs: number;
  readonly negativeTtlMs: number;
  readonly graceMs: number;
}

/**
 * Set KEYS[1] to ARGV[1] for ARGV[4] ms, unless ARGV[3] is `positive` and what is there was vouched for after
 * ARGV[2] (ISO dates compare as strings). What is there is only read as far as its `vouched_at`, past its seal
 * line of ARGV[5] bytes (the script cannot verify the seal: readers do).
 */
const writeScript = redisScript(`
local current = redis.call('GET', KEYS[1])
if current and ARGV[3] == 'positive' then
  local ok, old = pcall(cjson.decode, string.sub(current, tonumber(ARGV[5]) + 1))
  if ok and type(old) == 'table' and type(old.vouched_at) == 'string' and old.vouched_at > ARGV[2] then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
return 1`);

type Cache = 'principal' | 'grant';

/** The seal context of a shared key entry: its Redis key (which names the fleet, the key's digest and the project). */
const entryContext = (name: string): string => sealContext('key-entry', name);

/** Create the shared key store on the fleet's Redis. */
export function createSharedKeys(deps: SharedKeysDeps) {
  const { redis, keys, metrics, logger } = deps;
  const reads = new Map<string, Promise<SharedEntry | null>>();
  const loggedInvalid = new Set<Cache>();
  const count = (cache: Cache, result: 'hit' | 'miss' | 'write' | 'error' | 'invalid'): void => metrics.sharedCache.inc({ cache, result });

  function invalid(cache: Cache, name: string, slot: SharedSlot): null {
    count(cache, 'invalid');
    if (!loggedInvalid.has(cache)) {
      loggedInvalid.add(cache);
      logger.warn({ cache, key: name, keyPrefix: slot.digest.slice(0, 12) }, 'ignoring an invalid shared key record in redis (logged once)');
    }
    return null;
  }

  async function get(cache: Cache, name: string, slot: SharedSlot): Promise<SharedEntry | null> {
    let reply;
    try {
      reply = await redis.command('get', ['GET', name], true);
    } catch {
      count(cache, 'error');
      return null;
    }
    if (reply === null) {
      count(cache, 'miss');
      return null;
    }
    if (!Buffer.isBuffer(reply) || reply.length > sharedEntryMaxBytes + sealHeaderBytes) return invalid(cache, name, slot);
    const payload = deps.integrity.sealer.open(reply, entryContext(name));
    if (payload === null) {
      deps.integrity.unverifiable('key_entry', name, reply);
      return invalid(cache, name, slot);
    }
    const read = decodeSharedEntry(payload, slot, { now: deps.now(), ttlMs: deps.ttlMs, negativeTtlMs: deps.negativeTtlMs, graceMs: deps.graceMs });
    if (read.kind === 'invalid') return invalid(cache, name, slot);
    if (read.kind === 'expired') {
      count(cache, 'miss');
      return null;
    }
    count(cache, 'hit');
    return read;
  }

  function read(cache: Cache, name: string, slot: SharedSlot): Promise<SharedEntry | null> {
    if (!redis.up()) {
      count(cache, 'error');
      return Promise.resolve(null);
    }
    const running = reads.get(name);
    if (running !== undefined) return running;
    const promise = get(cache, name, slot).finally(() => reads.delete(name));
    reads.set(name, promise);
    return promise;
  }

  function write(cache: Cache, name: string, entry: SharedEntry): void {
    const ttl = keepUntilOf(entry) - deps.now();
    const text = encodeSharedEntry(entry);
    if (ttl <= 0 || text === null) return;
    const value = deps.integrity.sealer.seal(text, entryContext(name));
    if (!redis.up()) return void count(cache, 'error');
    const kind = entry.kind === 'record' ? 'positive' : 'refusal';
    const args = [value, new Date(vouchedAtOf(entry)).toISOString(), kind, String(Math.ceil(ttl)), String(sealHeaderBytes)];
    redis.script('share_key_record', writeScript, [name], args).then(
      () => count(cache, 'write'),
      () => count(cache, 'error'),
    );
  }

  return {
    /** What the fleet knows about a key (a `principal`/`refused` record or `unknown`), or null. Never rejects. */
    readKey: (digest: string): Promise<SharedEntry | null> => read('principal', keys.keyRecord(digest), { digest, projectId: null }),
    /** What the fleet knows about a key on a project (a `grant` record, `unknown` or `denied`), or null. Never rejects. */
    readGrant: (digest: string, projectId: number): Promise<SharedEntry | null> =>
      read('grant', keys.grant(digest, projectId), { digest, projectId }),
    /** Share an answer about a key (projectId null) or a key on a project, in the background. */
    write(entry: SharedEntry): void {
      const projectId = entry.kind === 'record' ? (entry.record.type === 'grant' ? entry.record.projectId : null) : entry.projectId;
      const digest = entry.kind === 'record' ? entry.record.digest : entry.digest;
      if (projectId === null) write('principal', keys.keyRecord(digest), entry);
      else write('grant', keys.grant(digest, projectId), entry);
    },
  };
}

/** The shared key store handle. */
export type SharedKeys = ReturnType<typeof createSharedKeys>;
