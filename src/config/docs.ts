/**
 * Renders the README's configuration table from the spec. `tsx src/config/docs.ts --write` rewrites the
 * table in README.md between the config-table markers; a test fails when README and spec disagree.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { settings } from './spec.js';

/** Marker lines around the generated table in README.md. */
export const tableStart = '<!-- config-table:start (generated from src/config/spec.ts by `npm run docs:config`) -->';
export const tableEnd = '<!-- config-table:end -->';

/** The markdown table, one row per setting, in spec order. */
export function renderConfigTable(): string {
  const rows = settings.map(([, s]) => {
    const def = s.default !== undefined ? `\`${s.default}\`` : (s.defaultText ?? '—');
    const secret = s.secret ? ' Secret: never logged.' : '';
    return `| \`${s.env}\` | ${def} | ${s.description}${secret} |`;
  });
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}

/** Replace the table between the markers of a README text; throws when the markers are missing. */
export function withConfigTable(readme: string): string {
  const start = readme.indexOf(tableStart);
  const end = readme.indexOf(tableEnd);
  if (start < 0 || end < start) throw new Error('README.md lacks the config-table markers');
  return `${readme.slice(0, start + tableStart.length)}\n${renderConfigTable()}\n${readme.slice(end)}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const readmePath = fileURLToPath(new URL('../../README.md', import.meta.url));
  const next = withConfigTable(readFileSync(readmePath, 'utf8'));
  if (process.argv.includes('--write')) writeFileSync(readmePath, next);
  else process.stdout.write(`${renderConfigTable()}\n`);
}
