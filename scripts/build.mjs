// `npm run build` after the type check: src/ bundled by esbuild into OUTDIR (default dist/), what the image runs.
// Usage: node scripts/build.mjs [OUTDIR]
//
// One module for what every start loads (dist/main.js, the entry, and the app chunk it imports to serve) instead
// of ~150 files resolved and compiled one by one: about 60-80 ms less from spawn to ready with 1,000 flags
// (docs/benchmarks.md as of c3f48ec, "Footprint and start-up"). Dynamic imports stay separate chunks, so what a configuration
// does not need (the upstream client, the events relay, fleet mode) is still never loaded. Dependencies are bundled
// too (pino, prom-client's files, lru-cache, re2js), but undici and @redis/client, which stay in node_modules (see
// `external` below). Source maps are written beside each file, for `node --enable-source-maps`.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = process.argv[2] ?? `${root}dist`;
rmSync(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: ['src/main.ts'],
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Dependencies bundled, but for the two only some configurations load (the upstream client's undici, fleet mode's
  // Redis client). Resolved by node from node_modules file by file (~50 CommonJS files for pino and prom-client),
  // they made node's own path functions hot enough at start for V8 to optimize them, which pages its optimizing
  // compiler into a process that then idles: ~5 MiB of RSS on Node 20 (docs/benchmarks.md as of c3f48ec, "Footprint", fourth
  // pass). Bundled CommonJS requires node's builtins through `require`, which an ES module has not: the banner gives
  // each chunk one.
  external: ['undici', '@redis/client'],
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  sourcemap: true,
  logLevel: 'warning',
});

// Every chunk ASCII only. esbuild escapes non-ASCII characters in strings, regexes and names, but copies the comments
// it keeps as they are; one '—' in a comment makes V8 hold the chunk's whole source (272 KB for the app chunk) as a
// two-byte string, twice the memory, for the life of the process. Each such character becomes one ASCII character
// (two for one outside the BMP, as it counts two in UTF-16), so the source maps' columns stay right.
const ascii = { '—': '-', '–': '-', '→': '>', '←': '<', '≥': '>', '≤': '<', '×': 'x', '…': '.', '’': "'", '‘': "'", '“': '"', '”': '"' };
for (const name of readdirSync(outdir)) {
  if (!name.endsWith('.js')) continue;
  const file = join(outdir, name);
  const text = readFileSync(file, 'utf8');
  if (/[^\x00-\x7f]/.test(text)) writeFileSync(file, text.replace(/[^\x00-\x7f]/gu, (c) => ascii[c] ?? '?'.repeat(c.length)));
}
