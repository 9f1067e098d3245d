/**
 * The poller: one loop per project, conditional GETs of upstream's local_evaluation with the sidecar's own key.
 * 200 → validate, then swap; 304 → keep (data confirmed fresh); 402 → serve upstream's 402 body until a poll
 * succeeds, and on leaving it the served ETags change (quotaRecoveryEtag) so SDKs that dropped their flags on
 * the 402 get the full body once; 401/403/429, 5xx, network failures and invalid bodies → keep the last good snapshot, log one line,
 * count it, back off (schedule.ts). The plain (no `send_cohorts`) variant is polled too once someone asked.
 * A poll never throws; stop() aborts in-flight requests and waits for them. In fleet mode (`fleet`) each cycle
 * first asks whether this sidecar polls the project (leader or direct) or leaves it to the fleet's leader
 * (follower: the cycle only keeps the loop ticking), and reports each cycle it polled.
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/metrics.js';
import { createVariant, quotaRecoveryEtag, withChanges, type ProjectSnapshot, type VariantName, type VariantSnapshot } from '../store/snapshot.js';
import type { Store } from '../store/store.js';
import type { UpstreamClient, UpstreamResult } from './client.js';
import { upstreamAnswered } from './error-body.js';
import { parseDefinitions } from './payload.js';
import { initialDelay, nextDelay, parseRetryAfter, type ScheduleClass } from './schedule.js';

/** What one poll of one variant ended with. */
export type PollOutcome = 'updated' | 'not_modified' | 'quota_limited' | 'refused' | 'failed' | 'invalid';

/** Per-project poll state, as /status shows it. */
export interface PollStatus {
  readonly lastPollAt: number | null;
  readonly lastSuccessAt: number | null;
  readonly lastOutcome: PollOutcome | null;
  readonly lastError: string | null;
  /** Polls in a row that did not bring a usable answer (a 402 counts: the data is not being refreshed). */
  readonly consecutiveFailures: number;
  readonly nextPollAt: number | null;
  /** Last poll of the variant without cohorts (null until it is wanted and polled). */
  readonly plain: { readonly outcome: PollOutcome; readonly error: string | null; readonly at: number } | null;
}

/** Fleet mode's hold on the poller (src/fleet/snapshot-relay.ts); absent without fleet mode. */
export interface PollerFleet {
  /**
   * Whether this sidecar polls upstream for the project this cycle (false while another sidecar leads it, or
   * while a budget holds a direct poller back); `forced`: a caller asked (pollNow). Never rejects.
   */
  shouldPoll(projectId: number, forced: boolean): Promise<boolean>;
  /**
   * After each cycle this sidecar polled, once the store holds its outcome; `relayed`: whether upstream's answer
   * came from a flag-sidecar relay (null: no answer). Must not throw.
   */
  polled(projectId: number, outcome: PollOutcome, relayed: boolean | null): void;
}

/** Dependencies of createPoller. */
export interface PollerDeps {
  readonly store: Store;
  readonly client: UpstreamClient;
  readonly key: string;
  readonly intervalMs: number;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly now: () => number;
  readonly random: () => number;
  readonly fleet?: PollerFleet;
}

/** Upstream's 402 body, used when a 402 arrives without one. */
export const defaultQuotaBody = Buffer.from(
  '{"type":"quota_limited","detail":"You have exceeded your feature flag request quota","code":"payment_required"}',
);

interface VariantResult {
  readonly outcome: PollOutcome;
  readonly error: string | null;
  readonly retryAfterMs: number | null;
  /** The answer came from a flag-sidecar relay (it marks what it serves; PostHog never does); null: no answer. */
  readonly relayed?: boolean;
}

/** The header a flag-sidecar sets on every snapshot it serves (200 and 304), and PostHog never sends. */
const relayHeader = 'x-flag-sidecar-source';

const scheduleClass: Record<PollOutcome, ScheduleClass> = {
  updated: 'ok',
  not_modified: 'ok',
  quota_limited: 'ok',
  refused: 'refused',
  failed: 'failed',
  invalid: 'failed',
};

const header = (headers: Readonly<Record<string, string | string[] | undefined>>, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/**
 * `project` with a new `variant` from upstream. A with-cohorts answer (200 or 304) ends a quota-limited period;
 * when it does, both variants get a new served ETag, since posthog-node keeps its ETag while it drops its flags
 * on a 402, and a 304 would leave it without flags until the definitions change.
 */
function withVariant(project: ProjectSnapshot, variant: VariantName, fresh: VariantSnapshot, at: number): ProjectSnapshot {
  if (variant === 'plain') return withChanges(project, { plain: fresh });
  if (project.quotaBody === null) return withChanges(project, { cohorts: fresh });
  const renew = (v: VariantSnapshot): VariantSnapshot => createVariant({ ...v, servedEtag: quotaRecoveryEtag(v, at) });
  return withChanges(project, { cohorts: renew(fresh), plain: project.plain && renew(project.plain), quotaBody: null });
}

/** What a failed poll means for what is served, as its log line says it. */
export function failureMessage(outcome: PollOutcome, project: ProjectSnapshot | undefined): string {
  if (outcome === 'quota_limited') return "upstream reports the project quota-limited (402); relaying upstream's 402 until a poll succeeds";
  if (project?.cohorts == null) return 'poll failed; nothing to serve yet (503 until a poll succeeds)';
  return 'poll failed; serving last good snapshot';
}

/** Create the poller for every project of the store. */
export function createPoller(deps: PollerDeps) {
  const { store, client, logger, metrics, now } = deps;
  const abort = new AbortController();
  const status = new Map<number, PollStatus>();
  const timers = new Map<number, NodeJS.Timeout>();
  const inFlight = new Map<string, Promise<VariantResult>>();
  const cycles = new Map<number, Promise<void>>();
  const cycleListeners: Array<(projectId: number) => void> = [];
  let stopped = false;

  function apply(projectId: number, variant: VariantName, result: UpstreamResult): VariantResult {
    if (result.kind === 'failure') return { outcome: 'failed', error: `${result.cause} (${result.code})`, retryAfterMs: null };
    const { status: code, headers, body } = result;
    const relayed = header(headers, relayHeader) !== undefined;
    if (code === 200) {
      const parsed = parseDefinitions(body);
      if (!parsed.ok) return { outcome: 'invalid', error: `invalid body: ${parsed.error}`, retryAfterMs: null };
      const fresh = createVariant({
        body,
        definitions: parsed.value,
        upstreamEtag: header(headers, 'etag') ?? null,
        fetchedAt: now(),
        source: 'upstream',
      });
      store.update(projectId, (p) => withVariant(p, variant, fresh, now()));
      return { outcome: 'updated', error: null, retryAfterMs: null, relayed };
    }
    if (code === 304) {
      const current = store.get(projectId)?.[variant];
      if (!current) return { outcome: 'failed', error: '304 without a snapshot to keep', retryAfterMs: null };
      const etag = header(headers, 'etag') ?? current.upstreamEtag;
      const refreshed = createVariant({ ...current, upstreamEtag: etag, fetchedAt: now(), source: 'upstream' });
      store.update(projectId, (p) => withVariant(p, variant, refreshed, now()));
      return { outcome: 'not_modified', error: null, retryAfterMs: null, relayed };
    }
    if (code === 402) {
      const quotaBody = body.length > 0 ? body : defaultQuotaBody;
      store.update(projectId, (p) => withChanges(p, { quotaBody }));
      return { outcome: 'quota_limited', error: `${upstreamAnswered(code, body)} (quota limited)`, retryAfterMs: null };
    }
    const retryAfterMs = parseRetryAfter(header(headers, 'retry-after'), now());
    // The cause carries upstream's own words (its error body, bounded, secrets removed): "why" in one line.
    const error = upstreamAnswered(code, body);
    if (code === 401 || code === 403 || code === 429) return { outcome: 'refused', error, retryAfterMs };
    return { outcome: 'failed', error, retryAfterMs };
  }

  /** Poll one variant of one project; concurrent calls for the same variant share one request. */
  function pollVariant(projectId: number, variant: VariantName): Promise<VariantResult> {
    const id = `${projectId}:${variant}`;
    const running = inFlight.get(id);
    if (running) return running;
    const etag = store.get(projectId)?.[variant]?.upstreamEtag;
    const promise = client
      .request({
        operation: 'local_evaluation',
        method: 'GET',
        path: `/api/projects/${projectId}/feature_flags/local_evaluation/${variant === 'cohorts' ? '?send_cohorts' : ''}`,
        headers: {
          authorization: `Bearer ${deps.key}`,
          accept: 'application/json',
          ...(etag ? { 'if-none-match': etag } : {}),
        },
        signal: abort.signal,
      })
      .then((result) => apply(projectId, variant, result))
      .catch((error: unknown) => ({ outcome: 'failed' as const, error: `unexpected: ${(error as Error).message}`, retryAfterMs: null }))
      .then((result) => {
        metrics.polls.inc({ project: String(projectId), variant, outcome: result.outcome });
        return result;
      })
      .finally(() => inFlight.delete(id));
    inFlight.set(id, promise);
    return promise;
  }

  const succeeded = (outcome: PollOutcome): boolean => outcome === 'updated' || outcome === 'not_modified';

  function record(projectId: number, result: VariantResult, plain: PollStatus['plain'], failures: number, delay: number): void {
    const previous = status.get(projectId);
    const ok = succeeded(result.outcome);
    const at = now();
    status.set(projectId, {
      lastPollAt: at,
      lastSuccessAt: ok ? at : (previous?.lastSuccessAt ?? null),
      lastOutcome: result.outcome,
      lastError: result.error,
      consecutiveFailures: failures,
      nextPollAt: at + delay,
      plain: plain ?? previous?.plain ?? null,
    });
    if (!ok) {
      logger.warn({ project: projectId, outcome: result.outcome, cause: result.error, failures, retryInMs: delay }, failureMessage(result.outcome, store.get(projectId)));
    } else if ((previous?.consecutiveFailures ?? 0) > 0) {
      logger.info({ project: projectId, outcome: result.outcome }, 'poll recovered');
    }
  }

  async function cycle(projectId: number, forced: boolean): Promise<void> {
    if (deps.fleet !== undefined && !(await deps.fleet.shouldPoll(projectId, forced))) {
      schedule(projectId, nextDelay({ outcome: 'ok', failures: 0, intervalMs: deps.intervalMs, retryAfterMs: null, hasSnapshot: true, random: deps.random }));
      return;
    }
    const main = await pollVariant(projectId, 'cohorts');
    let plain: PollStatus['plain'] = null;
    // The variant without cohorts is refreshed only while the main one is healthy (never during a 402 or an outage).
    if (!stopped && store.get(projectId)?.plainWanted && succeeded(main.outcome)) {
      const result = await pollVariant(projectId, 'plain');
      plain = { outcome: result.outcome, error: result.error, at: now() };
      if (!succeeded(result.outcome)) {
        logger.warn({ project: projectId, variant: 'plain', outcome: result.outcome, cause: result.error }, 'poll of the variant without cohorts failed');
      }
    }
    if (stopped) return;
    const failures = succeeded(main.outcome) ? 0 : (status.get(projectId)?.consecutiveFailures ?? 0) + 1;
    const delay = nextDelay({
      outcome: scheduleClass[main.outcome],
      failures,
      intervalMs: deps.intervalMs,
      retryAfterMs: main.retryAfterMs,
      hasSnapshot: store.get(projectId)?.cohorts != null,
      random: deps.random,
    });
    record(projectId, main, plain, failures, delay);
    schedule(projectId, delay);
    deps.fleet?.polled(projectId, main.outcome, main.relayed ?? null);
    if (succeeded(main.outcome)) for (const listener of cycleListeners) listener(projectId);
  }

  function runCycle(projectId: number, forced: boolean): Promise<void> {
    const running = cycles.get(projectId);
    if (running) return running;
    const promise = cycle(projectId, forced).finally(() => cycles.delete(projectId));
    cycles.set(projectId, promise);
    return promise;
  }

  function schedule(projectId: number, delay: number): void {
    clearTimeout(timers.get(projectId));
    if (stopped) return;
    const timer = setTimeout(() => void runCycle(projectId, false), delay);
    timer.unref();
    timers.set(projectId, timer);
  }

  return {
    /** Start every project's loop; the first polls are spread over a short jitter window. */
    start(): void {
      for (const id of store.projectIds()) schedule(id, initialDelay(deps.intervalMs, deps.random));
    },
    /** Poll a project now (both variants as wanted); resolves when that cycle is done. */
    pollNow(projectId: number): Promise<void> {
      clearTimeout(timers.get(projectId));
      return runCycle(projectId, true);
    },
    /**
     * Make sure the plain variant is kept: the first call marks it wanted and fetches it at once, resolving
     * when that fetch is done or failed (never rejects); later calls join that fetch while it runs and
     * otherwise return at once, leaving it to the loop, so callers are not held up while upstream fails.
     */
    async ensurePlain(projectId: number): Promise<void> {
      const project = store.get(projectId);
      if (!project || stopped) return;
      if (project.plainWanted) {
        await inFlight.get(`${projectId}:plain`); // join a fetch already under way, if any
        return;
      }
      store.update(projectId, (p) => withChanges(p, { plainWanted: true }));
      await pollVariant(projectId, 'plain');
    },
    /** Call `listener` after every cycle in which upstream answered (200 or 304), to keep other data in step. */
    onHealthyCycle(listener: (projectId: number) => void): void {
      cycleListeners.push(listener);
    },
    /** Poll state of a project (null before its first poll). */
    status: (projectId: number): PollStatus | null => status.get(projectId) ?? null,
    /** Stop all loops, abort in-flight polls and wait for them to settle. */
    async stop(): Promise<void> {
      stopped = true;
      for (const timer of timers.values()) clearTimeout(timer);
      abort.abort();
      await Promise.allSettled([...cycles.values(), ...inFlight.values()]);
    },
  };
}

/** The poller handle. */
export type Poller = ReturnType<typeof createPoller>;

/** What the API routes use of polling: the poller itself, or in fleet mode the relay acting for the fleet. */
export type PollControl = Pick<Poller, 'pollNow' | 'ensurePlain' | 'onHealthyCycle'>;
