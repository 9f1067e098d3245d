/**
 * Static cohort member lists shared through Redis in fleet mode (upstream/static-cohorts.ts): the project's leader
 * writes the lists it pulled, followers read them and never ask upstream. Two keys per project: a small head
 * (`<sha256 hex> <bytes>` of the body) and the body (JSON: each cohort's members, whether it is truncated, its
 * persons, its record's fingerprint and when it was pulled). The leader writes both with one script fenced on its
 * lease (a leader whose lease was taken cannot overwrite the new one's lists); when nothing changed it only renews
 * their TTL. A follower reads the head (a few bytes) on each check and the body only when the head changed.
 *
 * Everything read is validated before use, as a snapshot is: the head must carry the fleet's seal (seal.ts; a head
 * that does not verify is counted as unverifiable, integrity.ts), the body must match the head's SHA-256 and size and
 * hold upstream's shape within the sidecar's bounds (persons per cohort, 10 distinct_ids per person, 400
 * characters per id, `maxShareBytes`); a refused copy is counted and logged, and the lists held are kept.
 * This module is the only reader and writer of these keys. Never throws.
 */
import { createHash } from 'node:crypto';
import type { Integrity } from '../integrity.js';
import type { Logger } from '../logger.js';
import { sealContext } from '../seal.js';
import { maxDistinctIdLength, serializedIdsPerPerson } from '../upstream/static-cohort-pull.js';
import type { FleetKeys } from './keys.js';
import { redisScript, type FleetRedis } from './redis.js';
import { snapshotTtlMs } from './snapshot-publisher.js';

/** One cohort's list as shared. */
export interface SharedCohort {
  readonly id: string;
  readonly members: Iterable<string>;
  readonly truncated: boolean;
  readonly persons: number;
  readonly fingerprint: string;
  readonly pulledAt: number;
}

/** Largest body read or written (a cohort at the default bound of 10,000 persons with UUID ids is ~4 MB). */
export const maxShareBytes = 64 * 1024 * 1024;
/** Most cohorts in one project's body. */
const maxCohorts = 10_000;

/** What a read ended with. */
export type ShareLoad =
  | { readonly kind: 'same' }
  | { readonly kind: 'none' }
  | { readonly kind: 'failed' }
  | { readonly kind: 'rejected'; readonly error: string }
  | { readonly kind: 'loaded'; readonly cohorts: readonly SharedCohort[] };

// KEYS: lease, head, body. ARGV: lease value, head, body, ttl ms, mode (w: write, k: keep if the head is ours).
// → -1 fenced out | 1 Redis does not hold our head (write it) | 0 done
const publishScript = redisScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if ARGV[5] == 'w' then
  redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[4])
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[4])
  return 0
end
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return 1 end
redis.call('PEXPIRE', KEYS[2], ARGV[4])
if redis.call('PEXPIRE', KEYS[3], ARGV[4]) == 0 then return 1 end
return 0`);

/** The body of a project's lists. */
export function encodeShared(cohorts: readonly SharedCohort[]): Buffer {
  const list = cohorts.map((c) => ({ id: c.id, fingerprint: c.fingerprint, pulled_at: c.pulledAt, persons: c.persons, truncated: c.truncated, members: [...c.members] }));
  return Buffer.from(JSON.stringify({ flag_sidecar_static_cohorts: 1, cohorts: list }));
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const tooLong = (id: string): boolean => id.length > maxDistinctIdLength && [...id].length > maxDistinctIdLength;

/** The lists of a body, or why it is refused; `maxPersons` bounds each cohort as a pull does. */
export function decodeShared(body: Buffer, maxPersons: number): readonly SharedCohort[] | string {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return 'not JSON';
  }
  if (!isObject(value) || value.flag_sidecar_static_cohorts !== 1 || !Array.isArray(value.cohorts)) return 'not a static cohorts body of this version';
  if (value.cohorts.length > maxCohorts) return `more than ${maxCohorts} cohorts`;
  const seen = new Set<string>();
  const cohorts: SharedCohort[] = [];
  for (const c of value.cohorts as unknown[]) {
    if (!isObject(c) || typeof c.id !== 'string' || c.id === '' || c.id.length > 64 || seen.has(c.id)) return 'a cohort without a valid, unique id';
    const { persons, members } = c;
    if (typeof persons !== 'number' || !Number.isInteger(persons) || persons < 0 || persons > maxPersons) return `cohort ${c.id}: persons out of bounds`;
    if (!Array.isArray(members) || members.length > persons * serializedIdsPerPerson) return `cohort ${c.id}: more distinct_ids than its persons may have`;
    if (members.some((m) => typeof m !== 'string' || tooLong(m))) return `cohort ${c.id}: a distinct_id not a string of at most ${maxDistinctIdLength} characters`;
    if (typeof c.truncated !== 'boolean' || typeof c.fingerprint !== 'string' || c.fingerprint.length > 512) return `cohort ${c.id}: invalid truncated or fingerprint`;
    if (typeof c.pulled_at !== 'number' || !Number.isFinite(c.pulled_at) || c.pulled_at < 0) return `cohort ${c.id}: invalid pulled_at`;
    seen.add(c.id);
    cohorts.push({ id: c.id, members: members as string[], truncated: c.truncated, persons, fingerprint: c.fingerprint, pulledAt: c.pulled_at });
  }
  return cohorts;
}

const headOf = (body: Buffer): string => `${createHash('sha256').update(body).digest('hex')} ${body.length}`;
/** The seal's context of a head: its Redis key (so a head cannot be replayed under another project or prefix). */
const headContext = (key: string): string => sealContext('static_cohorts_head', key);

/** Dependencies of createStaticCohortShare. */
export interface ShareDeps {
  readonly redis: FleetRedis;
  readonly keys: FleetKeys;
  readonly maxPersons: number;
  readonly logger: Logger;
  /** The fleet's seal: heads are written sealed, and a head that does not verify is refused. */
  readonly integrity: Integrity;
  /** Called for each refused copy (a metric). */
  readonly onRejected?: () => void;
}

/** Create the reader and writer of the shared lists. */
export function createStaticCohortShare(deps: ShareDeps) {
  const { redis, keys } = deps;
  const { sealer } = deps.integrity;
  /** Per project: the sealed head this sidecar last wrote or loaded. */
  const heads = new Map<number, string>();
  const lastRefusal = new Map<number, string>();

  function refuse(projectId: number, error: string): ShareLoad {
    deps.onRejected?.();
    if (lastRefusal.get(projectId) !== error) deps.logger.warn({ project: projectId, cause: error }, 'static cohort lists in redis refused; keeping the ones held');
    lastRefusal.set(projectId, error);
    return { kind: 'rejected', error };
  }

  return {
    /** As leader (lease `leaseValue`): share the project's lists; only their TTL is renewed when unchanged. */
    async publish(projectId: number, leaseValue: string, cohorts: readonly SharedCohort[]): Promise<'published' | 'fenced' | 'failed'> {
      try {
        const body = encodeShared(cohorts);
        if (body.length > maxShareBytes) return 'failed';
        const head = sealer.seal(headOf(body), headContext(keys.staticCohortsHead(projectId))).toString('latin1');
        const run = (mode: 'w' | 'k') =>
          redis.script('static_cohorts_publish', publishScript, [keys.lease(projectId), keys.staticCohortsHead(projectId), keys.staticCohorts(projectId)], [leaseValue, head, mode === 'w' ? body : '', String(snapshotTtlMs), mode]);
        let reply = await run(heads.get(projectId) === head ? 'k' : 'w');
        if (reply === 1) reply = await run('w');
        if (reply === -1) return 'fenced';
        if (reply !== 0) return 'failed';
        heads.set(projectId, head);
        return 'published';
      } catch {
        return 'failed'; // counted and logged by the client
      }
    },
    /** As follower: the project's lists when they changed since the last load. */
    async load(projectId: number): Promise<ShareLoad> {
      try {
        const head = await redis.command('static_cohorts_head', ['GET', keys.staticCohortsHead(projectId)]);
        if (head === null) return { kind: 'none' };
        if (head === heads.get(projectId)) return { kind: 'same' };
        const reply = await redis.command('static_cohorts_read', ['MGET', keys.staticCohortsHead(projectId), keys.staticCohorts(projectId)], true);
        if (!Array.isArray(reply) || reply.length !== 2) return refuse(projectId, 'unexpected reply to MGET');
        const [rawHead, body] = reply;
        if (rawHead === null || body === null) return { kind: 'none' };
        if (!Buffer.isBuffer(rawHead) || !Buffer.isBuffer(body)) return refuse(projectId, 'not strings');
        if (body.length > maxShareBytes) return refuse(projectId, `body larger than ${maxShareBytes} bytes`);
        const headKey = keys.staticCohortsHead(projectId);
        const opened = sealer.open(rawHead, headContext(headKey));
        if (opened === null) {
          deps.integrity.unverifiable('static_cohorts_head', headKey, rawHead);
          return refuse(projectId, 'head does not verify');
        }
        if (headOf(body) !== opened.toString('latin1')) return refuse(projectId, 'body does not match its SHA-256');
        const readHead = rawHead.toString('latin1');
        const cohorts = decodeShared(body, deps.maxPersons);
        if (typeof cohorts === 'string') return refuse(projectId, cohorts);
        heads.set(projectId, readHead);
        lastRefusal.delete(projectId);
        return { kind: 'loaded', cohorts };
      } catch {
        return { kind: 'failed' };
      }
    },
    /** Forget what was written or read for a project (a new role: Redis may hold another leader's lists). */
    forget(projectId: number): void {
      heads.delete(projectId);
    },
  };
}

/** The share handle. */
export type StaticCohortShare = ReturnType<typeof createStaticCohortShare>;
