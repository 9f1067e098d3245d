/**
 * prom-client's metric classes and default collectors, loaded file by file instead of through its index. The
 * index also loads what the sidecar never uses — the Pushgateway (https, tls), Summary (tdigest), the cluster
 * aggregator — and its process CPU collector loads @opentelemetry/api (51 modules, for exemplars the sidecar
 * never records): 1.5-2 MiB of the idle sidecar's RSS (docs/benchmarks.md, "Footprint and start-up"). Types are the
 * package's own; the paths are prom-client 15's (the lock file pins it): a release that moves them fails at
 * start, so every test fails with it.
 */
import { createRequire } from 'node:module';
import type * as Prom from 'prom-client';

const require = createRequire(import.meta.url);

export const Registry = require('prom-client/lib/registry') as typeof Prom.Registry;
export type Registry = Prom.Registry;
export const Counter = require('prom-client/lib/counter') as typeof Prom.Counter;
export type Counter<T extends string = string> = Prom.Counter<T>;
export const Gauge = require('prom-client/lib/gauge') as typeof Prom.Gauge;
export type Gauge<T extends string = string> = Prom.Gauge<T>;
export const Histogram = require('prom-client/lib/histogram') as typeof Prom.Histogram;
export type Histogram<T extends string = string> = Prom.Histogram<T>;

type Collector = (registry: Registry, config: { eventLoopMonitoringPrecision: number }) => void;

/** prom-client's default collectors after the CPU one, in its order (lib/defaultMetrics.js). */
const collectorFiles = [
  'processStartTime',
  'osMemoryHeap',
  'processOpenFileDescriptors',
  'processMaxFileDescriptors',
  'eventLoopLag',
  'processResources',
  'processHandles',
  'processRequests',
  'heapSizeAndUsed',
  'heapSpacesSizeAndUsed',
  'version',
  'gc',
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
  for (const file of collectorFiles) {
    if (file === 'processResources' && typeof process.getActiveResourcesInfo !== 'function') continue;
    (require(`prom-client/lib/metrics/${file}`) as Collector)(register, { eventLoopMonitoringPrecision: 10 });
  }
}
