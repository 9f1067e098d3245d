/**
 * What `npm run bench` writes at the end of a run (test/bench/latest-results.ts, aims.ts): the results table, the
 * chart's bars from the results that name one, the doc's section between its markers and nowhere else, and nothing
 * at all when no ratio was recorded.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aimsTable, type AimResult } from '../../test/bench/aims.js';
import { chartBars, endMarker, resultsSection, startMarker, withSection, writeLatestResults } from '../../test/bench/latest-results.js';
import type { ChartRun } from '../../test/bench/ratio-chart.js';
import { tempDir } from '../support/temp-dir.js';

const run: ChartRun = { date: '2026-11-29', node: 'v20.20.2', commit: 'abc1234' };
const ratio: AimResult = { part: 'snapshot', what: 'snapshot GET 200: ratio', value: 0.968, unit: '×', atLeast: 0.95, chart: { label: 'snapshot GET 200', reference: 'bare' } };
const cost: AimResult = { part: 'flags-http', what: 'CPU per request', value: 16.4, unit: ' µs', atMost: 45 };
const missed: AimResult = { part: 'footprint', what: 'start → ready', value: 300, unit: ' ms', atMost: 250 };
const aimless: AimResult = { part: 'ofrep', what: 'OFREP | single flag', value: 0.75, unit: '×', chart: { label: 'OFREP', reference: 'bare' } };
const control: AimResult = { part: 'snapshot', what: 'A/A', value: 1.03, unit: '×', chart: { label: 'A/A', reference: 'bare', control: true } };

describe('aimsTable', () => {
  it.each([
    ['none', [], null],
    ['an aim met', [ratio], '| snapshot | snapshot GET 200: ratio | 0.968× | ≥ 0.950× | met |  |\n\n1 of 1 aims met'],
    ['an aim missed', [missed], '| footprint | start → ready | 300 ms | ≤ 250 ms | **not met** |  |\n\n0 of 1 aims met'],
    ['a result without an aim, not counted', [cost, aimless], '| ofrep | OFREP \\| single flag | 0.750× | — |  |  |\n\n1 of 1 aims met'],
  ] as Array<[string, AimResult[], string | null]>)('%s', (_, results, expected) => {
    const table = aimsTable(results);
    if (expected === null) expect(table).toBeNull();
    else expect(table).toContain(expected);
  });
});

describe('chartBars', () => {
  it('draws the results that name a bar, in order, with their at-least aims and A/A controls marked', () => {
    expect(chartBars([ratio, control, cost, missed, aimless])).toEqual([
      { label: 'snapshot GET 200', reference: 'bare', value: 0.968, aim: 0.95 },
      { label: 'A/A', reference: 'bare', value: 1.03, control: true },
      { label: 'OFREP', reference: 'bare', value: 0.75 },
    ]);
  });
});

describe('withSection', () => {
  const doc = (inside: string): string => `# Benchmarks\n\nMethod.\n\n## Latest results\n\n${startMarker}\n${inside}\n${endMarker}\n\n## What limits each number\n\nText.\n`;

  it.each([
    ['an empty section', doc(''), 'new'],
    ['an earlier run', doc('| old | table |\n\n![old](benchmarks.svg)'), 'new\n\n| a | b |'],
  ])('replaces %s and leaves the rest as it was', (_, before, section) => {
    const after = withSection(before, section);
    expect(after).toBe(doc(section));
    expect(withSection(after, section)).toBe(after); // a second run with the same results changes nothing
  });

  it.each([
    ['no markers', '# Benchmarks\n'],
    ['no end marker', `${startMarker}\nx\n`],
    ['the end before the start', `${endMarker}\nx\n${startMarker}\n`],
    ['two sections', `${startMarker}\n${endMarker}\n${startMarker}\n${endMarker}\n`],
  ])('refuses a doc with %s', (_, text) => {
    expect(() => withSection(text, 'new')).toThrow(/latest-results/);
  });
});

describe('resultsSection', () => {
  it.each([
    ['a full run', run, 'Run of 2026-11-29 on Node v20.20.2, commit abc1234.', '](benchmarks.svg)'],
    ['a partial run', { ...run, partial: ['snapshot', 'flags-http'], note: '3 rounds' }, 'commit abc1234 (partial run: snapshot, flags-http); 3 rounds.', 'run of 2026-11-29 (partial)](benchmarks.svg)'],
  ] as Array<[string, ChartRun, string, string]>)('names %s, then its table and the chart', (_, which, first, image) => {
    const section = resultsSection([ratio], which, 'benchmarks.svg');
    expect(section.split('\n')[0]).toContain(first);
    expect(section).toContain('| snapshot | snapshot GET 200: ratio | 0.968× |');
    expect(section.trimEnd().endsWith(image)).toBe(true);
  });
});

describe('writeLatestResults', () => {
  const setUp = (): { docFile: string; svgFile: string; image: string; before: string } => {
    const dir = tempDir('bench-latest-');
    const before = `# Benchmarks\n\n${startMarker}\nold\n${endMarker}\n`;
    writeFileSync(join(dir, 'benchmarks.md'), before);
    return { docFile: join(dir, 'benchmarks.md'), svgFile: join(dir, 'benchmarks.svg'), image: 'benchmarks.svg', before };
  };

  it.each([
    ['no result', []],
    ['results without a ratio to draw', [cost, missed]],
  ] as Array<[string, AimResult[]]>)('writes neither file for %s, and says so', (_, results) => {
    const { before, ...files } = setUp();
    expect(writeLatestResults(results, run, files)).toMatch(/no throughput ratio was recorded/);
    expect(existsSync(files.svgFile)).toBe(false);
    expect(readFileSync(files.docFile, 'utf8')).toBe(before);
  });

  it('writes the chart and the section together', () => {
    const { before, ...files } = setUp();
    expect(writeLatestResults([ratio, cost], run, files)).toMatch(/^wrote .*benchmarks\.svg \(1 bars\)/);
    expect(readFileSync(files.svgFile, 'utf8')).toMatch(/^<svg [^>]*>[\s\S]*snapshot GET 200[\s\S]*<\/svg>\n$/);
    const doc = readFileSync(files.docFile, 'utf8');
    expect(doc).not.toBe(before);
    expect(doc).toContain('| flags-http | CPU per request | 16.4 µs | ≤ 45 µs | met |');
    expect(doc).toContain('](benchmarks.svg)');
    expect(doc.startsWith(`# Benchmarks\n\n${startMarker}\n`)).toBe(true);
    expect(doc.endsWith(`\n${endMarker}\n`)).toBe(true);
  });
});
