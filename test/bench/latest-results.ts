/**
 * What one `npm run bench` leaves behind, so that the doc and the picture stay true together: the chart of its
 * throughput ratios (docs/benchmarks.svg, ratio-chart.ts) and its results table with the chart's line, written into
 * docs/benchmarks.md between the "latest-results" markers and nowhere else in the file. Both are written, or
 * neither (a run that drew no ratio leaves them as they were, and says so).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { aimsTable, type AimResult } from './aims.js';
import { ratioChart, type ChartRun, type RatioBar } from './ratio-chart.js';

/** The line that opens the written section in docs/benchmarks.md (the script finds it by its start). */
export const startMarker = '<!-- latest-results:start — written by `npm run bench` (test/bench/latest-results.ts); edit the script, not this -->';
/** The line that closes it. */
export const endMarker = '<!-- latest-results:end -->';

/** The chart's bars: the results that name one (throughput ratios), in the order recorded. */
export const chartBars = (results: readonly AimResult[]): RatioBar[] =>
  results.flatMap((r) =>
    r.chart === undefined
      ? []
      : [{ label: r.chart.label, reference: r.chart.reference, value: r.value, ...(r.atLeast === undefined ? {} : { aim: r.atLeast }), ...(r.chart.control === true ? { control: true } : {}) }],
  );

/** The section's Markdown: which run, its table, and the chart (`image`, relative to the doc). */
export function resultsSection(results: readonly AimResult[], run: ChartRun, image: string): string {
  const which = `Run of ${run.date} on Node ${run.node}, commit ${run.commit}${run.partial === undefined ? '' : ` (partial run: ${run.partial.join(', ')})`}${run.note === undefined ? '' : `; ${run.note}`}.`;
  const table = aimsTable(results) ?? 'No result was recorded.';
  return [which, '', table, '', `![flag-sidecar throughput as a ratio to its reference, run of ${run.date}${run.partial === undefined ? '' : ' (partial)'}](${image})`].join('\n');
}

/** `doc` with the text between its two marker lines replaced by `section`; throws when the markers are not there once each, in order. */
export function withSection(doc: string, section: string): string {
  const lines = doc.split('\n');
  const starts = lines.flatMap((line, i) => (line.startsWith('<!-- latest-results:start') ? [i] : []));
  const ends = lines.flatMap((line, i) => (line.trim() === endMarker ? [i] : []));
  const [start] = starts;
  const [end] = ends;
  if (starts.length !== 1 || ends.length !== 1 || start === undefined || end === undefined || end < start) {
    throw new Error(`the doc needs one "${startMarker}" line and, after it, one "${endMarker}" line`);
  }
  return [...lines.slice(0, start + 1), section, ...lines.slice(end)].join('\n');
}

/** The commit of the checkout at `root` (short), marked when its tree has changes not committed; "unknown" without git. */
export function commitOf(root: string): string {
  try {
    const commit = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const changed = execFileSync('git', ['-C', root, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() !== '';
    return changed ? `${commit} with uncommitted changes` : commit;
  } catch {
    return 'unknown';
  }
}

/**
 * Writes the chart of `results` to `svgFile` and their section into `docFile` (image linked as `image`); returns what
 * it did, for the log. Nothing is written when no result draws a bar.
 */
export function writeLatestResults(results: readonly AimResult[], run: ChartRun, files: { docFile: string; svgFile: string; image: string }): string {
  const svg = ratioChart(chartBars(results), run);
  if (svg === null) return `no throughput ratio was recorded in this run: ${files.svgFile} and ${files.docFile} left as they were`;
  const doc = withSection(readFileSync(files.docFile, 'utf8'), resultsSection(results, run, files.image));
  writeFileSync(files.svgFile, svg);
  writeFileSync(files.docFile, doc);
  return `wrote ${files.svgFile} (${chartBars(results).length} bars) and the latest results of ${files.docFile}`;
}
