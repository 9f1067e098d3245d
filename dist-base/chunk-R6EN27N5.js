import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);
import {
  Counter,
  Gauge,
  Histogram,
  collectDefaultMetrics
} from "./chunk-STRLSS22.js";

// src/metrics/route-stats.ts
function createRouteStats(options) {
  const { buckets } = options;
  const bounds = Float64Array.from(buckets);
  const routes = /* @__PURE__ */ new Map();
  let lastRoute = "";
  let lastEntry = null;
  const entryFor = (route) => {
    let entry = routes.get(route);
    if (entry === void 0) {
      entry = { byStatus: new Float64Array(600), otherStatus: /* @__PURE__ */ new Map(), buckets: new Float64Array(buckets.length + 1), sum: 0, count: 0 };
      routes.set(route, entry);
    }
    return entry;
  };
  const counter = {
    name: options.counterName,
    help: options.counterHelp,
    type: "counter",
    aggregator: "sum",
    get() {
      const values = [];
      for (const [route, entry] of routes) {
        entry.byStatus.forEach((value, status) => {
          if (value > 0) values.push({ labels: { route, status }, value });
        });
        for (const [status, value] of entry.otherStatus) values.push({ labels: { route, status }, value });
      }
      return { name: counter.name, help: counter.help, type: counter.type, aggregator: counter.aggregator, values };
    },
    reset() {
      routes.clear();
      lastEntry = null;
    }
  };
  const histogram = {
    name: options.histogramName,
    help: options.histogramHelp,
    type: "histogram",
    aggregator: "sum",
    get() {
      const values = [];
      const bucketName = `${histogram.name}_bucket`;
      for (const [route, entry] of routes) {
        let cumulative = 0;
        buckets.forEach((le, i) => {
          cumulative += entry.buckets[i];
          values.push({ labels: { le, route }, value: cumulative, metricName: bucketName });
        });
        values.push({ labels: { le: "+Inf", route }, value: entry.count, metricName: bucketName });
        values.push({ labels: { route }, value: entry.sum, metricName: `${histogram.name}_sum` });
        values.push({ labels: { route }, value: entry.count, metricName: `${histogram.name}_count` });
      }
      return { name: histogram.name, help: histogram.help, type: histogram.type, aggregator: histogram.aggregator, values };
    },
    reset() {
      routes.clear();
      lastEntry = null;
    }
  };
  options.registry.registerMetric(counter);
  options.registry.registerMetric(histogram);
  return {
    /** Count one answered request of `route` with `status`, taking `seconds`. */
    record(route, status, seconds) {
      let entry = lastEntry;
      if (route !== lastRoute || entry === null) {
        entry = entryFor(route);
        lastRoute = route;
        lastEntry = entry;
      }
      if (status >= 100 && status < 600) entry.byStatus[status]++;
      else entry.otherStatus.set(status, (entry.otherStatus.get(status) ?? 0) + 1);
      let i = 0;
      while (i < bounds.length && seconds > bounds[i]) i++;
      entry.buckets[i]++;
      entry.sum += seconds;
      entry.count++;
    }
  };
}

// src/metrics/metrics.ts
var misnamedDefaults = ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"];
var latencyBuckets = [1e-4, 25e-5, 5e-4, 1e-3, 25e-4, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
function createMetrics(registry, build) {
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  for (const name of misnamedDefaults) registry.removeSingleMetric(name);
  let snapshots = () => [];
  let persisted = () => [];
  const listeners = /* @__PURE__ */ new Map();
  let cacheSize = () => ({ entries: 0, bytes: 0 });
  const tally = () => ({ hit: 0, miss: 0, coalesced: 0, stale: 0 });
  const lookups = { read_through: tally(), remote_config: tally(), endpoint_run: tally(), flags_answer: tally() };
  const evaluations = { local: 0, upstream: 0, unresolved: 0 };
  const endpointRuns = /* @__PURE__ */ new Map();
  new Counter({
    name: "flag_sidecar_endpoint_runs_total",
    help: 'Named endpoint runs answered, by endpoint (FLAG_SIDECAR_ENDPOINT_METRIC_NAMES, else the first 20 names upstream confirmed with a 2xx run; the rest `other`) and source: cache, upstream, stale (upstream failing), failed (no answer). Upstream run latency and 429s: flag_sidecar_upstream_request_duration_seconds and flag_sidecar_upstream_requests_total{operation="endpoint_run"}.',
    labelNames: ["endpoint", "source"],
    registers,
    collect() {
      this.reset();
      for (const [endpoint, counts] of endpointRuns) {
        for (const [source, count] of Object.entries(counts)) if (count > 0) this.inc({ endpoint, source }, count);
      }
    }
  });
  new Counter({
    name: "flag_sidecar_flag_evaluations_total",
    help: "Flags answered by the evaluation endpoints (/flags, /decide, evaluation_reasons), by where the value came from: local (decided from the snapshot), upstream (inconclusive locally, decided by upstream /flags), unresolved (neither: reported with errorsWhileComputingFlags).",
    labelNames: ["source"],
    registers,
    collect() {
      this.reset();
      for (const [source, count] of Object.entries(evaluations)) if (count > 0) this.inc({ source }, count);
    }
  });
  new Counter({
    name: "flag_sidecar_cache_lookups_total",
    help: "Cache lookups by cache (read_through, remote_config, endpoint_run; flags_answer: whole /flags answers reused for a body sent again, FLAG_SIDECAR_FLAGS_ANSWER_CACHE_MAX_BYTES) and result: hit (fresh entry), miss (fetched upstream; flags_answer: evaluated afresh), coalesced (joined a fetch under way), stale (served past TTL while upstream fails).",
    labelNames: ["cache", "result"],
    registers,
    collect() {
      this.reset();
      for (const [cache, results] of Object.entries(lookups)) {
        for (const [result, count] of Object.entries(results)) if (count > 0) this.inc({ cache, result }, count);
      }
    }
  });
  new Gauge({
    name: "flag_sidecar_build_info",
    help: "Build information; always 1.",
    labelNames: ["version", "commit", "node"],
    registers
  }).set({ version: build.version, commit: build.commit, node: process.version }, 1);
  const metrics = {
    /** API requests per route name and status, and their latency (cheap on the hot path). */
    http: createRouteStats({
      registry,
      counterName: "flag_sidecar_http_requests_total",
      counterHelp: "API requests answered, by route name and status code.",
      histogramName: "flag_sidecar_http_request_duration_seconds",
      histogramHelp: "Time to answer an API request, by route name.",
      buckets: latencyBuckets
    }),
    upstreamRequests: new Counter({
      name: "flag_sidecar_upstream_requests_total",
      help: "Requests made upstream, by operation and status code or failure cause.",
      labelNames: ["operation", "status"],
      registers
    }),
    upstreamDuration: new Histogram({
      name: "flag_sidecar_upstream_request_duration_seconds",
      help: "Upstream request latency including the body, by operation.",
      labelNames: ["operation"],
      buckets: latencyBuckets,
      registers
    }),
    polls: new Counter({
      name: "flag_sidecar_polls_total",
      help: "Poll outcomes per project and variant (updated, not_modified, quota_limited, refused, failed, invalid).",
      labelNames: ["project", "variant", "outcome"],
      registers
    }),
    authDenials: new Counter({
      name: "flag_sidecar_auth_denials_total",
      help: "Requests refused by authentication or authorization, by reason: no_credential, unknown_key, malformed_key, wrong_key_kind, forbidden, unknown_project, throttled (upstream 429), verifier_busy (too many keys being verified: 429), unverifiable (upstream unreachable: 503).",
      labelNames: ["reason"],
      registers
    }),
    principalCache: new Counter({
      name: "flag_sidecar_principal_cache_total",
      help: "Principal cache lookups for introspected keys: hit, miss, stale (served past TTL while upstream is unreachable).",
      labelNames: ["result"],
      registers
    }),
    introspections: new Counter({
      name: "flag_sidecar_key_introspections_total",
      help: "Upstream key introspections by outcome (valid, rejected, refused, failed, invalid_body).",
      labelNames: ["outcome"],
      registers
    }),
    introspectionDuration: new Histogram({
      name: "flag_sidecar_key_introspection_duration_seconds",
      help: "Latency of upstream key introspection.",
      buckets: latencyBuckets,
      registers
    }),
    persistFailures: new Counter({
      name: "flag_sidecar_snapshot_persist_failures_total",
      help: "Failed attempts to write a project's snapshot to FLAG_SIDECAR_SNAPSHOT_DIR (each retry that fails counts), per project.",
      labelNames: ["project"],
      registers
    }),
    keyRecordFile: new Counter({
      name: "flag_sidecar_key_record_file_operations_total",
      help: "Reads (at start) and writes of the verified key records file in FLAG_SIDECAR_SNAPSHOT_DIR, by operation (load, save) and outcome (ok, ignored, failed).",
      labelNames: ["operation", "outcome"],
      registers
    }),
    snapshotLoads: new Counter({
      name: "flag_sidecar_snapshot_loads_total",
      help: "Snapshot files read at start, by source (disk, bootstrap) and outcome (loaded, rejected).",
      labelNames: ["source", "outcome"],
      registers
    }),
    /** Cache lookups by cache and result; a plain tally on the hot path, rendered at scrape time. */
    cacheLookups: {
      inc(labels) {
        lookups[labels.cache][labels.result] += 1;
      },
      /** One cache's tally, for a caller counting on the hot path (no label object per lookup). */
      of(cache) {
        return lookups[cache];
      }
    },
    /** Flags answered by the evaluation endpoints; a plain tally on the hot path, rendered at scrape time. */
    flagEvaluations: {
      add(source, count) {
        evaluations[source] += count;
      }
    },
    /**
     * Named endpoint runs by endpoint label (a bounded set) and source: the tally of one label, which the caller
     * keeps and increments on the hot path; rendered at scrape time.
     */
    endpointRuns(endpoint) {
      let counts = endpointRuns.get(endpoint);
      if (counts === void 0) {
        counts = { cache: 0, upstream: 0, stale: 0, failed: 0 };
        endpointRuns.set(endpoint, counts);
      }
      return counts;
    },
    forwardedWrites: new Counter({
      name: "flag_sidecar_forwarded_writes_total",
      help: "Writes forwarded upstream, by route name and upstream status code (or failure cause).",
      labelNames: ["route", "status"],
      registers
    }),
    /** Let the cache gauges read the read-through cache (called once it exists). */
    observeCache(source) {
      cacheSize = source;
    },
    connectionsDropped: new Counter({
      name: "flag_sidecar_http_connections_dropped_total",
      help: "Connections closed at once because their listener (api, ops) held its most open connections (FLAG_SIDECAR_MAX_CONNECTIONS, FLAG_SIDECAR_OPS_MAX_CONNECTIONS).",
      labelNames: ["listener"],
      registers
    }),
    /** Let the connection gauges read a listener's open connections and its cap. */
    observeListener(listener, source) {
      listeners.set(listener, source);
    },
    /** Let the persistence gauges read the persistence state (called when there is a snapshot directory). */
    observePersistence(source) {
      persisted = source;
    },
    /** Let the snapshot gauges read the store (called once the store exists). */
    observeSnapshots(source) {
      snapshots = source;
    }
  };
  new Gauge({
    name: "flag_sidecar_snapshot_age_seconds",
    help: "Seconds since the served snapshot was fetched from upstream, per project (absent until one exists).",
    labelNames: ["project"],
    registers,
    collect() {
      this.reset();
      for (const s of snapshots()) if (s.ageSeconds !== null) this.set({ project: s.project }, s.ageSeconds);
    }
  });
  new Gauge({
    name: "flag_sidecar_snapshot_flags",
    help: "Flags in the served snapshot, per project.",
    labelNames: ["project"],
    registers,
    collect() {
      this.reset();
      for (const s of snapshots()) this.set({ project: s.project }, s.flags);
    }
  });
  new Gauge({
    name: "flag_sidecar_snapshot_persist_pending",
    help: "1 while the project's newest snapshot is not on disk in FLAG_SIDECAR_SNAPSHOT_DIR (being written, or waiting to be retried after a failed write), else 0. Absent without a snapshot directory.",
    labelNames: ["project"],
    registers,
    collect() {
      this.reset();
      for (const p of persisted()) this.set({ project: p.project }, p.pending ? 1 : 0);
    }
  });
  new Gauge({
    name: "flag_sidecar_snapshot_persist_last_success_timestamp_seconds",
    help: "Unix time of the last successful write of the project's snapshot to FLAG_SIDECAR_SNAPSHOT_DIR (absent until the first since start).",
    labelNames: ["project"],
    registers,
    collect() {
      this.reset();
      for (const p of persisted()) if (p.lastSuccessSeconds !== null) this.set({ project: p.project }, p.lastSuccessSeconds);
    }
  });
  new Gauge({
    name: "flag_sidecar_http_open_connections",
    help: "Connections open on each listener (api, ops), keep-alive ones included.",
    labelNames: ["listener"],
    registers,
    async collect() {
      this.reset();
      for (const [listener, source] of listeners) this.set({ listener }, await source.open());
    }
  });
  new Gauge({
    name: "flag_sidecar_http_max_connections",
    help: "The most connections each listener (api, ops) holds open; past it new ones are closed at once.",
    labelNames: ["listener"],
    registers,
    collect() {
      this.reset();
      for (const [listener, source] of listeners) this.set({ listener }, source.max);
    }
  });
  new Gauge({
    name: "flag_sidecar_cache_entries",
    help: "Responses held by the read-through cache.",
    registers,
    collect() {
      this.set(cacheSize().entries);
    }
  });
  new Gauge({
    name: "flag_sidecar_cache_bytes",
    help: "Bytes held by the read-through cache (bodies plus a fixed overhead per entry), bounded by FLAG_SIDECAR_CACHE_MAX_BYTES.",
    registers,
    collect() {
      this.set(cacheSize().bytes);
    }
  });
  return metrics;
}

export {
  createMetrics
};
//# sourceMappingURL=chunk-R6EN27N5.js.map
