/**
 * The aims of issue 19, as `npm run bench` checks them: each part that measures one records it here (a JSON line
 * appended to the file named by BENCH_AIMS_FILE, which run.ts sets for itself and the scripts it starts), and
 * run.ts prints them all in one table at the end, each with its aim and whether this run met it. A script run on
 * its own (no BENCH_AIMS_FILE) records nothing and prints its own tables as before.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';

export interface AimResult {
  /** The bench part (BENCH_ONLY name) that measured it. */
  readonly part: string;
  /** What was measured, e.g. "snapshot GET 200: throughput ratio to the bare server". */
  readonly what: string;
  readonly value: number;
  /** How the value is shown: its unit or suffix ("×", " ms", " µs"). */
  readonly unit: string;
  /** `atLeast` (a ratio to reach) or `atMost` (a cost not to pass). */
  readonly atLeast?: number;
  readonly atMost?: number;
  /** Anything a reader needs beside the value (per-round figures, the other ratio). */
  readonly detail?: string;
}

/** Records one measured aim for run.ts's closing table; does nothing when the bench was not started by run.ts. */
export function recordAim(result: AimResult): void {
  const file = process.env.BENCH_AIMS_FILE;
  if (file) appendFileSync(file, `${JSON.stringify(result)}\n`);
}

/** Whether `result` meets its aim. */
export const aimMet = (result: AimResult): boolean =>
  (result.atLeast === undefined || result.value >= result.atLeast) && (result.atMost === undefined || result.value <= result.atMost);

const shown = (value: number, unit: string): string => `${Number.isInteger(value) ? String(value) : value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(3)}${unit}`;

/** The closing table of the aims recorded in `file` (Markdown), or null when none was. */
export function aimsTable(file: string): string | null {
  if (!existsSync(file)) return null;
  const results = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as AimResult);
  if (results.length === 0) return null;
  const rows = results.map((r) => {
    const aim = r.atLeast !== undefined ? `≥ ${shown(r.atLeast, r.unit)}` : `≤ ${shown(r.atMost as number, r.unit)}`;
    return `| ${r.part} | ${r.what} | ${shown(r.value, r.unit)} | ${aim} | ${aimMet(r) ? 'met' : '**not met**'} | ${r.detail ?? ''} |`;
  });
  const met = results.filter(aimMet).length;
  return ['| part | measure | this run | aim | | detail |', '|---|---|---|---|---|---|', ...rows, '', `${met} of ${results.length} aims met in this run.`].join('\n');
}
