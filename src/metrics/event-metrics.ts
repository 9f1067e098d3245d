/**
 * Metrics of the events relay (src/events), on the sidecar's registry. Labels are fixed words (refusal reasons,
 * outcome classes, `status_<code>`), so every label set is bounded.
 */
import { Counter, Gauge, Histogram, type Registry } from './prom.js';
import type { QueueDepth } from '../events/queue.js';

/** Create the events metrics on `registry`; `depth` and `spoolBytes` are read at scrape time. */
export function createEventMetrics(registry: Registry, depth: () => QueueDepth, spoolBytes: () => number = () => 0, intakeBytes: () => number = () => 0) {
  const registers = [registry];
  return {
    received: new Counter({ name: 'flag_sidecar_events_received_total', help: 'Events accepted into the queue.', registers }),
    refused: new Counter({
      name: 'flag_sidecar_events_refused_total',
      help: 'Capture requests refused, by reason (decode, parse, hydration, empty, event_name, distinct_id, cookieless, no_token, tokens, unknown_token, too_large, queue_full, busy: the capture memory budget stayed taken, offline).',
      labelNames: ['reason'] as const,
      registers,
    }),
    forwarded: new Counter({ name: 'flag_sidecar_events_forwarded_total', help: 'Events upstream accepted.', registers }),
    dropped: new Counter({
      name: 'flag_sidecar_events_dropped_total',
      help: 'Accepted events upstream refused for good (a 4xx for the event alone), by status; each is logged.',
      labelNames: ['reason'] as const,
      registers,
    }),
    retried: new Counter({
      name: 'flag_sidecar_events_retried_total',
      help: 'Events whose forwarding failed and is retried, by reason (status_<code> or a network cause).',
      labelNames: ['reason'] as const,
      registers,
    }),
    forwardDuration: new Histogram({
      name: 'flag_sidecar_events_forward_duration_seconds',
      help: 'Duration of successful batch forwards upstream.',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    queueEvents: new Gauge({
      name: 'flag_sidecar_events_queue_events',
      help: 'Events accepted and not yet forwarded (waiting and in flight).',
      registers,
      collect() {
        this.set(depth().events);
      },
    }),
    queueBytes: new Gauge({
      name: 'flag_sidecar_events_queue_bytes',
      help: 'Bytes of the events in the queue.',
      registers,
      collect() {
        this.set(depth().bytes);
      },
    }),
    intakeBytes: new Gauge({
      name: 'flag_sidecar_events_intake_bytes',
      help: 'Bytes of the capture memory budget held by requests being read, decoded and parsed (FLAG_SIDECAR_EVENTS_INTAKE_MAX_BYTES).',
      registers,
      collect() {
        this.set(intakeBytes());
      },
    }),
    spoolBytes: new Gauge({
      name: 'flag_sidecar_events_spool_bytes',
      help: 'Bytes of the events spool segment files on disk (0 without FLAG_SIDECAR_SNAPSHOT_DIR).',
      registers,
      collect() {
        this.set(spoolBytes());
      },
    }),
  };
}

/** The events metrics. */
export type EventMetrics = ReturnType<typeof createEventMetrics>;
