/**
 * Differential test from PostHog's own SDK test suites: every flag value that posthog-node's and posthog-python's
 * flag tests assert after local evaluation (test/fixtures/sdk-suites.json, with each case's origin) must be what a
 * sidecar answers to `POST /flags?v=2` with the same definitions and inputs. Where the SDK could not decide locally
 * ("inconclusive"), the sidecar must not decide either: it asks upstream for that flag.
 */
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeProject, type FakeUpstream } from '../support/fake-upstream.js';
import { upstreamKey } from '../support/fixtures.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';
import type { FlagExpectation } from '../support/sdk-cases/classify.js';

interface Fixture {
  sources: Record<string, { repository: string; commit: string }>;
  skipped: Record<string, number>;
  origins: Array<{ sdk: string; path: string; test: string }>;
  definitions: Array<{ flags: Array<{ key: string; active?: unknown }>; cohorts: unknown; group_type_mapping: unknown }>;
  groups: Array<{ origin: number; definitions: number; cases: Array<[Record<string, unknown>, Record<string, FlagExpectation>]> }>;
}

interface Answer {
  enabled: boolean;
  variant: string | null;
  reason?: { code?: string; description?: string };
  metadata?: { payload?: string | null };
}

interface Divergence {
  sdk: string;
  test: string;
  key: string;
  kind: 'divergence' | 'input' | 'open';
  reason: string;
}

const fixture = JSON.parse(readFileSync(new URL('../fixtures/sdk-suites.json', import.meta.url), 'utf8')) as Fixture;
const divergences = (JSON.parse(readFileSync(new URL('../fixtures/sdk-suites-divergences.json', import.meta.url), 'utf8')) as { entries: Divergence[] }).entries;
const listed = (sdk: string, test: string, key: string): Divergence | undefined =>
  divergences.find((d) => d.sdk === sdk && d.test === test && d.key === key);
const token = (set: number): string => `phc_sdksuite${set}`;
let upstream: FakeUpstream;
let sidecar: TestSidecar;

beforeAll(async () => {
  // One project per definitions set, so every case is asked of the snapshot its SDK test held.
  const projects: Record<number, FakeProject> = {};
  fixture.definitions.forEach((definitions, i) => {
    projects[i + 1] = { token: token(i), definitions: structuredClone(definitions) };
  });
  upstream = await startFakeUpstream({ projects, keys: [upstreamKey] });
  sidecar = await startTestSidecar({
    FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
    FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
    FLAG_SIDECAR_PROJECTS: fixture.definitions.map((_, i) => `${i + 1}:${token(i)}`).join(','),
    FLAG_SIDECAR_POLL_INTERVAL: '5m',
  });
  await Promise.all(fixture.definitions.map((_, i) => sidecar.poller?.pollNow(i + 1)));
  await waitFor(() => sidecar.store.ready(), 'every definitions set loaded', 20_000);
}, 60_000);

afterAll(async () => {
  await sidecar.stop();
  await upstream.close();
});

/** The payload the SDK hands its caller: the v2 answer's JSON-text payload, parsed. */
function payloadOf(answer: Answer | undefined): unknown {
  const text = answer?.metadata?.payload;
  if (text === undefined || text === null) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Why the sidecar's answer for one flag differs from the SDK test's, or undefined when it agrees. */
function disagreement(key: string, want: FlagExpectation, answer: Answer | undefined, upstreamAsked: boolean, inactive: boolean): string | undefined {
  // The fake upstream answers "server", or, as upstream, missing_dependency (which the sidecar never decides itself).
  const fromUpstream = upstreamAsked && (answer?.reason?.description === 'server' || answer?.reason?.code === 'missing_dependency');
  if (want === 'inconclusive') return fromUpstream ? undefined : `decided locally as ${JSON.stringify(answer)}, the SDK could not`;
  if (answer?.reason?.description === 'server') return `asked upstream, the SDK decided ${JSON.stringify(want)}`;
  // Upstream's flags service evaluates only active flags, so an inactive one is absent from /flags, where the SDK says false.
  if (answer === undefined) return inactive && want.e !== true && !want.v && want.p == null ? undefined : `no answer for ${key}`;
  const got = { e: answer.enabled, v: answer.variant ?? null, p: payloadOf(answer) };
  if (want.e !== undefined && got.e !== want.e) return `enabled ${got.e}, SDK ${want.e}`;
  if (want.v !== undefined && got.v !== want.v) return `variant ${got.v}, SDK ${want.v}`;
  if (want.p !== undefined && !isDeepStrictEqual(got.p, want.p)) return `payload ${JSON.stringify(got.p)}, SDK ${JSON.stringify(want.p)}`;
  return undefined;
}

describe('the flag cases of posthog-node and posthog-python test suites', () => {
  it('are answered by POST /flags?v=2 as the SDK tests expect', async () => {
    const problems: string[] = [];
    const differing = new Set<Divergence>();
    let checked = 0;
    let inconclusive = 0;
    for (const group of fixture.groups) {
      const origin = fixture.origins[group.origin];
      const definitions = fixture.definitions[group.definitions];
      if (!origin || !definitions) throw new Error('fixture refers to a missing origin or definitions set');
      for (const [request, flags] of group.cases) {
        const asked = upstream.flagsCalls.length;
        const response = await fetch(`${sidecar.apiUrl}/flags?v=2`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ ...request, token: token(group.definitions) }),
        });
        const text = await response.text();
        if (response.status !== 200) {
          problems.push(`${origin.sdk} ${origin.path} "${origin.test}" ${JSON.stringify(request)}: status ${response.status} ${text}`);
          continue;
        }
        const answers = (JSON.parse(text) as { flags: Record<string, Answer> }).flags;
        const upstreamKeys = upstream.flagsCalls.slice(asked).flatMap((c) => c.body.flag_keys_to_evaluate ?? Object.keys(answers));
        for (const [key, want] of Object.entries(flags)) {
          checked += 1;
          if (want === 'inconclusive') inconclusive += 1;
          const inactive = definitions.flags.some((f) => f.key === key && f.active !== true);
          const why = disagreement(key, want, answers[key], upstreamKeys.includes(key), inactive);
          const known = listed(origin.sdk, origin.test, key);
          if (why !== undefined && known !== undefined) differing.add(known);
          else if (why !== undefined) problems.push(`${origin.sdk} ${origin.path} "${origin.test}" ${key} ${JSON.stringify(request)}: ${why}`);
        }
      }
    }
    expect(problems).toEqual([]);
    // A listed disagreement that no case shows any more is stale: the list (and the docs) must say so.
    expect(divergences.filter((d) => !differing.has(d)).map((d) => `${d.sdk} "${d.test}" ${d.key}`)).toEqual([]);
    // Every flag of every case was asked; the counts below are the fixture's (see docs/api-compatibility.md).
    expect(checked).toBe(fixture.groups.reduce((n, g) => n + g.cases.reduce((m, [, f]) => m + Object.keys(f).length, 0), 0));
    expect(inconclusive).toBeGreaterThan(0);
  }, 120_000);
});
