/**
 * Metrics of fleet mode (FLAG_SIDECAR_REDIS_URL), on the sidecar's registry; created only in fleet mode. Labels
 * are project ids from configuration and fixed words, so every label set is bounded.
 */
import { pollRoutes, type PollRoute } from '../fleet/fleet-budget.js';
import { Counter, Gauge, Histogram, type Registry } from './prom.js';

/** Fleet role of this sidecar for one project. */
export type FleetRole = 'leader' | 'follower' | 'direct';

/** What the role gauge reads per project. */
export interface RoleSource {
  readonly project: string;
  readonly role: FleetRole;
  /** How upstream is reached (fleet-budget.ts). */
  readonly route: PollRoute;
  readonly generation: number | null;
}

const redisBuckets = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

/** Create the fleet metrics on `registry`. */
export function createFleetMetrics(registry: Registry) {
  const registers = [registry];
  let roles: () => readonly RoleSource[] = () => [];
  let redisUp: () => boolean = () => false;
  const metrics = {
    redisErrors: new Counter({
      name: 'flag_sidecar_redis_errors_total',
      help: 'Redis commands that failed or timed out (FLAG_SIDECAR_REDIS_TIMEOUT), and connection errors (operation connection), by operation.',
      labelNames: ['operation'] as const,
      registers,
    }),
    redisDuration: new Histogram({
      name: 'flag_sidecar_redis_command_duration_seconds',
      help: 'Latency of Redis commands answered, by operation.',
      labelNames: ['operation'] as const,
      buckets: redisBuckets,
      registers,
    }),
    redisScriptLoads: new Counter({
      name: 'flag_sidecar_redis_script_loads_total',
      help: 'Scripts sent again with their text (EVAL) because Redis did not hold them (NOSCRIPT: its script cache was flushed or it restarted), by operation.',
      labelNames: ['operation'] as const,
      registers,
    }),
    leaseChanges: new Counter({
      name: 'flag_sidecar_fleet_lease_changes_total',
      help: "Changes of this sidecar's role per project: acquired (became leader), lost (another leader or Redis gone), released (at shutdown).",
      labelNames: ['project', 'change'] as const,
      registers,
    }),
    snapshotsReceived: new Counter({
      name: 'flag_sidecar_fleet_snapshots_total',
      help: 'Snapshot variants taken into the store, by project and source: upstream (this sidecar polled) or redis (published by the leader); rejected: a Redis copy that failed validation.',
      labelNames: ['project', 'source'] as const,
      registers,
    }),
    snapshotsPublished: new Counter({
      name: 'flag_sidecar_fleet_snapshots_published_total',
      help: 'Snapshot variants this sidecar published to Redis as leader, by project.',
      labelNames: ['project'] as const,
      registers,
    }),
    invalidations: new Counter({
      name: 'flag_sidecar_fleet_invalidations_total',
      help: 'Fleet-wide invalidations (a write through some sidecar), by direction: sent, received (from another sidecar and applied), or ignored (invalid or about a project not served here).',
      labelNames: ['direction'] as const,
      registers,
    }),
    sharedCache: new Counter({
      name: 'flag_sidecar_fleet_shared_cache_total',
      help: 'Lookups and writes of the caches shared in Redis, by cache (principal, grant, endpoint_run, endpoint_grant) and result (hit, miss, write, error: Redis unavailable or failed; invalid: an entry that failed validation and was ignored; skipped: not stored, too large or retired meanwhile).',
      labelNames: ['cache', 'result'] as const,
      registers,
    }),
    /** Read the per-project roles for flag_sidecar_fleet_role. */
    observeRoles(source: () => readonly RoleSource[]): void {
      roles = source;
    },
    /** Read Redis health for flag_sidecar_redis_up. */
    observeRedis(source: () => boolean): void {
      redisUp = source;
    },
  };
  new Gauge({
    name: 'flag_sidecar_fleet_role',
    help: "1 for this sidecar's current role per project: leader (polls upstream, publishes), follower (loads from Redis), direct (Redis unavailable: polls upstream itself).",
    labelNames: ['project', 'role'] as const,
    registers,
    collect() {
      this.reset();
      for (const r of roles()) for (const role of ['leader', 'follower', 'direct'] as const) this.set({ project: r.project, role }, r.role === role ? 1 : 0);
    },
  });
  new Gauge({
    name: 'flag_sidecar_poll_route',
    help: '1 for how this sidecar reaches upstream per project: fleet (leader or follower, one poll per fleet), direct_budgeted (Redis gone: direct at the interval stretched by the fleet size last seen, FLAG_SIDECAR_FLEET_OUTAGE_BUDGET), relay (direct, upstream is a flag-sidecar relay: normal interval), direct (no fleet size seen yet: normal interval).',
    labelNames: ['project', 'route'] as const,
    registers,
    collect() {
      this.reset();
      for (const r of roles()) for (const route of pollRoutes) this.set({ project: r.project, route }, r.route === route ? 1 : 0);
    },
  });
  new Gauge({
    name: 'flag_sidecar_fleet_snapshot_generation',
    help: "Generation of the fleet's snapshot this sidecar serves per project (the leader's fencing generation).",
    labelNames: ['project'] as const,
    registers,
    collect() {
      this.reset();
      for (const r of roles()) if (r.generation !== null) this.set({ project: r.project }, r.generation);
    },
  });
  new Gauge({
    name: 'flag_sidecar_redis_up',
    help: '1 while Redis is connected and answering (two commands timing out in a row mark it down until the next answer), else 0.',
    registers,
    collect() {
      this.set(redisUp() ? 1 : 0);
    },
  });
  return metrics;
}

/** The fleet metric handles. */
export type FleetMetrics = ReturnType<typeof createFleetMetrics>;
