/**
 * Pure poll scheduling: the delay before the next poll given the last outcome. Time and randomness are
 * arguments. Guarantees: a healthy loop polls once per interval ±10% (so a fleet drifts out of lockstep);
 * refusals (401/403/429) back off exponentially from the interval; transient failures (5xx, network, invalid
 * body) from a quarter of the interval while a snapshot is being served (a fleet must not hammer a failing
 * upstream), from min(interval, 1 s) while there is none yet (to become ready soon); all with equal jitter and
 * never above 8× the interval, except that a Retry-After is always honoured.
 */

/** What the scheduler needs to know about the last poll. */
export type ScheduleClass = 'ok' | 'refused' | 'failed';

/** Inputs of nextDelay. `failures` counts consecutive non-ok polls including the last one. */
export interface ScheduleInput {
  readonly outcome: ScheduleClass;
  readonly failures: number;
  readonly intervalMs: number;
  readonly retryAfterMs: number | null;
  /** Whether the project already has data to serve. */
  readonly hasSnapshot: boolean;
  readonly random: () => number;
}

/** Upper bound of any backoff, as a multiple of the interval. */
export const backoffCapFactor = 8;
/** Longest Retry-After honoured (a larger value is clamped to it). */
export const maxRetryAfterMs = 3_600_000;

function equalJitter(ms: number, random: () => number): number {
  return Math.round(ms / 2 + (random() * ms) / 2);
}

/** Milliseconds until the next poll. */
export function nextDelay(input: ScheduleInput): number {
  const { outcome, intervalMs, random } = input;
  if (outcome === 'ok') return Math.round(intervalMs * (0.9 + 0.2 * random()));
  const cap = intervalMs * backoffCapFactor;
  const exponent = Math.min(Math.max(input.failures, 1), 30);
  const backoff =
    outcome === 'refused'
      ? Math.min(cap, intervalMs * 2 ** exponent)
      : Math.min(cap, (input.hasSnapshot ? intervalMs / 4 : Math.min(intervalMs, 1000)) * 2 ** (exponent - 1));
  const delay = equalJitter(backoff, random);
  if (input.retryAfterMs === null) return delay;
  return Math.max(delay, Math.min(input.retryAfterMs, maxRetryAfterMs));
}

/** Delay of the first poll: soon, spread over up to a tenth of the interval (at most 1 s). */
export function initialDelay(intervalMs: number, random: () => number): number {
  return Math.round(random() * Math.min(1000, intervalMs / 10));
}

/** A Retry-After header (delta-seconds or HTTP date) → milliseconds from now, or null when absent/invalid. */
export function parseRetryAfter(header: string | undefined, nowMs: number): number | null {
  if (header === undefined) return null;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - nowMs);
}
