/**
 * `is_date_before` / `is_date_after`, as `@posthog/core` 1.67.3 decides them (strictly before/after, to the
 * millisecond).
 * Filter side, parsed once: a boolean is inconclusive; `String(value)` matching `-?N<unit>` with N < 10000 and
 * unit h, d, w, m (months) or y is relative to now (UTC calendar; see `relativeThreshold`); otherwise a string
 * or number goes through `new Date()` (ISO date-only = UTC, naive date-time = host time zone, number = epoch
 * milliseconds) and an invalid date, or any other type, is inconclusive.
 * Property side: a string or number goes through `new Date()` the same way (so 1717200000 is January 1970);
 * an invalid date, or any other type, is inconclusive.
 */
import { unsupportedOperator, type CompiledOperator, type ValueMatcher } from './value-matcher.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const MAX_TIME_MS = 8.64e15;

/** The instant `new Date(value)` gives for a number: whole milliseconds, NaN outside the Date range. */
function clippedTime(ms: number): number {
  if (!Number.isFinite(ms) || Math.abs(ms) > MAX_TIME_MS) return NaN;
  return Math.trunc(ms) + 0;
}

function propertyTime(value: unknown): number | undefined {
  let time: number;
  if (typeof value === 'string') time = Date.parse(value);
  else if (typeof value === 'number') time = clippedTime(value);
  else if (value instanceof Date) return value.getTime();
  else return undefined;
  return Number.isNaN(time) ? undefined : time;
}

function daysInUtcMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}

/**
 * `nowMs` moved back by `count` units. Hours, days and weeks are exact multiples of their length in UTC. Months
 * keep the time of day and clamp the day of month to the shortest month met on the way back (the SDK walks back
 * month by month while the day is above 28: 31 March minus two months is 28 or 29 January, not 31 January).
 * Years keep month and day, except that 29 February becomes 28 February.
 */
export function relativeThreshold(unit: string, count: number, nowMs: number): number {
  const now = clippedTime(nowMs);
  if (unit === 'h') return clippedTime(now - count * HOUR_MS);
  if (unit === 'd') return clippedTime(now - count * DAY_MS);
  if (unit === 'w') return clippedTime(now - count * 7 * DAY_MS);
  const date = new Date(now);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  let day = date.getUTCDate();
  if (unit === 'm') {
    for (let back = 1; back <= count && day > 28; back++) day = Math.min(day, daysInUtcMonth(year, month - back));
    return date.setUTCFullYear(year, month - count, day);
  }
  if (count > 0 && month === 1 && day === 29) day = 28;
  return date.setUTCFullYear(year - count, month, day);
}

type DateFilter =
  | { readonly kind: 'absolute'; readonly ms: number }
  | { readonly kind: 'relative'; readonly unit: string; readonly count: number };

function parseDateFilter(target: unknown): DateFilter | undefined {
  if (typeof target === 'boolean') return undefined;
  const relative = /^-?([0-9]+)([a-z])$/.exec(String(target));
  if (relative !== null) {
    const count = parseInt(relative[1] ?? '', 10);
    const unit = relative[2] ?? '';
    if (count < 10_000 && 'hdwmy'.includes(unit)) return { kind: 'relative', unit, count };
  }
  if (target instanceof Date) return { kind: 'absolute', ms: target.getTime() };
  if (typeof target !== 'string' && typeof target !== 'number') return undefined;
  const ms = new Date(target).getTime();
  return Number.isNaN(ms) ? undefined : { kind: 'absolute', ms };
}

/** Compiles `is_date_before` (before = true) or `is_date_after`; an unusable filter date is unsupported. */
export function compileDateOperator(before: boolean, target: unknown): CompiledOperator {
  const filter = parseDateFilter(target);
  return filter === undefined ? unsupportedOperator : { match: dateMatcher(before, filter), supported: true };
}

function dateMatcher(before: boolean, filter: DateFilter): ValueMatcher {
  const decide = (time: number, threshold: number): boolean => (before ? time < threshold : time > threshold);
  if (filter.kind === 'absolute') {
    const threshold = filter.ms;
    return (value) => {
      const time = propertyTime(value);
      return time === undefined ? 'inconclusive' : decide(time, threshold);
    };
  }
  const { unit, count } = filter;
  const calendar = unit === 'm' || unit === 'y';
  let anchoredAt = NaN;
  let threshold = NaN;
  return (value, nowMs) => {
    const time = propertyTime(value);
    if (time === undefined) return 'inconclusive';
    if (nowMs !== anchoredAt) {
      threshold = relativeThreshold(unit, count, nowMs);
      anchoredAt = nowMs;
    }
    const verdict = decide(time, threshold);
    // When the verdict could change. The threshold moves with the clock, as fast: hours, days and weeks always;
    // months and years within a UTC day (their date parts are the day's), so at most until its end. Once past the
    // property's time, the threshold of hours, days and weeks never comes back: that verdict holds for good.
    let until = before ? (verdict ? Infinity : nowMs + (time - threshold)) : verdict ? nowMs + (time - threshold) - 1 : Infinity;
    if (calendar) until = Math.min(until, (Math.floor(nowMs / DAY_MS) + 1) * DAY_MS - 1);
    if (!(until >= horizon)) horizon = Number.isNaN(until) ? -Infinity : until;
    return verdict;
  };
}

/**
 * The earliest instant (ms since the epoch) at which a relative date verdict given since watchClock() could be
 * different (Infinity: none could; see dateMatcher). An evaluation is synchronous: evaluateQuery calls watchClock
 * first and reads clockHorizon after, and its answer holds until then (http/answer-cache.ts).
 */
let horizon = Infinity;

/** Start watching the relative date verdicts given (see clockHorizon). */
export function watchClock(): void {
  horizon = Infinity;
}

/** The earliest instant a verdict given since watchClock() could change; Infinity: none could. */
export const clockHorizon = (): number => horizon;
