/**
 * Forwards queued events upstream in batches (at most `batchMaxEvents` events and `batchMaxBytes` bytes of one
 * queue lane: one token's live events, or its historical-migration events, which are sent with
 * `historical_migration: true`; after waiting up to `lingerMs` for a batch to fill), up to `forwardConcurrency` batches at a time, each
 * event's JSON text as it arrived. Batches complete in any order: each is acked or released on its own.
 * Outcomes: 2xx → acked; 400 or 413 → split in halves and each sent again, a single event refused is dropped with
 * a log line and counted (never retried forever); 401/403/404 and other 4xx (but 408/429) → dropped likewise;
 * 408, 429, 5xx and network failures → retried with exponential backoff and equal jitter, at least the
 * Retry-After. A failure holds back every batch (none is sent before the backoff ends; new events do not cut it
 * short), so an outage costs at most `forwardConcurrency` requests per backoff period. `stop(budgetMs)` forwards
 * what it can until the queue is empty or the budget is spent, then aborts and releases every batch in flight;
 * it resolves with the number of events left unforwarded.
 */
import type { Logger } from '../logger.js';
import type { UpstreamResult } from '../upstream/client.js';
import { parseRetryAfter } from '../upstream/schedule.js';
import type { EventQueue } from './queue.js';

/** What the forwarder reports, for metrics and /status. */
export interface ForwardObserver {
  forwarded(events: number, seconds: number): void;
  dropped(events: number, reason: string): void;
  retried(events: number, reason: string): void;
}

/** The last delivery attempt, for /status. */
export interface ForwardOutcome {
  readonly at: number;
  readonly outcome: 'ok' | 'retry' | 'dropped';
  readonly detail: string;
}

/** Dependencies of createForwarder. */
export interface ForwarderDeps {
  readonly queue: EventQueue;
  /** Send one batch body (JSON) to upstream's `/batch/`. */
  readonly send: (body: Buffer, signal: AbortSignal) => Promise<UpstreamResult>;
  readonly batchMaxEvents: number;
  readonly batchMaxBytes: number;
  readonly lingerMs: number;
  readonly retryMinMs: number;
  readonly retryMaxMs: number;
  readonly logger: Logger;
  readonly observer: ForwardObserver;
  readonly now: () => number;
  readonly random: () => number;
}

const comma = Buffer.from(',');
const tail = Buffer.from(']}');

/**
 * A batch body as upstream's `/batch/` takes it; `historical` adds `"historical_migration":true`, the flag upstream
 * routes the whole batch to its historical topic by (rust/capture/src/v0_request.rs, BatchedRequest). Built as
 * bytes, in one copy of the events (a string would be a second copy in V8's heap before the one sent).
 */
export function batchBody(token: string, events: readonly Buffer[], historical = false): Buffer {
  const head = Buffer.from(`{"api_key":${JSON.stringify(token)},${historical ? '"historical_migration":true,' : ''}"batch":[`);
  const parts: Buffer[] = [head];
  events.forEach((event, i) => {
    if (i > 0) parts.push(comma);
    parts.push(event);
  });
  parts.push(tail);
  return Buffer.concat(parts);
}

const maxRetryAfterMs = 300_000;

/**
 * Batches in flight at once: as many as the relay's upstream client has connections. One at a time, a round
 * trip per batch bounded the relay at ~20k events/s under load (docs/benchmarks.md); four keep the connections
 * busy while the event loop serves captures.
 */
export const forwardConcurrency = 4;

/** Create the forwarder (not started). */
export function createForwarder(deps: ForwarderDeps) {
  const { queue, logger, observer, now } = deps;
  let running = false;
  let flushing = false;
  let stopped = false;
  let last: ForwardOutcome | null = null;
  let failures = 0;
  // No batch is sent before this time (ms, performance.now()): the backoff after the last failure.
  let resumeAt = 0;
  const abort = new AbortController();
  let loop: Promise<unknown> = Promise.resolve();

  // Workers waiting for events (idle) or for a batch to fill (lingering): an append wakes them accordingly.
  // Workers in a backoff wait only for its end or stop.
  const idle = new Set<() => void>();
  const lingering = new Set<() => void>();
  const backingOff = new Set<() => void>();
  const wakeAll = (waiters: Set<() => void>): void => {
    for (const wake of [...waiters]) wake();
  };
  queue.onAppend(() => {
    wakeAll(idle);
    if (flushing || queue.waiting() >= deps.batchMaxEvents) wakeAll(lingering);
  });

  /** Resolves when woken through `waiters` or after `ms` when given. */
  function pause(waiters: Set<() => void>, ms: number | null): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        if (timer) clearTimeout(timer);
        waiters.delete(wake);
        resolve();
      };
      const timer = ms === null ? null : setTimeout(wake, ms);
      waiters.add(wake);
    });
  }

  function backoffMs(retryAfterMs: number | null): number {
    const exponent = Math.min(failures, 20);
    const base = Math.min(deps.retryMaxMs, deps.retryMinMs * 2 ** (exponent - 1));
    const jittered = Math.round(base / 2 + (deps.random() * base) / 2);
    return retryAfterMs === null ? jittered : Math.max(jittered, Math.min(retryAfterMs, maxRetryAfterMs));
  }

  const note = (outcome: ForwardOutcome['outcome'], detail: string): void => void (last = { at: now(), outcome, detail });

  /** Deliver `events` of `token` until forwarded or dropped; false when stopped before (nothing acked then). */
  async function deliver(token: string, events: readonly Buffer[], historical: boolean): Promise<boolean> {
    for (;;) {
      while (!stopped && performance.now() < resumeAt) await pause(backingOff, resumeAt - performance.now());
      if (stopped) return false;
      const started = performance.now();
      const result = await deps.send(batchBody(token, events, historical), abort.signal);
      if (stopped && result.kind === 'failure') return false;
      if (result.kind === 'response' && result.status >= 200 && result.status < 300) {
        failures = 0;
        observer.forwarded(events.length, (performance.now() - started) / 1000);
        note('ok', `${events.length} events forwarded (${result.status})`);
        return true;
      }
      if (result.kind === 'response' && (result.status === 400 || result.status === 413) && events.length > 1) {
        const half = Math.ceil(events.length / 2);
        logger.warn({ status: result.status, events: events.length }, 'events relay: upstream refused a batch; sending it again in halves');
        if (!(await deliver(token, events.slice(0, half), historical))) return false;
        return deliver(token, events.slice(half), historical);
      }
      const status = result.kind === 'response' ? result.status : 0;
      if (result.kind === 'response' && status >= 400 && status < 500 && status !== 408 && status !== 429) {
        const detail = result.body.subarray(0, 200).toString('utf8');
        logger.error({ status, events: events.length, detail }, 'events relay: upstream refused events for good; they are dropped');
        observer.dropped(events.length, `status_${status}`);
        note('dropped', `${events.length} events refused with ${status}: ${detail}`);
        return true;
      }
      failures += 1;
      const reason = result.kind === 'response' ? `status_${status}` : result.cause;
      const retryAfter = result.kind === 'response' ? parseRetryAfter(headerText(result.headers['retry-after']), now()) : null;
      const delay = backoffMs(retryAfter);
      resumeAt = Math.max(resumeAt, performance.now() + delay);
      observer.retried(events.length, reason);
      note('retry', `${reason}; retrying in ${delay} ms`);
      if (failures === 1 || failures % 10 === 0) logger.warn({ reason, failures, delayMs: delay }, 'events relay: forwarding failed; retrying');
    }
  }

  /** One of the `forwardConcurrency` workers: take a batch, deliver it, ack or release it, until stopped. */
  async function work(): Promise<void> {
    while (!stopped) {
      if (queue.waiting() === 0) {
        if (flushing) return;
        await pause(idle, null);
        continue;
      }
      if (!flushing && queue.waiting() < deps.batchMaxEvents) await pause(lingering, deps.lingerMs);
      const batch = queue.take(deps.batchMaxEvents, deps.batchMaxBytes);
      if (batch === null) continue;
      if (await deliver(batch.token, batch.events, batch.historical)) queue.ack(batch);
      else queue.release(batch);
    }
  }

  const run = (): Promise<unknown> => Promise.all(Array.from({ length: forwardConcurrency }, work));
  const wakeEveryone = (): void => [idle, lingering, backingOff].forEach(wakeAll);

  return {
    start(): void {
      if (running) return;
      running = true;
      loop = run();
    },
    /** The last delivery attempt, or null before the first. */
    last: (): ForwardOutcome | null => last,
    /** Forward what can be within `budgetMs`, then stop; resolves with the events left unforwarded. */
    async stop(budgetMs: number): Promise<number> {
      flushing = true;
      if (!running) loop = run();
      wakeEveryone();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([loop, new Promise<void>((resolve) => (timer = setTimeout(resolve, budgetMs)))]);
      clearTimeout(timer);
      stopped = true;
      abort.abort();
      wakeEveryone();
      await loop;
      return queue.depth().events;
    },
  };
}

const headerText = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

/** A forwarder. */
export type Forwarder = ReturnType<typeof createForwarder>;
