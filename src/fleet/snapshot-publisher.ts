/**
 * The leader's side of the snapshot relay: after each poll cycle, write the project's snapshot to Redis (the
 * head, and each variant's body when Redis does not hold it yet) with one fenced script, so that a leader whose
 * lease was taken can never overwrite the new leader's snapshot; then, when a body changed (or a caller asks),
 * a notice on the snapshot channel. A 304 only rewrites the head (fetched-at), so followers' Age stays true.
 *
 * Bodies are stored Brotli-compressed (snapshot-body.ts), compressed once per change; the head gives each one's
 * stored size (followers size their fetch spread by it), the fleet's size (counted by the relay) and whether
 * upstream is a relay, so that followers know both when Redis is gone.
 *
 * Head and bodies are sealed (seal.ts) under their Redis keys. A body is kept rather than written again only
 * while Redis holds exactly the sealed body this sidecar wrote (its seal line and length, checked in the script),
 * so a body someone else replaced is written again by the next publish, and a forged head by every publish.
 *
 * Guarantees: the head is written only together with bodies that match it (a body Redis lost, e.g. after a
 * flush, or that was replaced, is written again in the same call); every key has a TTL; never throws (Redis errors resolve as
 * `failed`); each variant body is at most FLAG_SIDECAR_UPSTREAM_MAX_BODY (the poller never holds a larger one).
 */
import type { Integrity } from '../integrity.js';
import type { Logger } from '../logger.js';
import { sealHeaderBytes } from '../seal.js';
import type { FleetMetrics } from '../metrics/fleet-metrics.js';
import type { Store } from '../store/store.js';
import type { FleetKeys } from './keys.js';
import { redisScript, type FleetRedis } from './redis.js';
import type { VariantName } from '../store/snapshot.js';
import { encodeBody } from './snapshot-body.js';
import { bodyContext, encodeHead, encodeNotice, headContext, headOf, type BodyDigest, type HeadPoll } from './snapshot-head.js';

/** How long a published snapshot outlives its last refresh by a leader. */
export const snapshotTtlMs = 24 * 3_600_000;

// KEYS: lease, head, body cohorts, body plain. ARGV: lease value, head, ttl ms, then per variant a mode
// (w: write the body that follows, k: keep the body Redis holds if it starts with the seal line that follows and
// has the length that follows, n: none), a body or seal line, and a length.
// → -1 fenced out (not our lease) | bitmask of bodies to keep that Redis lacks or that were replaced (head not
// written) | 0 done
const publishScript = redisScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local missing = 0
for i = 0, 1 do
  local key = KEYS[3 + i]
  local mode = ARGV[4 + 3 * i]
  local value = ARGV[5 + 3 * i]
  if mode == 'w' then
    redis.call('SET', key, value, 'PX', ARGV[3])
  elseif mode == 'k' then
    if redis.call('STRLEN', key) ~= tonumber(ARGV[6 + 3 * i]) or redis.call('GETRANGE', key, 0, string.len(value) - 1) ~= value then
      missing = missing + (i == 0 and 1 or 2)
    else
      redis.call('PEXPIRE', key, ARGV[3])
    end
  else
    redis.call('DEL', key)
  end
end
if missing == 0 then redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3]) end
return missing`);

/** What one publication ended with. */
export type PublishResult = 'published' | 'fenced' | 'failed' | 'nothing';

/** Dependencies of createSnapshotPublisher. */
export interface PublisherDeps {
  readonly redis: FleetRedis;
  readonly keys: FleetKeys;
  readonly store: Store;
  readonly instanceId: string;
  readonly digest: BodyDigest;
  readonly integrity: Integrity;
  readonly metrics: FleetMetrics;
  readonly logger: Logger;
}

/** A body this sidecar wrote: its SHA-256, and the seal line and length it has in Redis. */
interface Written {
  readonly sha: string;
  readonly sealLine: Buffer;
  readonly length: number;
}

/** What a leader publishes with. */
export interface PublishInput {
  readonly leaseValue: string;
  readonly generation: number;
  readonly poll: HeadPoll;
  /** The fleet's size as last counted (null: not known). */
  readonly fleetSize: number | null;
  /** This sidecar's upstream is a relay. */
  readonly relay: boolean;
  /** Send a notice even when no body changed (a follower asked for this poll). */
  readonly notice: boolean;
}

/** Create the publisher. */
export function createSnapshotPublisher(deps: PublisherDeps) {
  const { redis, keys, store, digest, metrics } = deps;
  const { sealer } = deps.integrity;
  // Per project and variant: the body this sidecar last wrote (Redis holds it unless it lost it or it was replaced).
  const written = new Map<string, Written>();

  async function run(projectId: number, input: PublishInput, rewrite: number): Promise<number> {
    const project = store.get(projectId);
    if (!project?.cohorts) return 0;
    const args: Array<string | Buffer> = [];
    const wrote: Array<[string, Written]> = [];
    const stored: Partial<Record<VariantName, number>> = {};
    for (const [bit, name] of [[1, 'cohorts'], [2, 'plain']] as const) {
      const variant = project[name];
      if (variant === null) {
        args.push('n', '', '0');
        continue;
      }
      const id = `${projectId}:${name}`;
      const sha = digest(variant.body);
      const kept = written.get(id);
      if ((rewrite & bit) !== 0 || kept?.sha !== sha) {
        const sealed = sealer.seal(await encodeBody(variant.body), bodyContext(keys.snapshot(projectId, name)));
        args.push('w', sealed, '0');
        // A copy of the seal line: a view would keep the sealed body alive.
        wrote.push([id, { sha, sealLine: Buffer.from(sealed.subarray(0, sealHeaderBytes)), length: sealed.length }]);
        stored[name] = sealed.length;
      } else {
        args.push('k', kept.sealLine, String(kept.length));
        stored[name] = kept.length;
      }
    }
    // From `project` as read above, as the bodies are (the store may have moved on while compressing).
    const { poll, generation, fleetSize, relay } = input;
    const head = headOf(project, { poll, generation, leader: deps.instanceId, fleetSize, relay, stored }, digest);
    const bodyKeys = [keys.snapshot(projectId, 'cohorts'), keys.snapshot(projectId, 'plain')];
    const reply = await redis.script('snapshot_publish', publishScript, [keys.lease(projectId), keys.snapshotHead(projectId), ...bodyKeys], [
      input.leaseValue, sealer.seal(encodeHead(head), headContext(keys.snapshotHead(projectId))), String(snapshotTtlMs), ...args,
    ]);
    if (typeof reply !== 'number') throw new Error('unexpected reply to the publish script');
    if (reply === 0) {
      for (const [id, body] of wrote) written.set(id, body);
      if (wrote.length > 0) metrics.snapshotsPublished.inc({ project: String(projectId) }, wrote.length);
      if (wrote.length > 0 || input.notice) await redis.publish(keys.snapshotChannel, encodeNotice({ kind: 'snapshot', project: projectId, generation: input.generation }));
    }
    return reply;
  }

  return {
    /** Publish the project's current snapshot under the lease `input.leaseValue`. Never rejects. */
    async publish(projectId: number, input: PublishInput): Promise<PublishResult> {
      if (!store.get(projectId)?.cohorts) return 'nothing';
      try {
        let reply = await run(projectId, input, 0);
        if (reply > 0) reply = await run(projectId, input, reply);
        if (reply === -1) return 'fenced';
        return reply === 0 ? 'published' : 'failed';
      } catch (error) {
        deps.logger.debug({ project: projectId, err: (error as Error).message }, 'snapshot not published');
        return 'failed';
      }
    },
    /** Forget what was written for a project (a new lease: Redis may hold another leader's bodies). */
    forget(projectId: number): void {
      written.delete(`${projectId}:cohorts`);
      written.delete(`${projectId}:plain`);
    },
  };
}

/** The publisher handle. */
export type SnapshotPublisher = ReturnType<typeof createSnapshotPublisher>;
