/**
 * Who verifies keys: the principal resolver (own key, static keys), and online the introspector (personal keys)
 * and the grant verifier (project secret keys, OAuth access tokens, personal keys upstream will not describe),
 * behind one verification queue, shared through the fleet when given;
 * with a snapshot directory, the verified keys remembered beside the snapshot (digests only), so a restart during
 * an outage keeps them.
 */
import { performance } from 'node:perf_hooks';
import type { Config } from '../config/load.js';
import type { SharedKeys } from '../fleet/shared-keys.js';
import type { Integrity } from '../integrity.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Store } from '../store/store.js';
import type { UpstreamClient } from '../upstream/client.js';
import { createIntrospector, type Introspector } from './introspect.js';
import { createKeyRecordFile } from './key-record-file.js';
import { createKeyRecordSync, type KeyRecordSync } from './key-record-sync.js';
import type { StaticKey } from './keys-file.js';
import { createPrincipalResolver, type PrincipalResolver } from './principal.js';
import { createSecretKeyVerifier, type SecretKeyVerifier } from './secret-keys.js';
import { createVerifyQueue, verifyQueueDefaults, type VerifyQueue } from './verify-queue.js';

/** Shortest time between two writes of the verified key records file (a kill -9 loses at most this much). */
const keyRecordsWriteIntervalMs = 5000;
/** Least time between two log lines about keys turned away busy. */
const busyLogEveryMs = 10_000;

/**
 * A log line at most every `busyLogEveryMs` while keys are turned away busy: how many since the last line, and the
 * address that sent most of them (a flood's source, for the operator; the count is in auth_denials{verifier_busy}).
 */
function busyReporter(logger: Logger, queue: () => VerifyQueue, now: () => number): (address: string) => void {
  let lastLogAt = Number.NEGATIVE_INFINITY;
  const since = new Map<string, number>();
  return (address) => {
    if (since.has(address) || since.size < 100) since.set(address, (since.get(address) ?? 0) + 1);
    const at = now();
    if (at - lastLogAt < busyLogEveryMs) return;
    const [top, fromTop] = [...since].reduce((a, b) => (b[1] > a[1] ? b : a));
    const turnedAway = [...since.values()].reduce((a, b) => a + b, 0);
    logger.warn({ turnedAway, busiestAddress: top, fromBusiest: fromTop, ...queue().size() }, 'key checks busy: keys turned away with 429');
    lastLogAt = at;
    since.clear();
  };
}

/** Dependencies of createKeyVerification. */
export interface KeyVerificationDeps {
  readonly config: Pick<Config, 'upstream' | 'auth' | 'keyChecks' | 'snapshotDir'>;
  readonly staticKeys: readonly StaticKey[];
  readonly store: Store;
  /** null offline: only the own key and static keys are known then. */
  readonly upstream: UpstreamClient | null;
  /** Fleet mode: key checks shared through Redis; null otherwise. */
  readonly shared: SharedKeys | null;
  /** Seals the key records file (null offline, where there is none). */
  readonly integrity: Integrity | null;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly now: () => number;
}

/** The key verification parts (null where not configured). */
export interface KeyVerification {
  readonly resolver: PrincipalResolver;
  readonly introspector: Introspector | null;
  readonly secretKeys: SecretKeyVerifier | null;
  /** The verified key records file; `flush()` it at shutdown. */
  readonly keyRecords: KeyRecordSync | null;
}

/** Create the key verification parts, restoring remembered keys first; rejects only when that restore does. */
export async function createKeyVerification(deps: KeyVerificationDeps): Promise<KeyVerification> {
  const { config, store, upstream, shared, metrics, logger, now } = deps;
  const resolver = createPrincipalResolver({
    ownKey: config.upstream?.key ?? null,
    ownProjects: store.projectIds(),
    staticKeys: deps.staticKeys,
  });
  let keyRecords: KeyRecordSync | null = null;
  const onChange = (): void => keyRecords?.changed();
  // One gate for every key verification upstream, introspections and grants alike.
  const queue: VerifyQueue = createVerifyQueue({
    ...verifyQueueDefaults,
    minInFlight: Math.min(verifyQueueDefaults.minInFlight, config.keyChecks.maxInFlight),
    ...config.keyChecks,
    now: () => performance.now(),
    onBusy: busyReporter(logger, () => queue, () => performance.now()),
  });
  metrics.observeKeyChecks(() => queue.size());
  const introspector =
    upstream && config.upstream
      ? createIntrospector({ client: upstream, metrics, logger, now, queue, onChange, shared, ...config.auth })
      : null;
  const secretKeys =
    upstream && config.upstream
      ? createSecretKeyVerifier({ client: upstream, store, metrics, logger, now, queue, onChange, shared, ...config.auth })
      : null;
  if (config.snapshotDir && introspector && secretKeys && deps.integrity) {
    keyRecords = createKeyRecordSync({
      store: createKeyRecordFile({ dir: config.snapshotDir, maxRecords: config.auth.maxEntries, integrity: deps.integrity, logger, metrics, now }),
      sources: [introspector, secretKeys],
      logger,
      now,
      ttlMs: config.auth.ttlMs,
      graceMs: config.auth.graceMs,
      intervalMs: keyRecordsWriteIntervalMs,
    });
    await keyRecords.restore();
  }
  return { resolver, introspector, secretKeys, keyRecords };
}
