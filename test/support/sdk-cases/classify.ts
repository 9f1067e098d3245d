/**
 * Which recorded SDK test calls become cases, and what each asserts: pure rules used by extract.ts.
 */

/** One line of record-node.cjs / record_python.py output. */
export interface Recording {
  file: string;
  test: string;
  asserted: 'direct' | 'via-variable' | null;
  assertLiterals: string[];
  call: Record<string, unknown> & { method: string };
  callPlain?: boolean;
  flags: Array<Record<string, unknown>> | null;
  cohorts: unknown;
  groupTypeMapping: unknown;
  remoteCalls: number;
  local: Record<string, unknown>;
  error: string | null;
  result: unknown;
  now: string;
}

/** What one flag of a case must be in the sidecar's answer. */
export type FlagExpectation = 'inconclusive' | { e?: boolean; v?: string | null; p?: unknown };

const INCONCLUSIVE = '__inconclusive__';
const DATE_OPERATORS = /"operator":"(is_date_before|is_date_after|is_date_exact|is_relative_date_[a-z_]+)"/;
const ALL_FLAGS = new Set(['getAllFlags', 'getAllFlagsAndPayloads', 'evaluateFlags', 'get_all_flags', 'get_all_flags_and_payloads', 'evaluate_flags']);

/** Read a call option under either SDK's name. */
function option(call: Record<string, unknown>, node: string, python: string): unknown {
  return call[node] ?? call[python];
}

/** The reason a recorded call is no case at all, or undefined when it is one. */
export function skipReason(sdk: 'node' | 'python', r: Recording, recordedAt: string): string | undefined {
  if (r.file.includes('overrides.spec')) return 'the value comes from an SDK-side override, not evaluation';
  if (r.asserted === null) return 'the test does not assert the value';
  if (r.callPlain === false) return 'the inputs are Python objects with no JSON form (datetime, Decimal)';
  if (r.error !== null) return 'the SDK call raised';
  if (!r.flags || r.flags.length === 0) return 'the SDK held no local definitions (remote evaluation only)';
  if (option(r.call, 'matchValue', 'match_value') !== undefined) return 'the test hands the SDK the value to find a payload for';
  if (typeof option(r.call, 'distinctId', 'distinct_id') !== 'string') return 'no distinct id in the call';
  const drift = Math.abs(Date.parse(r.now) - Date.parse(recordedAt));
  if (drift > 3_600_000 && DATE_OPERATORS.test(JSON.stringify(r.flags))) {
    return `the test froze the ${sdk} SDK's clock and the flag compares dates`;
  }
  return undefined;
}

function fromValue(value: unknown): { e: boolean; v: string | null } {
  return { e: value !== false && value !== null && value !== undefined, v: typeof value === 'string' ? value : null };
}

function singleFlag(method: string, result: unknown): FlagExpectation {
  switch (method) {
    case 'isFeatureEnabled':
    case 'feature_enabled':
      return { e: result === true };
    case 'getFeatureFlagPayload':
    case 'get_feature_flag_payload':
      return { p: result ?? null };
    case 'getFeatureFlagResult':
    case 'get_feature_flag_result': {
      const r = (result ?? { enabled: false, variant: null, payload: null }) as { enabled: boolean; variant: string | null; payload: unknown };
      return { e: r.enabled, v: r.variant ?? null, p: r.payload ?? null };
    }
    default:
      return fromValue(result);
  }
}

function allFlags(method: string, result: unknown, key: string): FlagExpectation | undefined {
  if (method === 'evaluateFlags' || method === 'evaluate_flags') {
    const entry = (result as Record<string, { enabled: boolean; variant: string | null; payload: unknown }>)[key];
    if (!entry) return undefined;
    return { e: entry.enabled, v: entry.variant, ...(entry.payload === null ? {} : { p: entry.payload }) };
  }
  if (method === 'getAllFlags' || method === 'get_all_flags') {
    const map = result as Record<string, unknown>;
    return key in map ? fromValue(map[key]) : undefined;
  }
  const both = result as { featureFlags: Record<string, unknown>; featureFlagPayloads: Record<string, unknown> };
  if (!(key in both.featureFlags)) return undefined;
  const payload = both.featureFlagPayloads[key];
  return { ...fromValue(both.featureFlags[key]), ...(payload === undefined || payload === null ? {} : { p: payload }) };
}

/** The request and per-flag expectations of a recorded call, or why none can be asserted. */
export function caseExpectation(
  _sdk: 'node' | 'python',
  r: Recording,
): { request: Record<string, unknown>; expect: Record<string, FlagExpectation> } | { skip: string } {
  const method = r.call.method;
  const keys = ALL_FLAGS.has(method) ? Object.keys(r.local) : [String(r.call.key)];
  const literals = new Set(r.assertLiterals);
  const named = keys.filter((k) => literals.has(k));
  const checked = ALL_FLAGS.has(method) && r.asserted === 'via-variable' && named.length > 0 ? named : keys;
  const expect: Record<string, FlagExpectation> = {};
  let remote = false;
  for (const key of checked) {
    if (!(key in r.local)) continue;
    if (r.local[key] === INCONCLUSIVE) {
      expect[key] = 'inconclusive';
    } else if (r.remoteCalls > 0) {
      remote = true;
    } else {
      const value = ALL_FLAGS.has(method) ? allFlags(method, r.result, key) : singleFlag(method, r.result);
      if (value !== undefined) expect[key] = value;
    }
  }
  if (Object.keys(expect).length === 0) {
    return { skip: remote ? "the value came from the SDK's remote /flags call" : 'the SDK did not evaluate the flag locally' };
  }
  const request: Record<string, unknown> = { distinct_id: option(r.call, 'distinctId', 'distinct_id') };
  for (const [field, node, python] of [
    ['groups', 'groups', 'groups'],
    ['person_properties', 'personProperties', 'person_properties'],
    ['group_properties', 'groupProperties', 'group_properties'],
    ['$device_id', 'deviceId', 'device_id'],
  ] as const) {
    const value = option(r.call, node, python);
    if (value !== undefined && value !== null) request[field] = value;
  }
  return { request, expect };
}
