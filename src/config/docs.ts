/**
 * Renders the configuration table of docs/configuration.md from the spec. `tsx src/config/docs.ts --write`
 * rewrites the table between the config-table markers of docs/configuration.md; a test fails when the page and the
 * spec disagree.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { settings } from './spec.js';

/** Marker lines around the generated table in docs/configuration.md. */
export const tableStart = '<!-- config-table:start (generated from src/config/spec.ts by `npm run docs:config`) -->';
export const tableEnd = '<!-- config-table:end -->';

/** The page the table is generated into, relative to the repository's root. */
export const configDocPath = 'docs/configuration.md';

/** The markdown table, one row per setting, in spec order. */
export function renderConfigTable(): string {
  const rows = settings.map(([, s]) => {
    const def = s.default !== undefined ? `\`${s.default}\`` : (s.defaultText ?? '—');
    const secret = s.secret ? ' Secret: never logged.' : '';
    return `| \`${s.env}\` | ${def} | ${s.description}${secret} |`;
  });
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}

/** Replace the table between the markers of a Markdown text; throws when the markers are missing. */
export function withConfigTable(page: string): string {
  const start = page.indexOf(tableStart);
  const end = page.indexOf(tableEnd);
  if (start < 0 || end < start) throw new Error(`${configDocPath} lacks the config-table markers`);
  return `${page.slice(0, start + tableStart.length)}\n${renderConfigTable()}\n${page.slice(end)}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const pagePath = fileURLToPath(new URL(`../../${configDocPath}`, import.meta.url));
  const next = withConfigTable(readFileSync(pagePath, 'utf8'));
  if (process.argv.includes('--write')) writeFileSync(pagePath, next);
  else process.stdout.write(`${renderConfigTable()}\n`);
}
