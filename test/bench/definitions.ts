/**
 * Definitions and contexts shared by the benchmarks (run.ts, eval.ts): local_evaluation bodies as upstream's
 * `/flags/definitions` sends them, and the evaluation contexts of the local-evaluation benchmarks. Deterministic:
 * the same call gives the same body, so runs compare.
 */

/** A realistic local_evaluation body for the snapshot read path: conditions, variants, payloads, a cohort. */
export function makeDefinitions(n: number): unknown {
  const flags = Array.from({ length: n }, (_, i) => ({
    id: i + 1,
    team_id: 1,
    name: `Flag number ${i}`,
    key: `flag-${i}`,
    deleted: false,
    active: i % 9 !== 0,
    filters: {
      groups: [
        { properties: [{ key: 'email', type: 'person', value: '@example.com', operator: 'icontains' }], rollout_percentage: 100 },
        { properties: [{ key: 'country', type: 'person', value: ['US', 'CA', 'GB', 'DE'], operator: 'exact' }], rollout_percentage: (i * 7) % 100 },
        ...(i % 5 === 0 ? [{ properties: [{ key: 'id', type: 'cohort', value: 1 }], rollout_percentage: 50 }] : []),
      ],
      multivariate: i % 3 === 0 ? { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] } : null,
      payloads: i % 4 === 0 ? { true: JSON.stringify({ color: 'blue', size: i }) } : {},
    },
    ensure_experience_continuity: false,
    has_encrypted_payloads: false,
    version: 1 + (i % 11),
    evaluation_runtime: 'all',
    bucketing_identifier: 'distinct_id',
    evaluation_tags: [],
  }));
  const cohorts = { '1': { type: 'OR', values: [{ type: 'AND', values: [{ key: 'plan', type: 'person', value: ['pro'], operator: 'exact' }] }] } };
  return { flags, group_type_mapping: { '0': 'company' }, cohorts };
}

/** One property filter of a condition. */
const prop = (key: string, operator: string, value: unknown, type = 'person') => ({ key, type, value, operator });

/** The flag key of the evaluation definitions' flag number `i` (a name by template, then the number). */
const templates = ['email-beta', 'team-regex', 'new-version', 'recent-signup', 'big-account', 'cohort-rollout', 'plan-variant', 'browser-locale', 'depends-on', 'misc'];
export const evalFlagKey = (i: number): string => `${templates[i % 10]}-${i}`;

/** What a flag dependency needs: the flag it depends on, the value expected, and the whole chain to evaluate. */
function dependencyFor(i: number): { key: string; value: boolean | string; chain: string[] } {
  if (i === 18) return { key: evalFlagKey(12), value: 'test', chain: [evalFlagKey(12)] };
  if (i === 48) return { key: evalFlagKey(38), value: true, chain: [evalFlagKey(30), evalFlagKey(38)] };
  return { key: evalFlagKey(i - 8), value: true, chain: [evalFlagKey(i - 8)] };
}

/**
 * The local-evaluation benchmarks' flags (`n`, 50 by default; issue 5), ten templates in turn: icontains and exact lists; a
 * portable regex; semver with a multivariate split and per-variant payloads; relative and absolute dates;
 * numeric ranges with three variants; cohorts (one flat, one nested AND/OR); a variant override; starts_with,
 * ends_with and not_icontains; flag dependencies with `dependency_chain` (one two deep, one on a variant); and
 * the rest: two inactive flags, one group flag (company), plain percentage rollouts. Past 50 the templates repeat
 * (dependencies on the flag eight before).
 */
export function makeEvalDefinitions(n = 50): Record<string, unknown> {
  const flags = Array.from({ length: n }, (_, i) => {
    let groups: unknown[];
    let multivariate: unknown = null;
    let payloads: Record<string, string> = {};
    let aggregation: number | undefined;
    let active = true;
    switch (i % 10) {
      case 0:
        groups = [
          { properties: [prop('email', 'icontains', '@example.com')], rollout_percentage: 100 },
          { properties: [prop('country', 'exact', ['US', 'CA', 'GB', 'DE'])], rollout_percentage: (i * 7) % 100 },
        ];
        payloads = { true: JSON.stringify({ banner: 'beta', n: i }) };
        break;
      case 1:
        groups = [
          { properties: [prop('email', 'regex', '^[a-z]+\\.[a-z]+@(example|acme)\\.com$')], rollout_percentage: 50 },
          { properties: [prop('locale', 'starts_with', 'en')], rollout_percentage: 20 },
        ];
        break;
      case 2:
        groups = [{ properties: [prop('app_version', 'semver_gte', '2.4.0'), prop('plan', 'exact', ['pro', 'enterprise'])], rollout_percentage: 100 }];
        multivariate = { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] };
        payloads = { control: JSON.stringify({ layout: 'classic' }), test: JSON.stringify({ layout: 'compact', columns: 3 }) };
        break;
      case 3:
        groups = [
          { properties: [prop('signup_date', 'is_date_after', '-180d')], rollout_percentage: 30 },
          { properties: [prop('signup_date', 'is_date_before', '2024-01-01')], rollout_percentage: 100 },
        ];
        break;
      case 4:
        groups = [{ properties: [prop('seats', 'gt', 25), prop('seats', 'lte', 500)], rollout_percentage: 100 }];
        multivariate = { variants: [{ key: 'a', rollout_percentage: 34 }, { key: 'b', rollout_percentage: 33 }, { key: 'c', rollout_percentage: 33 }] };
        payloads = { a: JSON.stringify({ discount: 10 }), b: JSON.stringify({ discount: 15 }), c: JSON.stringify({ discount: 20 }) };
        break;
      case 5:
        groups = [
          { properties: [{ key: 'id', type: 'cohort', value: i % 20 === 5 ? 1 : 2 }], rollout_percentage: 60 },
          { properties: [prop('country', 'is_not', ['FR'])], rollout_percentage: 10 },
        ];
        break;
      case 6:
        groups = [
          { properties: [prop('plan', 'exact', ['enterprise'])], rollout_percentage: 100, variant: 'test' },
          { properties: [], rollout_percentage: 50 },
        ];
        multivariate = { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] };
        payloads = { test: JSON.stringify({ price: 49 }) };
        break;
      case 7:
        groups = [
          { properties: [prop('$browser', 'exact', ['Chrome', 'Firefox']), prop('locale', 'not_icontains', 'fr')], rollout_percentage: 75 },
          { properties: [prop('email', 'ends_with', '.org')], rollout_percentage: 100 },
        ];
        break;
      case 8: {
        const dep = dependencyFor(i);
        groups = [{ properties: [{ key: dep.key, type: 'flag', value: dep.value, operator: 'flag_evaluates_to', dependency_chain: dep.chain }], rollout_percentage: 50 }];
        break;
      }
      default:
        if (i === 9 || i === 29) active = false;
        if (i === 19) {
          aggregation = 0;
          groups = [{ properties: [prop('employees', 'gte', 100, 'group')], rollout_percentage: 50 }];
        } else {
          groups = [{ properties: [], rollout_percentage: 25 }];
        }
    }
    return {
      id: 100 + i,
      team_id: 1,
      name: `Benchmark flag ${i}`,
      key: evalFlagKey(i),
      deleted: false,
      active,
      filters: { groups, multivariate, payloads, ...(aggregation === undefined ? {} : { aggregation_group_type_index: aggregation }) },
      ensure_experience_continuity: false,
      has_encrypted_payloads: false,
      version: 1 + (i % 7),
      evaluation_runtime: 'all',
      bucketing_identifier: 'distinct_id',
      evaluation_tags: [],
    };
  });
  const cohorts = {
    '1': { type: 'OR', values: [{ type: 'AND', values: [prop('plan', 'exact', ['pro', 'enterprise'])] }] },
    '2': {
      type: 'OR',
      values: [
        { type: 'AND', values: [prop('country', 'exact', ['DE'])] },
        { type: 'AND', values: [prop('seats', 'gte', 50), prop('email', 'icontains', '@acme.com')] },
      ],
    },
  };
  return { flags, group_type_mapping: { '0': 'company', '1': 'project' }, cohorts };
}

/** One evaluation context, as a /flags body carries it. */
export interface EvalContextInput {
  readonly distinctId: string;
  readonly personProperties: Record<string, unknown>;
  readonly groups: Record<string, string>;
  readonly groupProperties: Record<string, Record<string, unknown>>;
}

const firstNames = ['ada', 'grace', 'alan', 'edsger', 'barbara', 'donald', 'ken', 'margaret', 'linus', 'frances', 'john'];
const domains = ['example.com', 'acme.com', 'gmail.com', 'corp.org', 'Example.COM'];
const countries = ['US', 'CA', 'GB', 'DE', 'FR', 'JP', 'BR'];
const plans = ['free', 'pro', 'enterprise', 'free', 'pro'];
const locales = ['en-US', 'en-GB', 'de-DE', 'fr-FR', 'ja-JP', 'pt-BR'];
const browsers = ['Chrome', 'Firefox', 'Safari', 'Edge'];
const pick = <T>(xs: readonly T[], n: number): T => xs[n % xs.length] as T;

/**
 * `n` contexts: eight person properties each (one in ten lacks `app_version`, so a few flags stay inconclusive
 * as in real traffic) and a company group with its properties.
 */
export function makeEvalContexts(n: number): EvalContextInput[] {
  return Array.from({ length: n }, (_, j) => {
    const personProperties: Record<string, unknown> = {
      email: `${pick(firstNames, j)}.${pick(firstNames, j * 7 + 3)}@${pick(domains, j * 3)}`,
      country: pick(countries, j),
      plan: pick(plans, j * 5 + 1),
      app_version: `${1 + (j % 3)}.${j % 7}.${j % 4}`,
      signup_date: new Date(Date.UTC(2023, 0, 1) + j * 7 * 86_400_000).toISOString().slice(0, 10),
      seats: (j * 37) % 800,
      locale: pick(locales, j * 11),
      $browser: pick(browsers, j * 13),
    };
    if (j % 10 === 9) delete personProperties.app_version;
    return {
      distinctId: `user-${(j * 2654435761) % 1_000_003}-${j}`,
      personProperties,
      groups: { company: `company-${j % 25}` },
      groupProperties: { company: { industry: pick(['saas', 'retail', 'finance'], j), employees: (j * 13) % 1000 } },
    };
  });
}

/** The one user of the `/flags` HTTP benchmark: every property present, so all 50 flags are decided locally. */
export const benchUser: EvalContextInput = {
  distinctId: 'user-4242-bench',
  personProperties: {
    email: 'grace.hopper@example.com',
    country: 'DE',
    plan: 'pro',
    app_version: '2.7.1',
    signup_date: '2026-09-01',
    seats: 120,
    locale: 'en-GB',
    $browser: 'Firefox',
  },
  groups: { company: 'company-7' },
  groupProperties: { company: { industry: 'saas', employees: 450 } },
};
