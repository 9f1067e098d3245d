/**
 * Regex engine benchmark (issue 15 item 1): the flag `regex` operator on RE2 (re2js, what the sidecar runs)
 * against V8's RegExp (the unsafe baseline, what posthog-node runs), measured in the same process and run:
 * - per-match time on typical flag patterns and subjects, raw engines and the sidecar's whole matcher
 *   (`compileRegexOperator`: ASCII scan, translation done once, RE2 test), as ratios to V8;
 * - compile time per pattern (V8's compile is also the sidecar's syntax check; RE2's happens at the first match);
 * - the pathological case `^(a+)+$` on 'a'×n + '!': V8 for small n (it doubles per character), RE2 for n = 40
 *   and for a 1 MiB subject.
 * V8 compiles lazily and caches by source, so its figure is a cache hit, shown for scale only.
 * Optional engines, when resolvable from BENCH_REGEX_MODULES (a directory holding node_modules, e.g. after
 * `npm i --prefix /tmp/re2-engines re2@1.24.0 re2-wasm`): the native `re2` addon and `re2-wasm`; they are not
 * dependencies of the project.
 *
 * Run: `BENCH_ONLY=regex npm run bench` (pinned to core 0), or `taskset -c 0 node --import tsx test/bench/regex.ts`.
 * Env: BENCH_REGEX_ROUNDS (default 5), BENCH_REGEX_MS (per engine, case and round, default 200).
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { RE2JS } from 're2js';
import { compileRegexOperator } from '../../src/eval/regex.js';
import { toRe2Syntax } from '../../src/eval/regex-translate.js';

const rounds = Number(process.env.BENCH_REGEX_ROUNDS ?? 5);
const roundMs = Number(process.env.BENCH_REGEX_MS ?? 200);

type Test = (subject: string) => boolean;
interface Engine {
  name: string;
  compile: (pattern: string) => Test;
  /** Compiled patterns are never freed (re2-wasm: no delete, no finalizer; its 16 MiB heap then aborts). */
  leaks?: true;
}

function re2Syntax(pattern: string): string {
  const syntax = toRe2Syntax(pattern);
  if (syntax === null) throw new Error(`not translatable: ${pattern}`);
  return syntax;
}

const engines: Engine[] = [
  { name: 'V8 RegExp', compile: (p) => { const r = new RegExp(p); return (s) => r.test(s); } },
  { name: 're2js', compile: (p) => { const r = RE2JS.compile(re2Syntax(p)); return (s) => r.test(s); } },
  {
    name: 'sidecar matcher (re2js)',
    compile: (p) => {
      const match = compileRegexOperator(p, false).match;
      return (s) => match(s, 0) === true;
    },
  },
];

interface RE2Like {
  test(subject: string): boolean;
}
function optionalEngines(): Engine[] {
  const dir = process.env.BENCH_REGEX_MODULES;
  if (dir === undefined) return [];
  const load = createRequire(join(dir, 'package.json'));
  const found: Engine[] = [];
  try {
    const Native = load('re2') as new (pattern: string) => RE2Like;
    found.push({ name: 'native re2', compile: (p) => { const r = new Native(re2Syntax(p)); return (s) => r.test(s); } });
  } catch (error) {
    console.log(`native re2 not loaded: ${(error as Error).message.split('\n')[0]}`);
  }
  try {
    const { RE2: Wasm } = load('re2-wasm') as { RE2: new (pattern: string, flags: string) => RE2Like };
    found.push({ name: 're2-wasm', leaks: true, compile: (p) => { const r = new Wasm(re2Syntax(p), 'u'); return (s) => r.test(s); } });
  } catch (error) {
    console.log(`re2-wasm not loaded: ${(error as Error).message.split('\n')[0]}`);
  }
  return found;
}

const cases: Array<[pattern: string, subject: string]> = [
  ['^.*@example\\.com$', 'jane.doe@example.com'],
  ['^.*@example\\.com$', 'jane.doe@another-domain.org'],
  ['^(foo|bar)-\\d+$', 'bar-123456'],
  ['^(foo|bar)-\\d+$', 'nomatch-at-all-here'],
  ['[a-z]+\\d{2,4}', 'user_ABC_xyz2024'],
  ['^[a-z]+\\.[a-z]+@(example|acme)\\.com$', 'jane.doe@acme.com'],
  ['^(alpha|beta|rc)\\.\\d+\\.\\d+$', '2.4.1'],
];

/** ns per call of `fn` over about `ms` milliseconds. */
function nsPerCall(fn: () => unknown, ms: number): number {
  let calls = 0;
  const started = process.hrtime.bigint();
  const deadline = started + BigInt(ms) * 1_000_000n;
  let now = started;
  while (now < deadline) {
    for (let i = 0; i < 256; i++) fn();
    calls += 256;
    now = process.hrtime.bigint();
  }
  return Number(now - started) / calls;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const fmt = (ns: number): string => (ns >= 1e6 ? `${(ns / 1e6).toFixed(1)} ms` : ns >= 1e3 ? `${(ns / 1e3).toFixed(2)} µs` : `${ns.toFixed(0)} ns`);

function matchTable(all: Engine[]): void {
  console.log('\nper match (median of rounds; ratio = engine time / V8 time in the same round)\n');
  console.log(`| pattern | subject | ${all.map((e) => e.name).join(' | ')} |`);
  console.log(`|---|---|${all.map(() => '---|').join('')}`);
  for (const [pattern, subject] of cases) {
    const tests = all.map((engine) => engine.compile(pattern));
    const expected = tests[0]?.(subject);
    tests.forEach((test, i) => {
      if (test(subject) !== expected) throw new Error(`${all[i]?.name} disagrees with V8 on /${pattern}/ ${subject}`);
      nsPerCall(() => test(subject), 50);
    });
    const times: number[][] = all.map(() => []);
    for (let round = 0; round < rounds; round++) tests.forEach((test, i) => times[i]?.push(nsPerCall(() => test(subject), roundMs)));
    const v8 = times[0] as number[];
    const cells = times.map((t, i) => (i === 0 ? fmt(median(t)) : `${fmt(median(t))} (×${median(t.map((x, r) => x / (v8[r] as number))).toFixed(1)})`));
    console.log(`| \`${pattern}\` | \`${subject}\` ${expected ? '✓' : '✗'} | ${cells.join(' | ')} |`);
  }
}

function compileTable(all: Engine[]): void {
  console.log('\ncompile, per pattern (steady state, median of rounds)\n');
  console.log(`| pattern | ${all.map((e) => e.name).join(' | ')} |`);
  console.log(`|---|${all.map(() => '---|').join('')}`);
  for (const pattern of [...new Set(cases.map(([p]) => p))]) {
    // The sidecar matcher compiles RE2 at its first match: include one match so the figure is the real cost.
    const cells = all.map((engine) =>
      engine.leaks ? 'not run (leaks)' : fmt(median(Array.from({ length: rounds }, () => nsPerCall(() => engine.compile(pattern)('x'), roundMs / 2)))),
    );
    console.log(`| \`${pattern}\` | ${cells.join(' | ')} |`);
  }
}

function pathological(all: Engine[]): void {
  console.log('\n`^(a+)+$` on "a"×n + "!" (one match each)\n');
  const once = (test: Test, subject: string): number => {
    const started = process.hrtime.bigint();
    test(subject);
    return Number(process.hrtime.bigint() - started);
  };
  const v8 = all[0]?.compile('^(a+)+$') as Test;
  for (let i = 0; i < 3; i++) v8(`${'a'.repeat(16)}!`); // warm: the first runs include V8's regexp compile
  for (const n of [18, 20, 22, 24]) console.log(`- V8 RegExp, n = ${n}: ${fmt(once(v8, `${'a'.repeat(n)}!`))}`);
  console.log('- V8 RegExp, n = 40: not run (about 2^16 × the n = 24 time: hours)');
  for (const engine of all.slice(1)) {
    const test = engine.compile('^(a+)+$');
    test('warm');
    const short = once(test, `${'a'.repeat(40)}!`);
    let long: string;
    try {
      long = fmt(once(test, `${'a'.repeat(1 << 20)}!`));
    } catch (error) {
      long = `fails: ${(error as Error).message.split('\n')[0]?.slice(0, 80)}`;
    }
    console.log(`- ${engine.name}: n = 40 ${fmt(short)}; n = 1 MiB ${long}`);
  }
}

const all = [...engines, ...optionalEngines()];
console.log(`regex engines: ${all.map((e) => e.name).join(', ')}; ${rounds} rounds × ${roundMs} ms per engine and case`);
matchTable(all);
compileTable(all);
pathological(all);
