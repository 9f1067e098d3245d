/**
 * The integrity of shared state, as one handle passed to every part that writes or reads state others could
 * write too (Redis, the snapshot volume): the sealer (seal.ts), and `unverifiable`, which every reader calls for
 * a value whose seal does not verify — counted in flag_sidecar_unverifiable_state_total{kind}, tallied for
 * /status and logged once per kind (a flood of forged values costs one log line). The reader then ignores the
 * value as it would a missing one.
 */
import type { Logger } from './logger.js';
import type { Metrics } from './metrics/metrics.js';
import { unverifiableReason, type Sealer } from './seal.js';

/** What kind of shared state a value is. */
export type StateKind = 'snapshot_head' | 'snapshot_body' | 'key_entry' | 'endpoint_run' | 'endpoint_grant' | 'key_records_file' | 'snapshot_file' | 'static_cohorts_head';

/** What /status shows of it. */
export interface IntegrityStatus {
  /** Where the sealing key comes from. */
  readonly seal: Sealer['source'];
  /** Values ignored because they did not verify, per kind, since start. */
  readonly unverifiable: Readonly<Record<string, number>>;
}

/** The integrity handle. */
export interface Integrity {
  readonly sealer: Sealer;
  /** Count and log (once per kind) a value of `kind` that did not verify; `where` names it (Redis key, file). */
  unverifiable(kind: StateKind, where: string, value: Buffer): void;
  status(): IntegrityStatus;
}

/** Create the handle for `sealer`. */
export function createIntegrity(deps: { readonly sealer: Sealer; readonly metrics: Metrics; readonly logger: Logger }): Integrity {
  const counts = new Map<StateKind, number>();
  return {
    sealer: deps.sealer,
    unverifiable(kind, where, value) {
      const seen = counts.get(kind) ?? 0;
      counts.set(kind, seen + 1);
      deps.metrics.unverifiableState.inc({ kind });
      if (seen === 0) deps.logger.warn({ kind, where, cause: unverifiableReason(value) }, 'ignoring shared state that does not verify (logged once per kind)');
    },
    status: () => ({ seal: deps.sealer.source, unverifiable: Object.fromEntries(counts) }),
  };
}
