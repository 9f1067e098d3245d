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

/** `text` with its letters uppercased where the bits of `k` say (letter j: bit j): 2^letters distinct spellings. */
function caseVariant(text: string, k: number): string {
  let bit = 0;
  let out = '';
  for (const c of text) {
    const letter = c.toLowerCase() !== c.toUpperCase();
    out += letter && (k >> bit) & 1 ? c.toUpperCase() : c;
    if (letter) bit++;
  }
  return out;
}

/**
 * The local-evaluation benchmarks' flags (`n`, 50 by default; issue 5), ten templates in turn: icontains and exact lists; a
 * portable regex; semver with a multivariate split and per-variant payloads; relative and absolute dates;
 * numeric ranges with three variants; cohorts (one flat, one nested AND/OR); a variant override; starts_with,
 * ends_with and not_icontains; flag dependencies with `dependency_chain` (one two deep, one on a variant); and
 * the rest: two inactive flags, one group flag (company), plain percentage rollouts. Past 50 the templates repeat
 * (dependencies on the flag eight before).
 *
 * `uniqueValues`: no two flags share a property filter or a cohort (each flag of the cohort template has a cohort
 * of its own). Each filter value is made unique in a way that keeps `benchUser`'s answer to it (a list gains an
 * item, a case-insensitive text changes case, a bound moves by less than the gap, a date by days) except the
 * regex template's `starts_with` (its value gains a suffix: `benchUser` no longer matches it). Real projects reuse
 * filters across flags as the repeated templates do; this is the other extreme, for what a per-filter memo cannot
 * share. Up to 1,024 flags are unique.
 */
export function makeEvalDefinitions(n = 50, options: { readonly uniqueValues?: boolean } = {}): Record<string, unknown> {
  const unique = options.uniqueValues === true;
  /** A filter value made unique to flag `i` when asked (`make`), else `same`. */
  const u = <T>(i: number, same: T, make: (i: number) => T): T => (unique ? make(i) : same);
  const uniqueCohorts: Record<string, unknown> = {};
  /** A cohort of flag `k`'s own, shaped as cohort 1 (`flat`) or 2, with unique values; returns its id. */
  const uniqueCohort = (k: number, flat: boolean): number => {
    uniqueCohorts[String(1000 + k)] = flat
      ? { type: 'OR', values: [{ type: 'AND', values: [prop('plan', 'exact', ['pro', 'enterprise', `u${k}`])] }] }
      : {
          type: 'OR',
          values: [
            { type: 'AND', values: [prop('country', 'exact', ['DE', `u${k}`])] },
            { type: 'AND', values: [prop('seats', 'gte', 50 + k / 1000), prop('email', 'icontains', caseVariant('@acme.com', Math.floor(k / 20)))] },
          ],
        };
    return 1000 + k;
  };
  const flags = Array.from({ length: n }, (_, i) => {
    let groups: unknown[];
    let multivariate: unknown = null;
    let payloads: Record<string, string> = {};
    let aggregation: number | undefined;
    let active = true;
    switch (i % 10) {
      case 0:
        groups = [
          { properties: [prop('email', 'icontains', u(i, '@example.com', (k) => caseVariant('@example.com', k)))], rollout_percentage: 100 },
          { properties: [prop('country', 'exact', u(i, ['US', 'CA', 'GB', 'DE'], (k) => ['US', 'CA', 'GB', 'DE', `u${k}`]))], rollout_percentage: (i * 7) % 100 },
        ];
        payloads = { true: JSON.stringify({ banner: 'beta', n: i }) };
        break;
      case 1:
        groups = [
          { properties: [prop('email', 'regex', u(i, '^[a-z]+\\.[a-z]+@(example|acme)\\.com$', (k) => `^[a-z]+\\.[a-z]+@(example|acme|u${k})\\.com$`))], rollout_percentage: 50 },
          { properties: [prop('locale', 'starts_with', u(i, 'en', (k) => `en-u${k}`))], rollout_percentage: 20 },
        ];
        break;
      case 2:
        groups = [{ properties: [prop('app_version', 'semver_gte', u(i, '2.4.0', (k) => `1.${k}.0`)), prop('plan', 'exact', u(i, ['pro', 'enterprise'], (k) => ['pro', 'enterprise', `u${k}`]))], rollout_percentage: 100 }];
        multivariate = { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] };
        payloads = { control: JSON.stringify({ layout: 'classic' }), test: JSON.stringify({ layout: 'compact', columns: 3 }) };
        break;
      case 3:
        groups = [
          { properties: [prop('signup_date', 'is_date_after', u(i, '-180d', (k) => `-${180 + k}d`))], rollout_percentage: 30 },
          { properties: [prop('signup_date', 'is_date_before', u(i, '2024-01-01', (k) => new Date(Date.UTC(2024, 0, 1) - k * 86_400_000).toISOString().slice(0, 10)))], rollout_percentage: 100 },
        ];
        break;
      case 4:
        groups = [{ properties: [prop('seats', 'gt', u(i, 25, (k) => 25 + k / 1000)), prop('seats', 'lte', u(i, 500, (k) => 500 + k))], rollout_percentage: 100 }];
        multivariate = { variants: [{ key: 'a', rollout_percentage: 34 }, { key: 'b', rollout_percentage: 33 }, { key: 'c', rollout_percentage: 33 }] };
        payloads = { a: JSON.stringify({ discount: 10 }), b: JSON.stringify({ discount: 15 }), c: JSON.stringify({ discount: 20 }) };
        break;
      case 5:
        groups = [
          { properties: [{ key: 'id', type: 'cohort', value: u(i, i % 20 === 5 ? 1 : 2, (k) => uniqueCohort(k, k % 20 === 5)) }], rollout_percentage: 60 },
          { properties: [prop('country', 'is_not', u(i, ['FR'], (k) => ['FR', `u${k}`]))], rollout_percentage: 10 },
        ];
        break;
      case 6:
        groups = [
          { properties: [prop('plan', 'exact', u(i, ['enterprise'], (k) => ['enterprise', `u${k}`]))], rollout_percentage: 100, variant: 'test' },
          { properties: [], rollout_percentage: 50 },
        ];
        multivariate = { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] };
        payloads = { test: JSON.stringify({ price: 49 }) };
        break;
      case 7:
        groups = [
          { properties: [prop('$browser', 'exact', u(i, ['Chrome', 'Firefox'], (k) => ['Chrome', 'Firefox', `u${k}`])), prop('locale', 'not_icontains', u(i, 'fr', (k) => `fr-u${k}`))], rollout_percentage: 75 },
          { properties: [prop('email', 'ends_with', u(i, '.org', (k) => `.org-u${k}`))], rollout_percentage: 100 },
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
          groups = [{ properties: [prop('employees', 'gte', u(i, 100, (k) => 100 + k / 1000), 'group')], rollout_percentage: 50 }];
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
    ...uniqueCohorts,
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
