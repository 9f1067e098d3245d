/**
 * The operations listener's routes: /healthz (process up, draining included), /readyz (every project has a
 * snapshot and the sidecar is not shutting down; it does not flip on upstream outages), /metrics (Prometheus
 * text from the registry passed in) and /status (JSON per project: source, ETag, age, last poll outcome, whether
 * it is serving stale data, and — with a snapshot directory — whether its snapshot is on disk: last write, last
 * error, pending retry).
 */
import type { Registry } from 'prom-client';
import type { Principal } from '../../auth/principal.js';
import type { FleetProjectStatus, FleetStatus } from '../../fleet/fleet.js';
import type { IntegrityStatus } from '../../integrity.js';
import type { PersistStatus } from '../../store/persist.js';
import type { PollStatus } from '../../upstream/poller.js';
import type { ProjectSnapshot, VariantSnapshot } from '../../store/snapshot.js';
import type { Store } from '../../store/store.js';
import { valueReply } from '../respond.js';
import type { Route } from '../router.js';

/** Dependencies of the ops routes. */
export interface OpsRouteDeps {
  readonly store: Store;
  readonly registry: Registry;
  readonly pollStatus: ((projectId: number) => PollStatus | null) | null;
  /** Persistence state per project; null without FLAG_SIDECAR_SNAPSHOT_DIR. */
  readonly persistStatus: ((projectId: number) => PersistStatus) | null;
  readonly pollIntervalMs: number;
  readonly build: { readonly version: string; readonly commit: string };
  readonly upstream: string | null;
  readonly keys: ReadonlyArray<Pick<Principal, 'label' | 'keyPrefix'>>;
  readonly startedAt: number;
  readonly now: () => number;
  /** Size of the read-through cache and its bounds. */
  readonly cache: () => { entries: number; bytes: number; max_bytes: number; max_entries: number };
  /** Size of the /flags answer cache and its bound; null or absent when it is off. */
  readonly answers?: (() => { entries: number; bytes: number; max_bytes: number }) | null;
  /** True once the sidecar is shutting down: /readyz answers 503 so no new traffic is routed here. */
  readonly draining?: () => boolean;
  /** Fleet mode: the fleet's state and each project's role in it; null or absent without fleet mode. */
  readonly fleet?: { readonly status: () => FleetStatus; readonly project: (projectId: number) => FleetProjectStatus | null } | null;
  /** Each static cohort of a project the flags reference (upstream/static-cohorts.ts); null or absent when off. */
  readonly staticCohorts?: ((projectId: number) => unknown[]) | null;
  /** The events relay's queue and last forward outcome; null or absent when the relay is off. */
  readonly events?: (() => unknown) | null;
  /** How shared state is sealed and what did not verify; null or absent when nothing is sealed (offline without a fleet secret). */
  readonly integrity?: (() => IntegrityStatus) | null;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function describeVariant(variant: VariantSnapshot | null, now: number) {
  if (!variant) return null;
  return {
    source: variant.source,
    etag: variant.etag,
    fetched_at: iso(variant.fetchedAt),
    age_seconds: Math.max(0, Math.floor((now - variant.fetchedAt) / 1000)),
    bytes: variant.body.length,
    flags: variant.definitions.flags.length,
    cohorts: variant.definitions.cohortCount,
  };
}

function describePersistence(state: PersistStatus) {
  return {
    ok: state.consecutiveFailures === 0,
    pending: state.pending,
    last_success_at: iso(state.lastSuccessAt),
    last_error: state.lastError && { message: state.lastError.message, at: iso(state.lastError.at) },
    consecutive_failures: state.consecutiveFailures,
    next_retry_at: iso(state.nextRetryAt),
  };
}

/** True when the project's data may be behind upstream: polls failing, or older than two intervals. */
export function isServingStale(project: ProjectSnapshot, poll: PollStatus | null, intervalMs: number, now: number): boolean {
  if (!project.cohorts) return false;
  if (poll !== null && poll.consecutiveFailures > 0) return true;
  return now - project.cohorts.fetchedAt > 2 * intervalMs;
}

/** The four ops routes. */
export function opsRoutes(deps: OpsRouteDeps): Route[] {
  const { store } = deps;
  const projectStatus = (project: ProjectSnapshot) => {
    const now = deps.now();
    const poll = deps.pollStatus ? deps.pollStatus(project.projectId) : null;
    return {
      project_id: project.projectId,
      token: project.token === null ? null : `${project.token.slice(0, 8)}…`,
      ready: project.cohorts !== null,
      serving_stale: deps.pollStatus ? isServingStale(project, poll, deps.pollIntervalMs, now) : false,
      quota_limited: project.quotaBody !== null,
      with_cohorts: describeVariant(project.cohorts, now),
      without_cohorts: describeVariant(project.plain, now),
      without_cohorts_wanted: project.plainWanted,
      last_poll: poll && {
        at: iso(poll.lastPollAt),
        outcome: poll.lastOutcome,
        error: poll.lastError,
        consecutive_failures: poll.consecutiveFailures,
        last_success_at: iso(poll.lastSuccessAt),
        next_poll_at: iso(poll.nextPollAt),
        without_cohorts: poll.plain && { at: iso(poll.plain.at), outcome: poll.plain.outcome, error: poll.plain.error },
      },
      persistence: deps.persistStatus && describePersistence(deps.persistStatus(project.projectId)),
      fleet: deps.fleet ? deps.fleet.project(project.projectId) : null,
      static_cohorts: deps.staticCohorts ? deps.staticCohorts(project.projectId) : null,
    };
  };
  return [
    { name: 'healthz', methods: ['GET'], template: '/healthz', handler: () => valueReply(200, { status: 'ok' }) },
    {
      name: 'readyz',
      methods: ['GET'],
      template: '/readyz',
      handler: () => {
        if (deps.draining?.()) return valueReply(503, { status: 'draining' });
        const waiting = store.list().filter((p) => p.cohorts === null).map((p) => p.projectId);
        return store.ready() ? valueReply(200, { status: 'ready' }) : valueReply(503, { status: 'not_ready', waiting_for_projects: waiting });
      },
    },
    {
      name: 'metrics',
      methods: ['GET'],
      template: '/metrics',
      handler: async () => {
        const body = Buffer.from(await deps.registry.metrics());
        return { status: 200, headers: { 'content-type': deps.registry.contentType, 'content-length': String(body.length) }, body };
      },
    },
    {
      name: 'status',
      methods: ['GET'],
      template: '/status',
      handler: () =>
        valueReply(200, {
          version: deps.build.version,
          commit: deps.build.commit,
          mode: deps.upstream === null ? 'offline' : 'online',
          fleet: deps.fleet ? deps.fleet.status() : null,
          events: deps.events ? deps.events() : null,
          integrity: deps.integrity ? deps.integrity() : null,
          upstream: deps.upstream,
          uptime_seconds: Math.floor((deps.now() - deps.startedAt) / 1000),
          ready: store.ready(),
          poll_interval_seconds: deps.pollIntervalMs / 1000,
          projects: store.list().map(projectStatus),
          keys: deps.keys.map((k) => ({ label: k.label, key_sha256_prefix: k.keyPrefix })),
          read_through_cache: deps.cache(),
          flags_answer_cache: deps.answers ? deps.answers() : null,
        }),
    },
  ];
}
