/**
 * The bucketing hash alone (issue 19): `flagHashOf` as the evaluator calls it (heads encoded per snapshot, the
 * bench user's distinct id, salts '' and 'variant') over the keys of `makeEvalDefinitions(N)`, or with `crypto`
 * node:crypto's one-shot SHA-1 of the same strings (what inputs past 247 bytes take). Warm-up, then timed rounds;
 * with `cg` under callgrind, counting only the timed rounds as flags-inprocess.ts does:
 *
 *   node --import tsx test/bench/hash.ts [js|crypto]
 *   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg-hash node --import tsx test/bench/hash.ts js cg
 *   (then: instructions per hash = the `summary:` of /tmp/cg-hash.1 / the hashes it prints)
 */
import { execFileSync } from 'node:child_process';
import { hash } from 'node:crypto';
import { flagHashHeads, flagHashOf } from '../../src/eval/hash.js';
import { benchUser, makeEvalDefinitions } from './definitions.js';

const mode = process.argv[2] ?? 'js';
const callgrind = process.argv[3] === 'cg';
const keys = (makeEvalDefinitions(1000) as { flags: Array<{ key: string }> }).flags.map((flag) => flag.key);
const heads = flagHashHeads(keys);
const value = benchUser.distinctId;
let sink = 0;
const round =
  mode === 'crypto'
    ? (): void => {
        for (const key of keys) sink += hash('sha1', `${key}.${value}`, 'buffer').readUInt32BE(0) + hash('sha1', `${key}.${value}variant`, 'buffer').readUInt32BE(0);
      }
    : (): void => {
        for (let i = 0; i < keys.length; i++) {
          sink += flagHashOf(keys[i] as string, heads.words, heads.at[i] as number, value) + flagHashOf(keys[i] as string, heads.words, heads.at[i] as number, value, 'variant');
        }
      };
for (let i = 0; i < 200; i++) round();
if (callgrind) execFileSync('callgrind_control', ['-z', String(process.pid)]);
const rounds = 50;
const start = process.hrtime.bigint();
for (let i = 0; i < rounds; i++) round();
const ns = Number(process.hrtime.bigint() - start);
if (callgrind) execFileSync('callgrind_control', ['-d', String(process.pid)]);
const hashes = rounds * 2 * keys.length;
console.log(`${mode}: ${hashes} hashes, ${(ns / hashes).toFixed(0)} ns per hash (${sink > 0 ? 'ok' : 'no output'})`);
