/**
 * What the image holds: production dependencies only (npm prune --omit=dev). Every package the shipped code
 * imports must therefore be a node builtin or in package.json's "dependencies" — a devDependency imported from
 * src/ would pass every test here and fail in the container.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rootDir } from '../support/start-sidecar.js';

const pkg = JSON.parse(readFileSync(join(rootDir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };

/** Bare package names imported by a source text (static imports, re-exports, dynamic imports, require calls). */
export function importedPackages(source: string): string[] {
  const names = new Set<string>();
  for (const match of source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)['"]([^'".][^'"]*)['"]/g)) {
    const specifier = match[1] as string;
    if (specifier.startsWith('node:') || builtinModules.includes(specifier)) continue;
    const parts = specifier.split('/');
    names.add(specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] as string));
  }
  return [...names];
}

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );

describe('runtime dependencies', () => {
  it('finds the packages an import names, and only those', () => {
    const text = `import { a } from 'lru-cache';\nimport type { B } from '@scope/pkg/sub';\nexport * from './local.js';\nconst x = await import('undici');\nconst y = require('prom-client/lib/registry');\nimport 'side-effect';\nimport { readFile } from 'node:fs';\nimport { join } from 'path';`;
    expect(importedPackages(text).sort()).toEqual(['@scope/pkg', 'lru-cache', 'prom-client', 'side-effect', 'undici']);
  });

  it('src/ imports nothing outside "dependencies" and node builtins', () => {
    const outside: string[] = [];
    const seen = new Set<string>();
    for (const file of sourceFiles(join(rootDir, 'src'))) {
      // Type-only imports vanish at compile time.
      const text = readFileSync(file, 'utf8').replace(/^import type .*$/gm, '');
      for (const name of importedPackages(text)) {
        seen.add(name);
        if (!Object.hasOwn(pkg.dependencies, name)) outside.push(`${file}: ${name}`);
      }
    }
    expect(outside).toEqual([]);
    expect([...seen]).toEqual(expect.arrayContaining(['undici', 'lru-cache', 'pino', 'prom-client', 're2js'])); // the scan sees them
  });
});
