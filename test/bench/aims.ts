/**
 * What `npm run bench` measured, checked against the aims of issue 19: each part that measures one records it here
 * (a JSON line appended to the file named by BENCH_AIMS_FILE, which run.ts sets for itself and the scripts it
 * starts), and run.ts prints them all in one table at the end, each with its aim and whether this run met it. A
 * result may have no aim (a ratio recorded for the chart only), and a throughput ratio names the chart bar it
 * draws (`chart`: docs/benchmarks.svg, ratio-chart.ts). A script run on its own (no BENCH_AIMS_FILE) records
 * nothing and prints its own tables as before.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';

/** The references a throughput ratio is measured against, in the same run: the chart's groups. */
export const references = {
  /** test/bench/bare-server.mjs: node:http answering the sidecar's bytes, nothing else. */
  bare: 'against a bare node:http server answering the same bytes',
  /** test/bench/sdk-flags-server.mjs: posthog-node's local evaluation behind a bare node:http handler. */
  sdk: "against posthog-node's local evaluation behind node:http (/flags)",
} as const;

export interface AimResult {
  /** The bench part (BENCH_ONLY name) that measured it. */
  readonly part: string;
  /** What was measured, e.g. "snapshot GET 200: throughput ratio to the bare server". */
  readonly what: string;
  readonly value: number;
  /** How the value is shown: its unit or suffix ("×", " ms", " µs"). */
  readonly unit: string;
  /** `atLeast` (a ratio to reach) or `atMost` (a cost not to pass); neither for a result recorded without an aim. */
  readonly atLeast?: number;
  readonly atMost?: number;
  /** Anything a reader needs beside the value (per-round figures, the other ratio). */
  readonly detail?: string;
  /**
   * For a throughput ratio: its bar in the chart (a short label) and the reference it is a ratio to; `control` for an
   * A/A control (a reference against a copy of itself), drawn apart from the sidecar's bars.
   */
  readonly chart?: { readonly label: string; readonly reference: string; readonly control?: boolean };
}

/** Records one measured result for run.ts's closing table; does nothing when the bench was not started by run.ts. */
export function recordAim(result: AimResult): void {
  const file = process.env.BENCH_AIMS_FILE;
  if (file) appendFileSync(file, `${JSON.stringify(result)}\n`);
}

/** The results recorded in `file`, in the order they were recorded (none when it does not exist). */
export function readAims(file: string): AimResult[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as AimResult);
}

/** Whether `result` has an aim. */
export const hasAim = (result: AimResult): boolean => result.atLeast !== undefined || result.atMost !== undefined;

/** Whether `result` meets its aim (a result without one meets it). */
export const aimMet = (result: AimResult): boolean =>
  (result.atLeast === undefined || result.value >= result.atLeast) && (result.atMost === undefined || result.value <= result.atMost);

const shown = (value: number, unit: string): string => `${Number.isInteger(value) ? String(value) : value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(3)}${unit}`;

/** A table cell's text: a `|` would end the cell, a line break the row. */
const cell = (text: string): string => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

/** The closing table of `results` (Markdown), or null when there are none. */
export function aimsTable(results: readonly AimResult[]): string | null {
  if (results.length === 0) return null;
  const rows = results.map((r) => {
    const aim = r.atLeast !== undefined ? `≥ ${shown(r.atLeast, r.unit)}` : r.atMost !== undefined ? `≤ ${shown(r.atMost, r.unit)}` : '—';
    const met = hasAim(r) ? (aimMet(r) ? 'met' : '**not met**') : '';
    return `| ${cell(r.part)} | ${cell(r.what)} | ${shown(r.value, r.unit)} | ${aim} | ${met} | ${cell(r.detail ?? '')} |`;
  });
  const aimed = results.filter(hasAim);
  const met = aimed.filter(aimMet).length;
  return ['| part | measure | this run | aim | | detail |', '|---|---|---|---|---|---|', ...rows, '', `${met} of ${aimed.length} aims met in this run.`].join('\n');
}
