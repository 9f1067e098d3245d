/**
 * One user's `/flags?v=2` answer in process, no HTTP (issue 19): `evaluateQuery` + `v2Body` on
 * `makeEvalDefinitions(N)`, the `/flags` bench user. Warm-up, then timed requests; prints µs per request and ns
 * per flag. With `cg` it runs under callgrind and counts only the timed requests (callgrind_control zeroes the
 * counters after the warm-up and dumps after the last request), so instructions per flag compare across N:
 *
 *   node --import tsx test/bench/flags-inprocess.ts N [REQUESTS [WARM]] [unique] [varied]
 *   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg node --import tsx test/bench/flags-inprocess.ts N 30000/N 120000/N cg [unique]
 *   (then: instructions per request = the `summary:` of /tmp/cg.1 / REQUESTS)
 * For counts that repeat from run to run, add `--separate-threads=yes` to valgrind and `--single-threaded` to node
 * (V8 then compiles and collects on the main thread at the same points; with its background threads, callgrind's
 * serialization of threads made two runs of the same code differ by up to 70%) and read /tmp/cg.1-01.
 * `unique`: `makeEvalDefinitions(N, { uniqueValues: true })`, where no two flags share a property filter or cohort.
 * `varied`: a different distinct id (a UUID) for each request, where the bench user's is the same for all.
 */
import { execFileSync } from 'node:child_process';
import { compileDefinitions } from '../../src/eval/compile.js';
import { evaluateQuery, v2Body } from '../../src/eval/flags-response.js';
import { noRemote } from '../../src/eval/remote-part.js';
import { benchUser, makeEvalDefinitions } from './definitions.js';

const args = process.argv.slice(2);
const numbers = args.filter((arg) => /^\d+$/.test(arg)).map(Number);
const n = numbers[0] ?? 1000;
const requests = numbers[1] ?? Math.max(10, Math.round(30_000 / n));
const warm = numbers[2] ?? requests * 4;
const callgrind = args.includes('cg');
const uniqueValues = args.includes('unique');

const defs = compileDefinitions(makeEvalDefinitions(n, { uniqueValues }));
const query = { ...benchUser, flagKeys: null, runtime: 'server' as const, contexts: null };
// `varied`: each request another person, a UUID as distinct id (36 characters: two-block hash inputs for longer keys).
const varied = args.includes('varied');
const uuid = (i: number): string => `018f3c2a-7b1e-7c4d-9a2f-${i.toString(16).padStart(12, '0')}`;
const remote = noRemote(false);
let bytes = 0;
const run = (count: number): void => {
  for (let i = 0; i < count; i++) {
    const answer = evaluateQuery(defs, varied ? { ...query, distinctId: uuid(i) } : query, Date.UTC(2026, 0, 1));
    bytes += v2Body(answer.decided, remote, { requestId: 'bench', evaluatedAt: 0 }).length;
  }
};
run(warm);
if (callgrind) execFileSync('callgrind_control', ['-z', String(process.pid)]);
const start = process.hrtime.bigint();
run(requests);
const ns = Number(process.hrtime.bigint() - start);
if (callgrind) execFileSync('callgrind_control', ['-d', String(process.pid)]);
console.log(`${n} flags${uniqueValues ? ' (unique values)' : ''}: ${(ns / requests / 1000).toFixed(1)} µs per request, ${(ns / requests / n).toFixed(0)} ns per flag (${requests} requests, ${bytes} bytes)`);
