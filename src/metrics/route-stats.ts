/**
 * Request counts and latency per route, recorded on the hot path with a few array writes (and a Map lookup when
 * the route differs from the last one), and rendered as a Prometheus counter and histogram only when scraped.
 * prom-client's labelled `inc`/`observe` hash their label objects on every call, which cost more per request
 * than the whole snapshot handler; these two collectors keep the same exposition (names, labels, buckets)
 * without that cost.
 */
import type { Registry } from 'prom-client';

interface RouteEntry {
  /**
   * Answers by HTTP status, indexed by the status (100–599). Typed arrays here and for the buckets: never holey,
   * so the optimized `record` indexes them inline (holey arrays went through the generic keyed-load builtin).
   */
  readonly byStatus: Float64Array;
  /** Answers with a status outside 100–599 (node:http sends up to 999; upstream's are passed through as they are). */
  readonly otherStatus: Map<number, number>;
  readonly buckets: Float64Array;
  sum: number;
  count: number;
}

interface MetricValue {
  readonly labels: Record<string, string | number>;
  readonly value: number;
  readonly metricName?: string;
}

/** Options of createRouteStats. */
export interface RouteStatsOptions {
  readonly registry: Registry;
  readonly counterName: string;
  readonly counterHelp: string;
  readonly histogramName: string;
  readonly histogramHelp: string;
  /** Upper bounds in seconds, ascending. */
  readonly buckets: readonly number[];
}

/** Create and register the two collectors; `record` is the only hot-path call. */
export function createRouteStats(options: RouteStatsOptions) {
  const { buckets } = options;
  const bounds = Float64Array.from(buckets);
  const routes = new Map<string, RouteEntry>();
  let lastRoute = '';
  let lastEntry: RouteEntry | null = null;

  const entryFor = (route: string): RouteEntry => {
    let entry = routes.get(route);
    if (entry === undefined) {
      entry = { byStatus: new Float64Array(600), otherStatus: new Map(), buckets: new Float64Array(buckets.length + 1), sum: 0, count: 0 };
      routes.set(route, entry);
    }
    return entry;
  };

  const counter = {
    name: options.counterName,
    help: options.counterHelp,
    type: 'counter',
    aggregator: 'sum',
    get() {
      const values: MetricValue[] = [];
      for (const [route, entry] of routes) {
        entry.byStatus.forEach((value, status) => {
          if (value > 0) values.push({ labels: { route, status }, value });
        });
        for (const [status, value] of entry.otherStatus) values.push({ labels: { route, status }, value });
      }
      return { name: counter.name, help: counter.help, type: counter.type, aggregator: counter.aggregator, values };
    },
    reset(): void {
      routes.clear();
      lastEntry = null;
    },
  };

  const histogram = {
    name: options.histogramName,
    help: options.histogramHelp,
    type: 'histogram',
    aggregator: 'sum',
    get() {
      const values: MetricValue[] = [];
      const bucketName = `${histogram.name}_bucket`;
      for (const [route, entry] of routes) {
        let cumulative = 0;
        buckets.forEach((le, i) => {
          cumulative += entry.buckets[i] as number;
          values.push({ labels: { le, route }, value: cumulative, metricName: bucketName });
        });
        values.push({ labels: { le: '+Inf', route }, value: entry.count, metricName: bucketName });
        values.push({ labels: { route }, value: entry.sum, metricName: `${histogram.name}_sum` });
        values.push({ labels: { route }, value: entry.count, metricName: `${histogram.name}_count` });
      }
      return { name: histogram.name, help: histogram.help, type: histogram.type, aggregator: histogram.aggregator, values };
    },
    reset(): void {
      routes.clear();
      lastEntry = null;
    },
  };

  // Custom collectors: prom-client only calls name/get/reset on registered metrics.
  options.registry.registerMetric(counter as unknown as Parameters<Registry['registerMetric']>[0]);
  options.registry.registerMetric(histogram as unknown as Parameters<Registry['registerMetric']>[0]);

  return {
    /** Count one answered request of `route` with `status`, taking `seconds`. */
    record(route: string, status: number, seconds: number): void {
      // Requests come in runs of one route: the last entry is reused without a lookup.
      let entry = lastEntry;
      if (route !== lastRoute || entry === null) {
        entry = entryFor(route);
        lastRoute = route;
        lastEntry = entry;
      }
      if (status >= 100 && status < 600) (entry.byStatus[status] as number)++;
      else entry.otherStatus.set(status, (entry.otherStatus.get(status) ?? 0) + 1);
      let i = 0;
      while (i < bounds.length && seconds > (bounds[i] as number)) i++;
      (entry.buckets[i] as number)++;
      entry.sum += seconds;
      entry.count++;
    },
  };
}
