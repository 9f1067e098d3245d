/**
 * The events relay of one sidecar: the queue, the forwarder to FLAG_SIDECAR_EVENTS_URL's `/batch/` (its own
 * upstream client, so event traffic never queues behind flag polls), the metrics and the /status block. Made by
 * app.ts only when an events URL is known; `stop(budgetMs)` forwards what it can within the budget and logs how
 * many accepted events were left unforwarded.
 */
import type { Registry } from 'prom-client';
import type { Config, EventsConfig } from '../config/load.js';
import type { Logger } from '../logger.js';
import { createEventMetrics } from '../metrics/event-metrics.js';
import type { Metrics } from '../metrics/metrics.js';
import { createUpstreamClient } from '../upstream/client.js';
import { createForwarder, forwardConcurrency } from './forwarder.js';
import { createIntakeBudget, defaultIntakeBudget } from './intake-budget.js';
import { createMemoryQueue, type EventQueue } from './queue.js';
import { openSpool, type Spool, type SpoolReplay } from './spool.js';
import { createSpooledQueue } from './spooled-queue.js';

/** Dependencies of createEventRelay. */
export interface EventRelayDeps {
  readonly config: EventsConfig & { readonly url: URL };
  readonly upstreamTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly userAgent: string;
  readonly registry: Registry;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly now: () => number;
  readonly random: () => number;
}

/**
 * Create and start the relay. With `config.spool` the spool is opened first and the replay of what a previous run
 * left in it has started before this resolves (so before captures are served): it is read a part at a time as the
 * memory queue has room, so start-up and memory do not grow with the spool. A spool directory that cannot be
 * created or read (a read-only snapshot volume) is logged as an error and the relay runs on the memory queue
 * alone; /status then shows `spool: null`. Never rejects.
 */
export async function createEventRelay(deps: EventRelayDeps) {
  const { config, logger } = deps;
  const memory = createMemoryQueue(config.queue);
  let spool: Spool | null = null;
  let replay: SpoolReplay | null = null;
  let queue: EventQueue = memory;
  let dropReplayed = (_events: number): void => undefined;
  const opened = config.spool
    ? await openSpool({ dir: config.spool.dir, maxBytes: config.spool.maxBytes, logger }).catch((error: Error) => {
        logger.error({ err: error.message, dir: config.spool?.dir }, 'events spool: cannot open the spool directory; accepted events are held in memory only');
        return null;
      })
    : null;
  if (config.spool && opened) {
    spool = opened.spool;
    replay = opened.replay;
    const unread = opened.replay.unreadBytes();
    if (unread > 0) logger.info({ bytes: unread, dir: config.spool.dir }, 'events relay: replaying events a previous run spooled and did not forward');
    queue = createSpooledQueue({ memory, limits: config.queue, spool, replay: opened.replay, logger, dropped: (events) => dropReplayed(events) });
  }
  // Requests wait for their share up to a second: long enough for a large batch ahead to be parsed, short of
  // the SDKs' request timeouts (posthog-node: 10 s).
  const intake = createIntakeBudget(config.intakeMaxBytes ?? defaultIntakeBudget(process.constrainedMemory?.()), 1000);
  const metrics = createEventMetrics(deps.registry, () => queue.depth(), () => spool?.bytes() ?? 0, () => intake.status().bytes);
  dropReplayed = (events) => metrics.dropped.inc({ reason: 'too_large' }, events);
  const client = createUpstreamClient({
    url: config.url,
    timeoutMs: deps.upstreamTimeoutMs,
    connectTimeoutMs: deps.connectTimeoutMs,
    maxBodyBytes: 1024 * 1024,
    userAgent: deps.userAgent,
    connections: forwardConcurrency,
    metrics: deps.metrics,
  });
  const forwarder = createForwarder({
    queue,
    send: (body, signal) =>
      client.request({ operation: 'events_batch', method: 'POST', path: '/batch/', headers: { 'content-type': 'application/json' }, body, signal }),
    batchMaxEvents: config.batch.maxEvents,
    batchMaxBytes: config.batch.maxBytes,
    lingerMs: config.batch.lingerMs,
    retryMinMs: 500,
    retryMaxMs: 10_000,
    logger,
    now: deps.now,
    random: deps.random,
    observer: {
      forwarded: (events, seconds) => {
        metrics.forwarded.inc(events);
        metrics.forwardDuration.observe(seconds);
      },
      dropped: (events, reason) => metrics.dropped.inc({ reason }, events),
      retried: (events, reason) => metrics.retried.inc({ reason }, events),
    },
  });
  forwarder.start();
  return {
    queue,
    intake,
    metrics,
    /** The /status `events` block. */
    status: () => ({
      url: config.url.origin,
      queue: { ...queue.depth(), max_events: config.queue.maxEvents, max_bytes: config.queue.maxBytes },
      intake: intake.status(),
      spool: spool && config.spool ? { bytes: spool.bytes(), max_bytes: config.spool.maxBytes, replay_bytes: replay?.unreadBytes() ?? 0 } : null,
      last_forward: forwarder.last(),
    }),
    async stop(budgetMs: number): Promise<void> {
      const left = await forwarder.stop(budgetMs);
      if (spool) {
        const unread = replay?.unreadBytes() ?? 0;
        await spool.close();
        if (left > 0 || unread > 0) logger.warn({ events: left, unreadBytes: unread }, 'events relay: stopped with accepted events not forwarded; they stay in the spool and are sent after the next start');
      } else if (left > 0) logger.error({ events: left }, 'events relay: stopped with accepted events not forwarded (no FLAG_SIDECAR_SNAPSHOT_DIR, so no spool: they are lost)');
      await client.destroy();
    },
  };
}

/** The relay for a sidecar's configuration (upstream timeouts reused), or null when no events URL is known. */
export function eventRelayFor(
  config: Config,
  deps: Omit<EventRelayDeps, 'config' | 'upstreamTimeoutMs' | 'connectTimeoutMs'>,
): Promise<EventRelay | null> {
  const url = config.events.url;
  if (url === null) return Promise.resolve(null);
  return createEventRelay({
    ...deps,
    config: { ...config.events, url },
    upstreamTimeoutMs: config.upstream?.timeoutMs ?? 10_000,
    connectTimeoutMs: config.upstream?.connectTimeoutMs ?? 5_000,
  });
}

/** A running relay. */
export type EventRelay = Awaited<ReturnType<typeof createEventRelay>>;
