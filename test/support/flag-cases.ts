/**
 * fast-check arbitraries for whole local_evaluation bodies and evaluation contexts, for differential tests of
 * the evaluator against the official SDK: flags with conditions, rollouts, variant overrides, multivariate
 * tables (including an empty variant key), payloads, holdouts, early_exit, device-id bucketing, flag-level and
 * per-condition group aggregation (known and unknown group types), experience continuity, inactive flags;
 * cohorts nested AND/OR (plus the SDK-refused types, empty and missing cohorts; no cycles) with negation and
 * not_in; flag dependencies whose dependency_chain is what the server computes, or occasionally broken. No flag
 * filters inside cohorts: upstream's flags service matches those as property filters, posthog-node as
 * dependencies (a server divergence, eval-cohort-flag-filter.test.ts).
 * Property filters are a focused set (the operators themselves are covered by eval-properties.test.ts), chosen
 * so that decided, missing-context, unsupported and non-portable-regex outcomes all occur.
 */
import fc from 'fast-check';

export const flagKeys = ['f0', 'f1', 'f2', 'f3', 'f4'] as const;
const cohortIds = ['1', '2', '3', '4'] as const;
export const groupTypeMapping = { '0': 'company', '1': 'project' } as const;

type Json = Record<string, unknown>;

const propertyFilter: fc.Arbitrary<Json> = fc
  .record({
    test: fc.constantFrom<[string, string | null | undefined, unknown]>(
      ['email', 'exact', 'a@x.com'],
      ['email', 'exact', ['a@x.com', 'b@y.org']],
      ['email', 'icontains', 'X.COM'],
      ['email', 'regex', '^a@'],
      ['email', 'not_regex', '(?i)^a'],
      ['name', 'regex', 'n'],
      ['name', 'regex', '\\bA'],
      ['plan', 'exact', 'pro'],
      ['plan', 'is_not', 'free'],
      ['plan', null, ['pro', 'team']],
      ['plan', 'is_set', 'is_set'],
      ['plan', 'is_not_set', 'is_not_set'],
      ['beta', 'exact', ['true']],
      ['beta', 'exact', true],
      ['age', 'gt', 30],
      ['age', 'lte', '40'],
      ['age', 'exact', 25],
      ['version', 'semver_gte', '1.2.0'],
      ['version', 'semver_caret', '1.2.0'],
      ['signup', 'is_date_before', '2024-01-01'],
      ['signup', 'is_date_after', '-30d'],
      ['plan', 'is_date_exact', '2024-01-01'],
      ['version', 'semver_gt', 'not-a-version'],
      ['size', 'gte', 10],
      ['industry', 'exact', 'tech'],
      ['$group_key', 'exact', 'acme'],
      ['distinct_id', 'icontains', 'u1'],
    ),
    type: fc.constantFrom('person', 'person', 'group'),
    negation: fc.option(fc.boolean(), { nil: undefined, freq: 3 }),
  })
  .map(({ test: [key, operator, value], type, negation }) => {
    const filter: Json = { key, value, type };
    if (operator !== undefined) filter.operator = operator;
    if (negation !== undefined) filter.negation = negation;
    return filter;
  });

const cohortFilter: fc.Arbitrary<Json> = fc
  .record({
    value: fc.constantFrom<string | number>(...cohortIds, 1, 2, '99'),
    operator: fc.constantFrom(undefined, 'in', 'not_in'),
    negation: fc.option(fc.boolean(), { nil: undefined, freq: 3 }),
  })
  .map(({ value, operator, negation }) => {
    const filter: Json = { key: 'id', type: 'cohort', value };
    if (operator !== undefined) filter.operator = operator;
    if (negation !== undefined) filter.negation = negation;
    return filter;
  });

/** A flag dependency; its dependency_chain is filled in by withDependencyChains. */
const flagFilter: fc.Arbitrary<Json> = fc
  .record({ key: fc.constantFrom<string>(...flagKeys, 'ghost'), value: fc.constantFrom<unknown>(true, false, 'control', 'test', 'a', 1) })
  .map(({ key, value }) => ({ key, type: 'flag', value, operator: 'flag_evaluates_to' }));

/** A malformed entry, rare: the SDK fails on it with a TypeError of its own. */
const nullFilter = fc.constant(null as unknown as Json);

const conditionFilter = fc.oneof(
  { arbitrary: propertyFilter, weight: 28 },
  { arbitrary: cohortFilter, weight: 8 },
  { arbitrary: flagFilter, weight: 8 },
  { arbitrary: nullFilter, weight: 1 },
);

const leafFilter = fc.oneof({ arbitrary: propertyFilter, weight: 24 }, { arbitrary: cohortFilter, weight: 8 }, { arbitrary: nullFilter, weight: 1 });

const cohortGroup: fc.Arbitrary<unknown> = fc.letrec<{ group: unknown }>((tie) => ({
  group: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    {
      arbitrary: fc.record({ type: fc.constantFrom('AND', 'OR', 'OR', 'property'), values: fc.array(leafFilter, { minLength: 0, maxLength: 3 }) }),
      weight: 6,
    },
    { arbitrary: fc.record({ type: fc.constantFrom('AND', 'OR'), values: fc.array(tie('group'), { minLength: 1, maxLength: 2 }) }), weight: 3 },
    { arbitrary: fc.constantFrom<unknown>({}, null, { type: 'XOR', values: [] }), weight: 1 },
  ),
})).group;

const condition = fc
  .record({
    properties: fc.array(conditionFilter, { minLength: 0, maxLength: 3 }),
    rollout: fc.oneof(fc.constantFrom<number | null | undefined>(undefined, null, 0, 100, 50, 33.3), fc.integer({ min: 0, max: 100 })),
    variant: fc.option(fc.constantFrom('control', 'test', 'a', 'bogus', ''), { nil: undefined, freq: 3 }),
    aggregation: fc.option(fc.constantFrom<number | null>(null, 0, 1, 2), { nil: undefined, freq: 4 }),
  })
  .map(({ properties, rollout, variant, aggregation }) => {
    const c: Json = { properties };
    if (rollout !== undefined) c.rollout_percentage = rollout;
    if (variant !== undefined) c.variant = variant;
    if (aggregation !== undefined) c.aggregation_group_type_index = aggregation;
    return c;
  });

const multivariate = fc.constantFrom<unknown>(
  undefined,
  undefined,
  { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] },
  { variants: [{ key: 'a', rollout_percentage: 34 }, { key: 'control', rollout_percentage: 33 }, { key: 'test', rollout_percentage: 33 }] },
  { variants: [{ key: '', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 30 }] },
);

const flagBody = (key: string, id: number): fc.Arbitrary<Json> =>
  fc
    .record({
      inactive: fc.integer({ min: 0, max: 9 }),
      continuity: fc.integer({ min: 0, max: 19 }),
      bucketing: fc.constantFrom(undefined, undefined, 'distinct_id', 'device_id'),
      conditions: fc.array(condition, { minLength: 0, maxLength: 3 }),
      aggregation: fc.option(fc.constantFrom<number | null>(null, 0, 0, 1, 2), { nil: undefined, freq: 2 }),
      multivariate,
      payloads: fc.constantFrom<unknown>(undefined, {}, { true: '{"a":1}', control: '"x"', test: '0', a: 'not json', '': '5' }, { true: '[1,2]', test: '{"b":true}', false: '"off"' }),
      holdout: fc.constantFrom<unknown>(undefined, undefined, { id: 7, exclusion_percentage: 10 }, { id: 8, exclusion_percentage: 100 }, { id: 9, exclusion_percentage: 50 }, null),
      earlyExit: fc.constantFrom(undefined, false, true),
      runtime: fc.constantFrom(undefined, 'server', 'client', 'all'),
    })
    .map((f) => {
      const filters: Json = { groups: f.conditions };
      if (f.aggregation !== undefined) filters.aggregation_group_type_index = f.aggregation;
      if (f.multivariate !== undefined) filters.multivariate = f.multivariate;
      if (f.payloads !== undefined) filters.payloads = f.payloads;
      if (f.holdout !== undefined) filters.holdout = f.holdout;
      if (f.earlyExit !== undefined) filters.early_exit = f.earlyExit;
      const flag: Json = { id, key, active: f.inactive !== 0, ensure_experience_continuity: f.continuity === 0, filters, version: id + 1 };
      if (f.bucketing !== undefined) flag.bucketing_identifier = f.bucketing;
      if (f.runtime !== undefined) flag.evaluation_runtime = f.runtime;
      return flag;
    });

/** The flag keys a flag depends on directly: its conditions' flag filters and those inside its cohorts. */
function directDependencies(flag: Json | undefined, cohorts: Json): string[] {
  const keys: string[] = [];
  const seen = new Set<string>();
  const visit = (filter: unknown): void => {
    if (!filter || typeof filter !== 'object') return;
    const f = filter as Json;
    if ('values' in f) for (const v of (f.values ?? []) as unknown[]) visit(v);
    else if (f.type === 'flag') keys.push(String(f.key));
    else if (f.type === 'cohort' && !seen.has(String(f.value))) {
      seen.add(String(f.value));
      visit(cohorts[String(f.value)]);
    }
  };
  for (const g of ((flag?.filters as Json | undefined)?.groups ?? []) as Json[]) for (const p of (g.properties ?? []) as Json[]) visit(p);
  return keys;
}

/** The dependency_chain the server computes for `key`: dependencies first, `key` last; [] for a cycle. */
function chainOf(key: string, byKey: ReadonlyMap<string, Json>, cohorts: Json): string[] {
  const order: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  let cycle = false;
  const visit = (k: string): void => {
    if (state.get(k) === 'done') return;
    if (state.get(k) === 'visiting') {
      cycle = true;
      return;
    }
    state.set(k, 'visiting');
    for (const dep of directDependencies(byKey.get(k), cohorts)) visit(dep);
    state.set(k, 'done');
    order.push(k);
  };
  visit(key);
  return cycle ? [] : order;
}

/** Fills in every flag filter's dependency_chain; `breakage` in [0,1) picks an occasional broken chain. */
function withDependencyChains(body: Json, breakage: readonly number[]): Json {
  const flags = body.flags as Json[];
  const byKey = new Map(flags.map((f) => [String(f.key), f]));
  let n = 0;
  const fill = (filter: Json): void => {
    if (!filter || filter.type !== 'flag') return;
    const roll = breakage[n++ % breakage.length] ?? 0.5;
    if (roll < 0.04) return; // no dependency_chain at all
    if (roll < 0.07) filter.dependency_chain = 'f0';
    else if (roll < 0.1) filter.dependency_chain = [...chainOf(String(filter.key), byKey, body.cohorts as Json), 'ghost'];
    else filter.dependency_chain = chainOf(String(filter.key), byKey, body.cohorts as Json);
  };
  // A cohort refers only to cohorts with higher ids: the SDK recurses without bound on a cycle (until the heap
  // runs out), so cycles are no case to compare.
  const fillLater: Json[] = [];
  const walk = (group: unknown, id: number): void => {
    if (!group || typeof group !== 'object') return;
    for (const v of ((group as Json).values ?? []) as Json[]) {
      if (v && typeof v === 'object' && 'values' in v) walk(v, id);
      else if (v && typeof v === 'object' && v.type === 'cohort' && Number(v.value) <= id) v.value = id < cohortIds.length ? String(id + 1) : '99';
      else if (v && typeof v === 'object') fillLater.push(v);
    }
  };
  // Dependencies mostly point forward (f0 → f3), so that most chains are acyclic; a few cycles remain.
  flags.forEach((flag, i) => {
    for (const g of ((flag.filters as Json).groups ?? []) as Json[]) {
      for (const p of (g.properties ?? []) as Json[]) {
        const target = flagKeys.indexOf(p?.key as (typeof flagKeys)[number]);
        if (!p || p.type !== 'flag' || target < 0 || target > i || (breakage[n++ % breakage.length] ?? 0) < 0.1) continue;
        p.key = i + 1 < flags.length ? flagKeys[i + 1] : 'ghost';
      }
    }
  });
  for (const [id, group] of Object.entries(body.cohorts as Json)) walk(group, Number(id));
  // Chains are computed over the final graph, cohorts included: a dependency cycle gets [] as on the server
  // (the SDK recurses without bound through a chain that is not acyclic).
  n = 0;
  for (const flag of flags) for (const g of ((flag.filters as Json).groups ?? []) as Json[]) for (const p of (g.properties ?? []) as Json[]) fill(p);
  fillLater.forEach(fill);
  return body;
}

/** A whole local_evaluation body, JSON-clean. */
export const definitionsArbitrary: fc.Arbitrary<Json> = fc
  .record({
    flags: fc.tuple(...flagKeys.map((key, i) => flagBody(key, i + 1))),
    flagCount: fc.integer({ min: 1, max: flagKeys.length }),
    cohorts: fc.dictionary(fc.constantFrom(...cohortIds), cohortGroup, { maxKeys: 4 }),
    matchingVersion: fc.constantFrom(undefined, 1, 2),
    mapping: fc.constantFrom<Json>(groupTypeMapping, groupTypeMapping, { '0': 'company' }),
    breakage: fc.array(fc.integer({ min: 0, max: 99 }).map((n) => n / 100), { minLength: 1, maxLength: 8 }),
  })
  .map(({ flags, flagCount, cohorts, matchingVersion, mapping, breakage }) => {
    const body: Json = { flags: flags.slice(0, flagCount), group_type_mapping: mapping, cohorts };
    if (matchingVersion !== undefined) body.property_matching_version = matchingVersion;
    return JSON.parse(JSON.stringify(withDependencyChains(body, breakage))) as Json;
  });

/** One evaluation context, as a /flags body gives it. */
export interface CaseContext {
  distinctId: string;
  personProperties: Json;
  groups: Json;
  groupProperties: Record<string, Json>;
}

const personProperties = fc.record(
  {
    email: fc.constantFrom('a@x.com', 'b@y.org', 'A@X.COM', null),
    name: fc.constantFrom('Ann', 'Zoë', 'bob'),
    plan: fc.constantFrom('pro', 'free', 'team', null),
    beta: fc.constantFrom(true, false, 'true', 'FALSE'),
    age: fc.constantFrom(25, 35, '50', 'old'),
    version: fc.constantFrom('1.2.3', '0.9.0', '2.0', 'bad'),
    signup: fc.constantFrom('2023-06-01', '2030-01-01', new Date(Date.now() - 3 * 86_400_000).toISOString(), 'never'),
    $device_id: fc.constantFrom('dev-1', 'dev-2', '', null),
  },
  { requiredKeys: [] },
);

const groupProps = fc.record({ size: fc.constantFrom(5, 50, '20'), industry: fc.constantFrom('tech', 'retail'), plan: fc.constantFrom('pro', 'free') }, { requiredKeys: [] });

export const contextArbitrary: fc.Arbitrary<CaseContext> = fc
  .record({
    distinctId: fc.oneof(fc.constantFrom('u1', 'u2', 'u10', 'user-42', ''), fc.string({ minLength: 1, maxLength: 12 })),
    personProperties,
    company: fc.option(fc.constantFrom<unknown>('acme', 'globex', 7), { nil: undefined }),
    project: fc.option(fc.constantFrom<unknown>('p1', 'p2'), { nil: undefined }),
    companyProps: fc.option(groupProps, { nil: undefined }),
    projectProps: fc.option(groupProps, { nil: undefined }),
  })
  .map(({ distinctId, personProperties: pp, company, project, companyProps, projectProps }) => {
    const groups: Json = {};
    const groupProperties: Record<string, Json> = {};
    if (company !== undefined) groups.company = company;
    if (project !== undefined) groups.project = project;
    if (companyProps !== undefined) groupProperties.company = companyProps;
    if (projectProps !== undefined) groupProperties.project = projectProps;
    return { distinctId, personProperties: pp as Json, groups, groupProperties };
  });
