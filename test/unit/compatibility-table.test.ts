/**
 * The compatibility table of docs/api-compatibility.md ("Contract → upstream source → sidecar") stays honest:
 * every row cites upstream's source — a repository (`owner/name`) and a file in it — every divergence says why,
 * and every sidecar and test file a row names exists in the repository.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rootDir } from '../support/start-sidecar.js';

const page = readFileSync(join(rootDir, 'docs/api-compatibility.md'), 'utf8');

/** The rows of every table in the section, as cells (header and separator rows left out), with their group. */
export function tableRows(markdown: string): Array<{ group: string; cells: string[] }> {
  const start = markdown.indexOf('\n## Contract → upstream source → sidecar\n');
  if (start < 0) return [];
  const end = markdown.indexOf('\n## ', start + 1);
  const section = markdown.slice(start, end < 0 ? undefined : end);
  const rows: Array<{ group: string; cells: string[] }> = [];
  let group = '';
  let header = false;
  for (const line of section.split('\n')) {
    if (line.startsWith('### ')) group = line.slice(4);
    if (!line.startsWith('|')) {
      header = false;
      continue;
    }
    if (!header) {
      header = true; // the first line of a table is its header
      continue;
    }
    if (/^\|[-| ]+\|$/.test(line)) continue;
    // Split on pipes outside code spans (a contract may quote `a | b`).
    const cells = line
      .slice(1, -1)
      .split(/\|(?=(?:[^`]*`[^`]*`)*[^`]*$)/)
      .map((cell) => cell.trim());
    rows.push({ group, cells });
  }
  return rows;
}

/** A citation: `owner/name · ` followed by a backticked path with a file extension. */
const citation = /(?:^|; )[A-Za-z0-9][\w.-]*\/[\w.-]+ · `[^`]+\.[a-z]{1,5}`/;

/** Repository paths (`src/…`, `test/…`) named in a cell. */
const repoPaths = (cell: string): string[] => [...cell.matchAll(/`((?:src|test)\/[^`\s]+)`/g)].map((m) => m[1] as string);

const rows = tableRows(page);

describe('the compatibility table', () => {
  it('has a row for every area the sidecar imitates', () => {
    const groups = new Set(rows.map((row) => row.group));
    for (const area of ['Definitions paths', '`/flags` and `/decide`', 'Evaluation rules', 'Flag API', 'Named endpoints', 'Keys and scopes', 'Capture', 'OpenFeature (OFREP)', 'Rate limits and billing', "Static cohorts' persons API"]) {
      expect(groups, area).toContain(area);
    }
    expect(rows.length).toBeGreaterThan(80);
  });

  it('has four cells per row, none but the test empty', () => {
    const bad = rows.filter(({ cells }) => cells.length !== 4 || cells.slice(0, 3).some((cell) => cell === '')).map(({ cells }) => cells[0]);
    expect(bad).toEqual([]);
  });

  it('cites a repository and a file of upstream on every row', () => {
    const uncited = rows.filter(({ cells }) => !citation.test(cells[1] as string)).map(({ cells }) => `${cells[0]} → ${cells[1]}`);
    expect(uncited).toEqual([]);
  });

  it('gives the reason of every divergence', () => {
    const divergences = rows.filter(({ cells }) => /^\*\*divergence/.test(cells[0] as string));
    expect(divergences.length).toBeGreaterThan(20);
    const bare = divergences.filter(({ cells }) => !/^\*\*divergence(?: \(unfixed\))?:\*\* \S.{30,}/.test(cells[0] as string)).map(({ cells }) => cells[0]);
    expect(bare).toEqual([]);
  });

  it('names only sidecar and test files that exist', () => {
    const named = rows.flatMap(({ cells }) => [...repoPaths(cells[2] as string), ...repoPaths(cells[3] as string)]);
    expect(named.length).toBeGreaterThan(rows.length);
    expect(named.filter((path) => !existsSync(join(rootDir, path)))).toEqual([]);
  });

  it('names a sidecar file on every row', () => {
    expect(rows.filter(({ cells }) => repoPaths(cells[2] as string).length === 0).map(({ cells }) => cells[0])).toEqual([]);
  });
});

describe('the table reader itself', () => {
  it('reads rows, groups and cells with pipes in code spans', () => {
    const text = '\n## Contract → upstream source → sidecar\n\n### A\n\n| c | s | f | t |\n|---|---|---|---|\n| x `a | b` | o/r · `f.rs` | `src/a.ts` | — |\n\n## Next\n| no | table |\n';
    expect(tableRows(text)).toEqual([{ group: 'A', cells: ['x `a | b`', 'o/r · `f.rs`', '`src/a.ts`', '—'] }]);
    expect(citation.test('o/r · `f.rs`')).toBe(true);
    expect(citation.test('`rust/f.rs`')).toBe(false);
  });
});
