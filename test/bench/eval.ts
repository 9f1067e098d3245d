/**
 * Local evaluation benchmark (issue 5): the compiled evaluator against the pinned SDK's local evaluation
 * (posthog-node 5.70.0, `getAllFlags(distinctId, { onlyEvaluateLocally: true, … })`), in one process, on the same
 * 50 flags (definitions.ts) and 200 contexts. First both must agree on every flag of every context (value and
 * payload; inconclusive exactly where the SDK leaves a flag out), else the script exits 1. Then warm-up, and
 * alternating timed rounds (SDK, ours); each round runs whole passes over the contexts for about BENCH_EVAL_MS.
 * Reports µs per flag (time / (contexts × flags)) for each, and the median of the per-round ratios.
 *
 * Run: `BENCH_ONLY=eval npm run bench` (pinned to core 0, with --expose-gc so that each timed side starts from a
 * full collection), or directly `taskset -c 0 node --expose-gc --import tsx test/bench/eval.ts`.
 * Env: BENCH_EVAL_ROUNDS (default 7), BENCH_EVAL_MS (per side and round, default 1000), BENCH_EVAL_CONTEXTS
 * (default 200).
 */
import { isDeepStrictEqual } from 'node:util';
import { PostHog } from 'posthog-node';
import { compileDefinitions } from '../../src/eval/compile.js';
import { createEvaluation, groupProperties, personProperties } from '../../src/eval/evaluate.js';
import { payloadFor } from '../../src/eval/payload.js';
import { makeEvalContexts, makeEvalDefinitions, type EvalContextInput } from './definitions.js';

const rounds = Number(process.env.BENCH_EVAL_ROUNDS ?? 7);
const roundMs = Number(process.env.BENCH_EVAL_MS ?? 1000);
const contextCount = Number(process.env.BENCH_EVAL_CONTEXTS ?? 200);

const body = makeEvalDefinitions();
const bodyText = JSON.stringify(body);
const contexts = makeEvalContexts(contextCount);
const defs = compileDefinitions(body);
const flagCount = defs.flags.length;

/** The SDK client, its definitions served by a custom fetch (no network); nothing else may be requested. */
async function sdkClient(): Promise<PostHog> {
  const unexpected: string[] = [];
  const client = new PostHog('phc_bench', {
    personalApiKey: 'phx_bench',
    host: 'http://127.0.0.1:9',
    featureFlagsPollingInterval: 3_600_000,
    flushAt: 1_000_000,
    flushInterval: 0,
    fetch: async (url) => {
      if (url.includes('/flags/definitions') || url.includes('/api/feature_flag/local_evaluation')) {
        return new Response(bodyText, { status: 200, headers: { 'content-type': 'application/json' } });
      }
      unexpected.push(url);
      return new Response('{}', { status: 404 });
    },
  });
  client.on('error', (error: unknown) => console.error('SDK error:', error));
  const ready = await client.waitForLocalEvaluationReady(10_000);
  if (!ready || !client.isLocalEvaluationReady()) throw new Error('the SDK did not load the definitions');
  if (unexpected.length > 0) throw new Error(`the SDK requested ${unexpected.join(', ')}`);
  return client;
}

const sdkOptions = (ctx: EvalContextInput) => ({
  onlyEvaluateLocally: true,
  personProperties: ctx.personProperties,
  groups: ctx.groups,
  groupProperties: ctx.groupProperties,
});

/** Ours for one context: one evaluation, every flag, the payload of each decided flag. */
function evaluateOurs(ctx: EvalContextInput, nowMs: number): number {
  const evaluation = createEvaluation(defs, {
    distinctId: ctx.distinctId,
    groups: ctx.groups,
    personProperties: personProperties(ctx.distinctId, ctx.personProperties),
    groupProperties: groupProperties(ctx.groups, ctx.groupProperties),
    nowMs,
  });
  let decided = 0;
  for (const flag of defs.flags) {
    const outcome = evaluation.evaluate(flag);
    if (outcome.kind === 'value') {
      decided++;
      if (payloadFor(flag, outcome.value) !== undefined) decided++;
    }
  }
  return decided;
}

/** Both give the same answer for every flag of every context; returns the tallies, or exits 1. */
async function checkAgreement(client: PostHog): Promise<{ decided: number; inconclusive: number; variants: number; payloads: number }> {
  const tally = { decided: 0, inconclusive: 0, variants: 0, payloads: 0 };
  const mismatches: unknown[] = [];
  for (const ctx of contexts) {
    const answer = await client.getAllFlagsAndPayloads(ctx.distinctId, sdkOptions(ctx));
    const sdk = { featureFlags: answer.featureFlags ?? {}, featureFlagPayloads: answer.featureFlagPayloads ?? {} };
    const flagsOnly = await client.getAllFlags(ctx.distinctId, sdkOptions(ctx));
    if (!isDeepStrictEqual(flagsOnly, sdk.featureFlags)) mismatches.push({ ctx: ctx.distinctId, getAllFlags: flagsOnly, getAllFlagsAndPayloads: sdk.featureFlags });
    const evaluation = createEvaluation(defs, {
      distinctId: ctx.distinctId,
      groups: ctx.groups,
      personProperties: personProperties(ctx.distinctId, ctx.personProperties),
      groupProperties: groupProperties(ctx.groups, ctx.groupProperties),
      nowMs: Date.now(),
    });
    for (const flag of defs.flags) {
      const outcome = evaluation.evaluate(flag);
      const theirs = Object.hasOwn(sdk.featureFlags, flag.key)
        ? { value: sdk.featureFlags[flag.key], payload: sdk.featureFlagPayloads[flag.key] }
        : 'inconclusive';
      let ours: unknown = 'inconclusive';
      if (outcome.kind === 'value') {
        const payload = payloadFor(flag, outcome.value)?.value;
        ours = { value: outcome.value, payload: payload ? payload : undefined }; // the SDK drops falsy payloads
        tally.decided++;
        if (typeof outcome.value === 'string') tally.variants++;
        if (payload) tally.payloads++;
      } else tally.inconclusive++;
      if (!isDeepStrictEqual(ours, theirs)) mismatches.push({ ctx: ctx.distinctId, flag: flag.key, ours, theirs });
    }
  }
  if (mismatches.length > 0) {
    console.error(`WARNING: the evaluator and the SDK disagree on ${mismatches.length} flag(s); the comparison would not be apples to apples:`);
    for (const m of mismatches.slice(0, 10)) console.error(JSON.stringify(m));
    process.exit(1);
  }
  return tally;
}

/** Whole passes over the contexts for at least `ms`; µs per flag evaluated. */
async function timeSdk(client: PostHog, ms: number): Promise<number> {
  let passes = 0;
  let sink = 0;
  const started = performance.now();
  do {
    for (const ctx of contexts) sink += Object.keys(await client.getAllFlags(ctx.distinctId, sdkOptions(ctx))).length;
    passes++;
  } while (performance.now() - started < ms);
  const elapsed = performance.now() - started;
  if (sink === 0) throw new Error('the SDK decided nothing');
  return (elapsed * 1000) / (passes * contexts.length * flagCount);
}

function timeOurs(ms: number): number {
  let passes = 0;
  let sink = 0;
  const started = performance.now();
  do {
    const nowMs = Date.now(); // as a request would read the clock
    for (const ctx of contexts) sink += evaluateOurs(ctx, nowMs);
    passes++;
  } while (performance.now() - started < ms);
  const elapsed = performance.now() - started;
  if (sink === 0) throw new Error('the evaluator decided nothing');
  return (elapsed * 1000) / (passes * contexts.length * flagCount);
}

/** With --expose-gc (run.ts passes it): a full collection before each timed side, so neither pays for the other's garbage. */
const collect = (globalThis as { gc?: () => void }).gc ?? (() => undefined);

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function main(): Promise<void> {
  const client = await sdkClient();
  try {
    const tally = await checkAgreement(client);
    console.log(
      `eval: ${flagCount} flags × ${contexts.length} contexts: agreement with posthog-node on all ${flagCount * contexts.length} ` +
        `(${tally.decided} decided — ${tally.variants} variants, ${tally.payloads} with payloads — and ${tally.inconclusive} inconclusive on both)`,
    );
    // Warm-up: both paths optimized before anything is measured.
    await timeSdk(client, 2 * roundMs);
    timeOurs(2 * roundMs);
    const sdk: number[] = [];
    const ours: number[] = [];
    for (let r = 0; r < rounds; r++) {
      collect();
      sdk.push(await timeSdk(client, roundMs));
      collect();
      ours.push(timeOurs(roundMs));
    }
    const ratios = sdk.map((s, i) => s / (ours[i] as number));
    console.log(
      `eval: µs per flag per round: SDK ${sdk.map((x) => x.toFixed(2)).join(', ')}; ours ${ours.map((x) => x.toFixed(3)).join(', ')}; ` +
        `ratios ${ratios.map((x) => x.toFixed(1)).join(', ')}`,
    );
    console.log(
      `eval: SDK getAllFlags (onlyEvaluateLocally) ${median(sdk).toFixed(2)} µs/flag (${(median(sdk) * flagCount).toFixed(0)} µs per context); ` +
        `evaluator ${median(ours).toFixed(3)} µs/flag (${(median(ours) * flagCount).toFixed(1)} µs per context); ` +
        `speed-up (median of per-round ratios) **${median(ratios).toFixed(1)}×** (target ≥ 10×)`,
    );
  } finally {
    await client.shutdown();
  }
}

await main();
