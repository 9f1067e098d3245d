/**
 * The /flags, legacy and evaluation_reasons bodies built from the per-snapshot fragment tables are byte for byte
 * the bodies of the builder they replaced (test/support/flags-response-oracle.ts): over random definitions and
 * contexts, the consistency tables' flags, the benchmark's definitions, outcomes outside a flag's table, and keys,
 * names and payloads that need escaping. Each context is answered twice (the second answer comes from the table).
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileDefinitions, type CompiledDefinitions } from '../../src/eval/compile.js';
import { evaluateQuery, legacyBody, reasonsBody, v2Body, type Decided, type FlagsQuery } from '../../src/eval/flags-response.js';
import { noRemote, type RemotePart } from '../../src/eval/remote-part.js';
import { makeEvalContexts, makeEvalDefinitions } from '../bench/definitions.js';
import { contextArbitrary, definitionsArbitrary, type CaseContext } from '../support/flag-cases.js';
import { oracleLegacyBody, oracleReasonsBody, oracleV2Body } from '../support/flags-response-oracle.js';

const nowMs = Date.UTC(2026, 10, 26);
const remote: RemotePart = { ...noRemote(false), details: ['"up":{"key":"up","enabled":true}'], values: ['"up":true'], payloads: ['"up":"{}"'], quotaLimited: ['x'] };
const stamp = { requestId: 'req-1', evaluatedAt: nowMs, minimalFlagCalledEvents: true };

const query = (c: CaseContext): FlagsQuery => ({ ...c, flagKeys: null, runtime: 'all', contexts: null });

/** Every body both ways for the decided flags, twice; returns nothing, fails the test on the first difference. */
function sameBodies(decided: readonly Decided[]): void {
  for (let pass = 0; pass < 2; pass++) {
    for (const part of [noRemote(false), remote]) {
      expect(v2Body(decided, part, stamp).toString()).toBe(oracleV2Body(decided, part, stamp));
      expect(legacyBody(decided, part, stamp).toString()).toBe(oracleLegacyBody(decided, part, stamp));
    }
    expect(reasonsBody(decided).toString()).toBe(oracleReasonsBody(decided));
  }
}

const answer = (defs: CompiledDefinitions, c: CaseContext): readonly Decided[] => evaluateQuery(defs, query(c), nowMs).decided;

describe('the /flags bodies from fragment tables equal the former builder', () => {
  it('over random definitions and contexts', () => {
    fc.assert(
      fc.property(definitionsArbitrary, fc.array(contextArbitrary, { minLength: 4, maxLength: 4 }), (body, contexts) => {
        const defs = compileDefinitions(body);
        for (const c of contexts) sameBodies(answer(defs, c));
      }),
      { numRuns: 300 },
    );
  });

  it('over the consistency tables (1,000 users each) and the benchmark definitions (200 users)', () => {
    for (const name of ['consistency-simple.json', 'consistency-multivariate.json']) {
      const table = JSON.parse(readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8')) as { flag: Record<string, unknown> };
      const defs = compileDefinitions({ flags: [table.flag], cohorts: {} });
      for (let i = 0; i < 1000; i++) sameBodies(answer(defs, { distinctId: `distinct_id_${i}`, personProperties: {}, groups: {}, groupProperties: {} }));
    }
    const defs = compileDefinitions(makeEvalDefinitions(60));
    for (const c of makeEvalContexts(200)) sameBodies(answer(defs, c));
  });

  it('for keys, names and payloads that need escaping, and outcomes outside a flag\'s table', () => {
    const defs = compileDefinitions({
      flags: [
        {
          id: 7,
          key: 'k"\\\u2028é😀\ud800',
          name: 'say "hi"\n',
          version: 3,
          has_experiment: true,
          active: true,
          filters: {
            groups: [{ properties: [], rollout_percentage: 100 }],
            multivariate: { variants: [{ key: 'a"b', rollout_percentage: 50 }, { key: 'ü', rollout_percentage: 50 }] },
            payloads: { 'a"b': '{"x":"$&"}', ü: 5, true: '"\u2028"' },
            holdout: { id: 3, exclusion_percentage: 10 },
          },
        },
        { id: null, key: 'plain', name: null, version: null, active: false, filters: { payloads: { true: '[1]' } } },
      ],
      cohorts: {},
    });
    const [odd, plain] = defs.flags as [CompiledDefinitions['flags'][number], CompiledDefinitions['flags'][number]];
    const decided: Decided[] = [];
    for (const value of [false, true, 'a"b', 'ü', 'holdout-3', 'not-a-variant', '']) {
      for (const reason of ['condition_match', 'no_condition_match', 'out_of_rollout_bound', 'no_group_type', 'holdout_condition_value', 'flag_disabled', 'super_condition_value'] as const) {
        for (const conditionIndex of [null, 0, 1, 5, -1]) decided.push({ flag: odd, value, reason, conditionIndex }, { flag: plain, value, reason, conditionIndex });
      }
    }
    sameBodies(decided);
  });

  it('when each list is empty, local only, upstream only or both, with several and non-ASCII upstream fragments, and request ids needing escapes or not', () => {
    const defs = compileDefinitions(makeEvalDefinitions(6));
    const decided = answer(defs, makeEvalContexts(1)[0] as CaseContext);
    const some = decided.filter((d) => d.flag.payloads.size > 0).slice(0, 2);
    const parts: RemotePart[] = [
      noRemote(true),
      { ...noRemote(false), details: ['"a":{"key":"a","enabled":true}'], values: ['"a":true'], payloads: [] },
      {
        ...noRemote(false),
        details: ['"ü":{"key":"ü","enabled":true}', '"b":{"key":"b","enabled":false}', '"😀":{}'],
        values: ['"ü":"v"', '"b":false', '"😀":true'],
        payloads: ['"ü":"\u2028é"', '"😀":[1]'],
        quotaLimited: ['feature_flags', 'é'],
        evaluatedAt: 5,
      },
    ];
    for (const local of [[], decided.slice(0, 1), some, decided]) {
      for (const part of parts) {
        for (const [minimalFlagCalledEvents, requestId] of [
          [false, 'r'],
          [true, '0b7e9c1e-3f1a-4c2b-9d8e-5f6a7b8c9d0e'],
          [false, 'say "hi"\\\n\u0000\u001f\u007f'],
          [true, 'é😀\u2028\ud800x\udc00'],
          [false, ''],
        ] as const) {
          const at = { requestId, evaluatedAt: 7, minimalFlagCalledEvents };
          expect(v2Body(local, part, at).toString()).toBe(oracleV2Body(local, part, at));
          expect(legacyBody(local, part, at).toString()).toBe(oracleLegacyBody(local, part, at));
        }
      }
      expect(reasonsBody(local).toString()).toBe(oracleReasonsBody(local));
    }
  });
});
