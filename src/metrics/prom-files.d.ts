/**
 * Types of the prom-client files src/metrics/prom.ts imports one by one (the package types only its index): each
 * file's `module.exports`, as the index re-exports it.
 */
declare module 'prom-client/lib/registry.js' {
  import type { Registry } from 'prom-client';
  const registry: typeof Registry;
  export default registry;
}
declare module 'prom-client/lib/counter.js' {
  import type { Counter } from 'prom-client';
  const counter: typeof Counter;
  export default counter;
}
declare module 'prom-client/lib/gauge.js' {
  import type { Gauge } from 'prom-client';
  const gauge: typeof Gauge;
  export default gauge;
}
declare module 'prom-client/lib/histogram.js' {
  import type { Histogram } from 'prom-client';
  const histogram: typeof Histogram;
  export default histogram;
}
/** A default collector: registers its metrics on `registry`. */
declare module 'prom-client/lib/metrics/*.js' {
  import type { Registry } from 'prom-client';
  const collector: (registry: Registry, config: { eventLoopMonitoringPrecision: number }) => void;
  export default collector;
}
