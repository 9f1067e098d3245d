/**
 * Typed metric handles on a registry passed in (never prom-client's global one). The sidecar's own names carry
 * the `flag_sidecar_` prefix and base units; labels are route names, project ids from configuration and
 * fixed outcome words, so every label set is bounded. The process and Node.js collectors keep their standard
 * names (process_*, nodejs_*), which the usual dashboards query.
 */
import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from './prom.js';
import { createRouteStats } from './route-stats.js';

/** What /status and the gauges read about each project's snapshot. */
export interface SnapshotGaugeSource {
  readonly project: string;
  readonly ageSeconds: number | null;
  readonly flags: number;
}

/** What the persistence gauges read about each project (only with FLAG_SIDECAR_SNAPSHOT_DIR). */
export interface PersistGaugeSource {
  readonly project: string;
  /** The newest snapshot is not on disk yet (queued, being written or waiting for a retry). */
  readonly pending: boolean;
  /** Epoch seconds of the last successful write; null before the first. */
  readonly lastSuccessSeconds: number | null;
}

/** Build identity, surfaced as flag_sidecar_build_info. */
export interface BuildInfo {
  readonly version: string;
  readonly commit: string;
}

/**
 * prom-client's default gauges whose names end in `_total`, which Prometheus reserves for counters (`promtool
 * check metrics` refuses them); each is the sum of its per-type gauge without the suffix (nodejs_active_handles…).
 */
const misnamedDefaults = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

const latencyBuckets = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Runs of one named endpoint answered, by source (see flag_sidecar_endpoint_runs_total). */
export interface EndpointRunCounts {
  cache: number;
  upstream: number;
  stale: number;
  failed: number;
}

/** Create every metric of the sidecar on `registry`. */
export function createMetrics(registry: Registry, build: BuildInfo) {
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  for (const name of misnamedDefaults) registry.removeSingleMetric(name);
  let snapshots: () => readonly SnapshotGaugeSource[] = () => [];
  let persisted: () => readonly PersistGaugeSource[] = () => [];
  const listeners = new Map<string, { readonly max: number; readonly open: () => Promise<number> }>();
  let cacheSize: () => { entries: number; bytes: number } = () => ({ entries: 0, bytes: 0 });
  let keyChecks: () => { running: number; queued: number; limit: number } = () => ({ running: 0, queued: 0, limit: 0 });
  const tally = () => ({ hit: 0, miss: 0, coalesced: 0, stale: 0 });
  const lookups = { read_through: tally(), remote_config: tally(), endpoint_run: tally(), flags_answer: tally() };
  const evaluations = { local: 0, upstream: 0, unresolved: 0 };
  /** Run counts per endpoint label (a bounded set), by source. */
  const endpointRuns = new Map<string, EndpointRunCounts>();
  new Counter({
    name: 'flag_sidecar_endpoint_runs_total',
    help: 'Named endpoint runs answered, by endpoint (FLAG_SIDECAR_ENDPOINT_METRIC_NAMES, else the first 20 names upstream confirmed with a 2xx run; the rest `other`) and source: cache, upstream, stale (upstream failing), failed (no answer). Upstream run latency and 429s: flag_sidecar_upstream_request_duration_seconds and flag_sidecar_upstream_requests_total{operation="endpoint_run"}.',
    labelNames: ['endpoint', 'source'] as const,
    registers,
    collect() {
      this.reset();
      for (const [endpoint, counts] of endpointRuns) {
        for (const [source, count] of Object.entries(counts)) if (count > 0) this.inc({ endpoint, source }, count);
      }
    },
  });
  new Counter({
    name: 'flag_sidecar_flag_evaluations_total',
    help: 'Flags answered by the evaluation endpoints (/flags, /decide, evaluation_reasons), by where the value came from: local (decided from the snapshot), upstream (inconclusive locally, decided by upstream /flags), unresolved (neither: reported with errorsWhileComputingFlags).',
    labelNames: ['source'] as const,
    registers,
    collect() {
      this.reset();
      for (const [source, count] of Object.entries(evaluations)) if (count > 0) this.inc({ source }, count);
    },
  });
  new Counter({
    name: 'flag_sidecar_cache_lookups_total',
    help: 'Cache lookups by cache (read_through, remote_config, endpoint_run; flags_answer: whole /flags answers reused for a body sent again, FLAG_SIDECAR_FLAGS_ANSWER_CACHE_MAX_BYTES) and result: hit (fresh entry), miss (fetched upstream; flags_answer: evaluated afresh), coalesced (joined a fetch under way), stale (served past TTL while upstream fails).',
    labelNames: ['cache', 'result'] as const,
    registers,
    collect() {
      this.reset();
      for (const [cache, results] of Object.entries(lookups)) {
        for (const [result, count] of Object.entries(results)) if (count > 0) this.inc({ cache, result }, count);
      }
    },
  });

  new Gauge({
    name: 'flag_sidecar_build_info',
    help: 'Build information; always 1.',
    labelNames: ['version', 'commit', 'node'],
    registers,
  }).set({ version: build.version, commit: build.commit, node: process.version }, 1);

  const metrics = {
    /** API requests per route name and status, and their latency (cheap on the hot path). */
    http: createRouteStats({
      registry,
      counterName: 'flag_sidecar_http_requests_total',
      counterHelp: 'API requests answered, by route name and status code.',
      histogramName: 'flag_sidecar_http_request_duration_seconds',
      histogramHelp: 'Time to answer an API request, by route name.',
      buckets: latencyBuckets,
    }),
    upstreamRequests: new Counter({
      name: 'flag_sidecar_upstream_requests_total',
      help: 'Requests made upstream, by operation and status code or failure cause.',
      labelNames: ['operation', 'status'] as const,
      registers,
    }),
    upstreamDuration: new Histogram({
      name: 'flag_sidecar_upstream_request_duration_seconds',
      help: 'Upstream request latency including the body, by operation.',
      labelNames: ['operation'] as const,
      buckets: latencyBuckets,
      registers,
    }),
    polls: new Counter({
      name: 'flag_sidecar_polls_total',
      help: 'Poll outcomes per project and variant (updated, not_modified, quota_limited, refused, failed, invalid).',
      labelNames: ['project', 'variant', 'outcome'] as const,
      registers,
    }),
    authDenials: new Counter({
      name: 'flag_sidecar_auth_denials_total',
      help: 'Requests refused by authentication or authorization, by reason: no_credential, unknown_key, malformed_key, wrong_key_kind, forbidden, unknown_project, throttled (upstream 429), verifier_busy (too many keys being verified: 429), unverifiable (upstream unreachable: 503).',
      labelNames: ['reason'] as const,
      registers,
    }),
    principalCache: new Counter({
      name: 'flag_sidecar_principal_cache_total',
      help: 'Principal cache lookups for introspected keys: hit, miss, stale (served past TTL while upstream is unreachable).',
      labelNames: ['result'] as const,
      registers,
    }),
    introspections: new Counter({
      name: 'flag_sidecar_key_introspections_total',
      help: 'Upstream key introspections by outcome (valid, rejected, refused, failed, invalid_body).',
      labelNames: ['outcome'] as const,
      registers,
    }),
    introspectionDuration: new Histogram({
      name: 'flag_sidecar_key_introspection_duration_seconds',
      help: 'Latency of upstream key introspection.',
      buckets: latencyBuckets,
      registers,
    }),
    persistFailures: new Counter({
      name: 'flag_sidecar_snapshot_persist_failures_total',
      help: 'Failed attempts to write a project\'s snapshot to FLAG_SIDECAR_SNAPSHOT_DIR (each retry that fails counts), per project.',
      labelNames: ['project'] as const,
      registers,
    }),
    keyRecordFile: new Counter({
      name: 'flag_sidecar_key_record_file_operations_total',
      help: 'Reads (at start) and writes of the verified key records file in FLAG_SIDECAR_SNAPSHOT_DIR, by operation (load, save) and outcome (ok, ignored, failed).',
      labelNames: ['operation', 'outcome'] as const,
      registers,
    }),
    unverifiableState: new Counter({
      name: 'flag_sidecar_unverifiable_state_total',
      help: 'Shared state ignored because its seal did not verify (unsealed, another secret, altered), by kind: snapshot_head, snapshot_body, key_entry, endpoint_run, endpoint_grant (Redis), key_records_file, snapshot_file (the snapshot volume).',
      labelNames: ['kind'] as const,
      registers,
    }),
    snapshotLoads: new Counter({
      name: 'flag_sidecar_snapshot_loads_total',
      help: 'Snapshot files read at start, by source (disk, bootstrap) and outcome (loaded, rejected).',
      labelNames: ['source', 'outcome'] as const,
      registers,
    }),
    /** Cache lookups by cache and result; a plain tally on the hot path, rendered at scrape time. */
    cacheLookups: {
      inc(labels: { cache: keyof typeof lookups; result: keyof (typeof lookups)['read_through'] }): void {
        lookups[labels.cache][labels.result] += 1;
      },
      /** One cache's tally, for a caller counting on the hot path (no label object per lookup). */
      of(cache: keyof typeof lookups): Record<keyof (typeof lookups)['read_through'], number> {
        return lookups[cache];
      },
    },
    /** Flags answered by the evaluation endpoints; a plain tally on the hot path, rendered at scrape time. */
    flagEvaluations: {
      add(source: keyof typeof evaluations, count: number): void {
        evaluations[source] += count;
      },
    },
    /**
     * Named endpoint runs by endpoint label (a bounded set) and source: the tally of one label, which the caller
     * keeps and increments on the hot path; rendered at scrape time.
     */
    endpointRuns(endpoint: string): EndpointRunCounts {
      let counts = endpointRuns.get(endpoint);
      if (counts === undefined) {
        counts = { cache: 0, upstream: 0, stale: 0, failed: 0 };
        endpointRuns.set(endpoint, counts);
      }
      return counts;
    },
    forwardedWrites: new Counter({
      name: 'flag_sidecar_forwarded_writes_total',
      help: 'Writes forwarded upstream, by route name and upstream status code (or failure cause).',
      labelNames: ['route', 'status'] as const,
      registers,
    }),
    /** Let the cache gauges read the read-through cache (called once it exists). */
    observeCache(source: () => { entries: number; bytes: number }): void {
      cacheSize = source;
    },
    connectionsDropped: new Counter({
      name: 'flag_sidecar_http_connections_dropped_total',
      help: 'New connections closed at once, unanswered, because their listener (api, ops) held its most open connections (FLAG_SIDECAR_MAX_CONNECTIONS, FLAG_SIDECAR_OPS_MAX_CONNECTIONS) with a request being worked on in every one.',
      labelNames: ['listener'] as const,
      registers,
    }),
    connectionsEvicted: new Counter({
      name: 'flag_sidecar_http_connections_evicted_total',
      help: 'Open connections closed to make room for a new one because their listener (api, ops) was at its cap, by what each was doing: idle (kept alive between requests), head (waiting for a request head), body (a request body still arriving; answered 408).',
      labelNames: ['listener', 'standing'] as const,
      registers,
    }),
    /** Let the connection gauges read a listener's open connections and its cap. */
    observeListener(listener: string, source: { readonly max: number; readonly open: () => Promise<number> }): void {
      listeners.set(listener, source);
    },
    /** Let the key check gauge read the verification queue (called once it exists). */
    observeKeyChecks(source: () => { running: number; queued: number; limit: number }): void {
      keyChecks = source;
    },
    /** Let the persistence gauges read the persistence state (called when there is a snapshot directory). */
    observePersistence(source: () => readonly PersistGaugeSource[]): void {
      persisted = source;
    },
    /** Let the snapshot gauges read the store (called once the store exists). */
    observeSnapshots(source: () => readonly SnapshotGaugeSource[]): void {
      snapshots = source;
    },
  };

  new Gauge({
    name: 'flag_sidecar_snapshot_age_seconds',
    help: 'Seconds since the served snapshot was fetched from upstream, per project (absent until one exists).',
    labelNames: ['project'] as const,
    registers,
    collect() {
      this.reset();
      for (const s of snapshots()) if (s.ageSeconds !== null) this.set({ project: s.project }, s.ageSeconds);
    },
  });
  new Gauge({
    name: 'flag_sidecar_snapshot_flags',
    help: 'Flags in the served snapshot, per project.',
    labelNames: ['project'] as const,
    registers,
    collect() {
      this.reset();
      for (const s of snapshots()) this.set({ project: s.project }, s.flags);
    },
  });
  new Gauge({
    name: 'flag_sidecar_snapshot_persist_pending',
    help: '1 while the project\'s newest snapshot is not on disk in FLAG_SIDECAR_SNAPSHOT_DIR (being written, or waiting to be retried after a failed write), else 0. Absent without a snapshot directory.',
    labelNames: ['project'] as const,
    registers,
    collect() {
      this.reset();
      for (const p of persisted()) this.set({ project: p.project }, p.pending ? 1 : 0);
    },
  });
  new Gauge({
    name: 'flag_sidecar_snapshot_persist_last_success_timestamp_seconds',
    help: 'Unix time of the last successful write of the project\'s snapshot to FLAG_SIDECAR_SNAPSHOT_DIR (absent until the first since start).',
    labelNames: ['project'] as const,
    registers,
    collect() {
      this.reset();
      for (const p of persisted()) if (p.lastSuccessSeconds !== null) this.set({ project: p.project }, p.lastSuccessSeconds);
    },
  });
  new Gauge({
    name: 'flag_sidecar_http_open_connections',
    help: 'Connections open on each listener (api, ops), keep-alive ones included.',
    labelNames: ['listener'] as const,
    registers,
    async collect() {
      this.reset();
      for (const [listener, source] of listeners) this.set({ listener }, await source.open());
    },
  });
  new Gauge({
    name: 'flag_sidecar_http_max_connections',
    help: 'The most connections each listener (api, ops) holds open; past it an idle or waiting one is closed to make room.',
    labelNames: ['listener'] as const,
    registers,
    collect() {
      this.reset();
      for (const [listener, source] of listeners) this.set({ listener }, source.max);
    },
  });
  new Gauge({
    name: 'flag_sidecar_cache_entries',
    help: 'Responses held by the read-through cache.',
    registers,
    collect() {
      this.set(cacheSize().entries);
    },
  });
  new Gauge({
    name: 'flag_sidecar_cache_bytes',
    help: 'Bytes held by the read-through cache (bodies plus a fixed overhead per entry), bounded by FLAG_SIDECAR_CACHE_MAX_BYTES.',
    registers,
    collect() {
      this.set(cacheSize().bytes);
    },
  });
  new Gauge({
    name: 'flag_sidecar_key_checks',
    help: 'Checks of unknown keys upstream, by state: running, queued (waiting their turn), limit (how many may run at once now: follows upstream latency up to FLAG_SIDECAR_KEY_CHECKS_MAX_IN_FLIGHT).',
    labelNames: ['state'] as const,
    registers,
    collect() {
      for (const [state, value] of Object.entries(keyChecks())) this.set({ state }, value);
    },
  });
  return metrics;
}

/** The metric handles the rest of the sidecar is given. */
export type Metrics = ReturnType<typeof createMetrics>;
