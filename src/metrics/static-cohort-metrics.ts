/**
 * Metrics of static cohort pulls (upstream/static-cohorts.ts), on the sidecar's registry. Labels are project ids
 * from configuration and fixed words, so every label set is bounded.
 */
import { Counter, Gauge, type Registry } from './prom.js';

/** What the gauges read per project. */
export interface StaticCohortGaugeSource {
  readonly project: string;
  /** Cohorts by state: `known` (members held, last check fine), `stale` (held, last attempt failed), `unknown` (none held). */
  readonly states: Readonly<Record<'known' | 'stale' | 'unknown', number>>;
  readonly distinctIds: number;
}

/** Create the static cohort metrics on `registry`. */
export function createStaticCohortMetrics(registry: Registry) {
  const registers = [registry];
  let source: () => readonly StaticCohortGaugeSource[] = () => [];
  new Gauge({
    name: 'flag_sidecar_static_cohorts',
    help: 'Static cohorts the flags reference, by state: known (members held and current), stale (members held, the last attempt failed), unknown (none held: their flags go upstream).',
    labelNames: ['project', 'state'] as const,
    registers,
    collect() {
      this.reset();
      for (const p of source()) for (const [state, n] of Object.entries(p.states)) this.set({ project: p.project, state }, n);
    },
  });
  new Gauge({
    name: 'flag_sidecar_static_cohort_distinct_ids',
    help: 'Distinct ids of static cohort members held, per project.',
    labelNames: ['project'] as const,
    registers,
    collect() {
      this.reset();
      for (const p of source()) this.set({ project: p.project }, p.distinctIds);
    },
  });
  return {
    checks: new Counter({
      name: 'flag_sidecar_static_cohort_checks_total',
      help: 'Checks of a static cohort, by outcome: unchanged (its record only), pulled (its persons read), unsettled (it kept changing while read), gone (404, deleted, not static), too_large, refused (401/403), throttled (429), failed; shared and shared_rejected for a fleet follower reading the lists from Redis.',
      labelNames: ['outcome'] as const,
      registers,
    }),
    /** Read the gauges' values from `read` at each scrape. */
    observe(read: () => readonly StaticCohortGaugeSource[]): void {
      source = read;
    },
  };
}

/** The static cohort metrics handle. */
export type StaticCohortMetrics = ReturnType<typeof createStaticCohortMetrics>;
