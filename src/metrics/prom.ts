/**
 * prom-client's metric classes and default collectors, loaded file by file instead of through its index. The
 * index also loads what the sidecar never uses — the Pushgateway (https, tls), Summary (tdigest), the cluster
 * aggregator — and its process CPU collector loads @opentelemetry/api (51 modules, for exemplars the sidecar
 * never records): 1.5-2 MiB of the idle sidecar's RSS (docs/benchmarks.md as of c3f48ec, "Footprint and start-up"). Types are the
 * package's own (prom-files.d.ts); the paths are prom-client 15's (the lock file pins it): a release that moves
 * them fails the build (esbuild resolves each) and every test. Static imports, so that the build bundles them
 * (scripts/build.mjs): resolved by node one by one, these files alone made node's path functions hot enough at
 * start to be optimized, paging in V8's optimizing compiler in an otherwise idle process.
 */
import type * as Prom from 'prom-client';
import counter from 'prom-client/lib/counter.js';
import gauge from 'prom-client/lib/gauge.js';
import histogram from 'prom-client/lib/histogram.js';
import eventLoopLag from 'prom-client/lib/metrics/eventLoopLag.js';
import gc from 'prom-client/lib/metrics/gc.js';
import heapSizeAndUsed from 'prom-client/lib/metrics/heapSizeAndUsed.js';
import heapSpacesSizeAndUsed from 'prom-client/lib/metrics/heapSpacesSizeAndUsed.js';
import osMemoryHeap from 'prom-client/lib/metrics/osMemoryHeap.js';
import processHandles from 'prom-client/lib/metrics/processHandles.js';
import processMaxFileDescriptors from 'prom-client/lib/metrics/processMaxFileDescriptors.js';
import processOpenFileDescriptors from 'prom-client/lib/metrics/processOpenFileDescriptors.js';
import processRequests from 'prom-client/lib/metrics/processRequests.js';
import processResources from 'prom-client/lib/metrics/processResources.js';
import processStartTime from 'prom-client/lib/metrics/processStartTime.js';
import version from 'prom-client/lib/metrics/version.js';
import registry from 'prom-client/lib/registry.js';

export const Registry = registry;
export type Registry = Prom.Registry;
export const Counter = counter;
export type Counter<T extends string = string> = Prom.Counter<T>;
export const Gauge = gauge;
export type Gauge<T extends string = string> = Prom.Gauge<T>;
export const Histogram = histogram;
export type Histogram<T extends string = string> = Prom.Histogram<T>;

/** prom-client's default collectors after the CPU one, in its order (lib/defaultMetrics.js). */
const collectors = [
  processStartTime,
  osMemoryHeap,
  processOpenFileDescriptors,
  processMaxFileDescriptors,
  eventLoopLag,
  processResources,
  processHandles,
  processRequests,
  heapSizeAndUsed,
  heapSpacesSizeAndUsed,
  version,
  gc,
];

/** process_cpu_user_seconds_total, _system_ and process_cpu_seconds_total as prom-client's collector has them. */
function processCpu(registry: Registry): void {
  let last = process.cpuUsage();
  new Counter({
    name: 'process_cpu_user_seconds_total',
    help: 'Total user CPU time spent in seconds.',
    registers: [registry],
    // Registered first, so collected first: brings the three counters up to date at each scrape.
    collect() {
      const usage = process.cpuUsage();
      const user = (usage.user - last.user) / 1e6;
      const system = (usage.system - last.system) / 1e6;
      last = usage;
      this.inc(user);
      systemSeconds.inc(system);
      totalSeconds.inc(user + system);
    },
  });
  const systemSeconds = new Counter({ name: 'process_cpu_system_seconds_total', help: 'Total system CPU time spent in seconds.', registers: [registry] });
  const totalSeconds = new Counter({ name: 'process_cpu_seconds_total', help: 'Total user and system CPU time spent in seconds.', registers: [registry] });
}

/** prom-client's collectDefaultMetrics on `registry` (same metrics, names and help), without its index. */
export function collectDefaultMetrics({ register }: { register: Registry }): void {
  processCpu(register);
  for (const collector of collectors) {
    if (collector === processResources && typeof process.getActiveResourcesInfo !== 'function') continue;
    collector(register, { eventLoopMonitoringPrecision: 10 });
  }
}
