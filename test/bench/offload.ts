/**
 * Upstream offload benchmark (issue 19, item 5), run by `npm run bench` (BENCH_ONLY=offload): how many upstream
 * `/flags` requests the sidecar makes per 1,000 full evaluations, for projects holding each kind of flag the
 * sidecar once could not decide. No timing, so no pinning: the sidecar runs in this process (from src/, as the
 * tests start it) in front of the fake upstream of test/support, which answers /flags as upstream does for these
 * flags (a deleted flag or an encrypted remote config is in neither its local_evaluation nor its /flags answers;
 * the static cohort's persons are readable with the sidecar's key, a personal key with cohort:read and person:read).
 *
 * Callers, each making BENCH_OFFLOAD_CALLS (default 1,000) evaluations for as many users:
 * - posthog-node 5.70 `getAllFlags` without a personal key (`POST /flags/?v=2`, no flag_keys_to_evaluate);
 * - posthog-python 3.x style: `POST /flags?v=2` without flag_keys_to_evaluate;
 * - posthog-node 3.x style: `POST /decide/?v=3` (the legacy shape);
 * - posthog-node 5.70 `getFeatureFlag` of one key (`flag_keys_to_evaluate: [key]`), for the deleted flag and the
 *   encrypted remote config, which a full evaluation never names.
 * Prints one table row per project and caller: upstream /flags requests per 1,000 evaluations.
 */
import { PostHog } from 'posthog-node';
import { startFakeUpstream } from '../support/fake-upstream.js';
import { startTestSidecar } from '../support/start-sidecar.js';
import { recordAim } from './aims.js';

const calls = Number(process.env.BENCH_OFFLOAD_CALLS ?? 1000);
const token = 'phc_offload';
/** A personal key that may read cohorts and persons, so that static cohorts can be pulled. */
const upstreamKey = 'phx_offload_bench';

const rollout = (percentage: number, properties: unknown[] = []) => ({ properties, rollout_percentage: percentage });
const flag = (id: number, key: string, filters: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ id, team_id: 1, key, name: key, active: true, version: 1, filters, ...extra });
const email = { key: 'email', type: 'person', value: '@example.com', operator: 'icontains' };

/** Flags every project has: all decidable from what the callers give. */
const normal = [
  flag(1, 'new-checkout', { groups: [rollout(50)] }),
  flag(2, 'internal-tools', { groups: [rollout(100, [email])], payloads: { true: '{"banner":"staff"}' } }),
  flag(3, 'pricing', { groups: [rollout(100)], multivariate: { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] } }),
];
/** The flags the issue names, each once. The static cohort (77) is absent from `cohorts`, as upstream sends it. */
const special = {
  'static cohort': flag(10, 'beta-cohort', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 77 }], rollout_percentage: 100 }] }),
  'continuity at 100%': flag(11, 'sticky-rollout', { groups: [rollout(100)] }, { ensure_experience_continuity: true }),
  'continuity at 50%': flag(12, 'sticky-experiment', { groups: [rollout(50)] }, { ensure_experience_continuity: true }),
  'encrypted remote config': flag(13, 'secret-config', { groups: [rollout(100)], payloads: { true: 'gAAAAAB-ciphertext' } }, { is_remote_configuration: true, has_encrypted_payloads: true }),
  deleted: flag(14, 'retired', { groups: [rollout(100)] }, { deleted: true }),
};
type Special = keyof typeof special;

/** The projects measured: the (one of each, continuity rolled out to 100%), and one per kind. */
const projects: Array<[string, Special[]]> = [
  ["the issue's project (static cohort, continuity at 100%, encrypted, deleted)", ['static cohort', 'continuity at 100%', 'encrypted remote config', 'deleted']],
  ['the same with continuity at 50%', ['static cohort', 'continuity at 50%', 'encrypted remote config', 'deleted']],
  ...(Object.keys(special) as Special[]).map((name): [string, Special[]] => [`only: ${name}`, [name]]),
];

const definitions = (kinds: Special[]) => ({
  flags: [...normal, ...kinds.map((k) => special[k])],
  group_type_mapping: {},
  cohorts: {},
});

const user = (i: number) => ({ distinctId: `user-${i}`, personProperties: { email: i % 5 === 0 ? `dev${i}@example.com` : `u${i}@mail.test` } });

async function measure(name: string, kinds: Special[]): Promise<string[]> {
  // Cohort 77 is static: every tenth user is in it.
  const staticCohorts = { 77: { persons: Array.from({ length: calls / 10 }, (_, i) => [user(i * 10).distinctId]) } };
  const upstream = await startFakeUpstream({ projects: { 1: { token, definitions: definitions(kinds), staticCohorts } }, keys: [upstreamKey] });
  const sidecar = await startTestSidecar({ FLAG_SIDECAR_UPSTREAM_URL: upstream.url, FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey, FLAG_SIDECAR_PROJECTS: `1:${token}`, FLAG_SIDECAR_LOG_LEVEL: 'warn' });
  const client = new PostHog(token, { host: sidecar.apiUrl, disableGeoip: true, flushAt: 1000, featureFlagsRequestTimeoutMs: 10_000 });
  const rows: string[] = [];
  try {
    // Ready, and (with a static cohort) the cohort pulled: its detail and its persons page asked.
    const pulled = () => !kinds.includes('static cohort') || upstream.cohortRequests() >= 2;
    for (let i = 0; i < 400 && !(sidecar.store.ready() && pulled()); i++) await new Promise((r) => setTimeout(r, 25));
    await new Promise((r) => setTimeout(r, 100));
    const count = async (caller: string, run: (i: number) => Promise<unknown>): Promise<void> => {
      const before = upstream.flagsCalls.length;
      for (let i = 0; i < calls; i++) await run(i);
      const perThousand = ((upstream.flagsCalls.length - before) * 1000) / calls;
      rows.push(`| ${name} | ${caller} | ${perThousand.toFixed(0)} |`);
      // The project: every full evaluation went upstream before (1,000 per 1,000); each is knowable here.
      if (name === projects[0]?.[0] && !caller.includes('getFeatureFlag')) {
        recordAim({ part: 'offload', what: `upstream /flags per 1,000 full evaluations, the issue's project, ${caller} (before: 1,000)`, value: perThousand, unit: '', atMost: 0 });
      }
    };
    const post = (path: string, i: number) =>
      fetch(`${sidecar.apiUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'posthog-python/3.11.0' },
        body: JSON.stringify({ token, distinct_id: user(i).distinctId, person_properties: user(i).personProperties }),
      }).then((r) => r.text());
    await count('posthog-node 5.70 getAllFlags', (i) => client.getAllFlags(user(i).distinctId, { personProperties: user(i).personProperties }));
    await count('POST /flags?v=2 (no flag_keys_to_evaluate)', (i) => post('/flags/?v=2', i));
    await count('POST /decide/?v=3', (i) => post('/decide/?v=3', i));
    for (const kind of ['deleted', 'encrypted remote config'] as const) {
      if (!kinds.includes(kind)) continue;
      await count(`posthog-node getFeatureFlag('${special[kind].key}')`, (i) => client.getFeatureFlag(special[kind].key, user(i).distinctId, { personProperties: user(i).personProperties, sendFeatureFlagEvents: false }));
    }
  } finally {
    await client.shutdown();
    await sidecar.stop();
    await upstream.close();
  }
  return rows;
}

async function main(): Promise<void> {
  console.log(`offload: upstream /flags requests per 1,000 evaluations (${calls} evaluations per row, one user each)`);
  const rows: string[] = [];
  for (const [name, kinds] of projects) rows.push(...(await measure(name, kinds)));
  console.log(['', '| project | caller | upstream /flags per 1,000 |', '|---|---|---|', ...rows, ''].join('\n'));
}

await main();
