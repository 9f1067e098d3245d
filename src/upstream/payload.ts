/**
 * Validation of upstream's local_evaluation JSON (the body PostHog's
 * `products/feature_flags/backend/local_evaluation.py` builds; docs/snapshot-format.md) into typed values. Pure: a body
 * either yields Definitions or a one-line reason; nothing invalid ever reaches the store.
 */

/** One flag definition as local_evaluation returns it; `raw` keeps every field upstream sent. */
export interface FlagDefinition {
  readonly id: number | null;
  readonly key: string;
  readonly active: boolean;
  readonly deleted: boolean;
  readonly filters: Readonly<Record<string, unknown>>;
  readonly raw: Readonly<Record<string, unknown>>;
}

/** The parsed content of one local_evaluation body. */
export interface Definitions {
  readonly flags: readonly FlagDefinition[];
  readonly groupTypeMapping: Readonly<Record<string, string>>;
  readonly cohorts: Readonly<Record<string, unknown>>;
  /**
   * The parsed body itself; `flags[i].raw` are its elements, not copies. The evaluator compiles from it
   * (store/compiled.ts), so a body is parsed once; nothing may modify it.
   */
  readonly parsed: Readonly<Record<string, unknown>>;
}

/** Outcome of validation: the definitions, or why the body was refused. */
export type PayloadResult = { readonly ok: true; readonly value: Definitions } | { readonly ok: false; readonly error: string };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function invalid(error: string): PayloadResult {
  return { ok: false, error };
}

// checkFilters and parseFlag run for every flag of a body before the sidecar is ready. Kept light on purpose:
// indexed loops rather than `entries()` iterators, and no call of isObject per property (7,000 of them at 1,000
// flags made V8 optimize that small function at start; its first optimization pages in the optimizing compiler,
// ~4 MiB of RSS, in a process that then idles: docs/benchmarks.md as of c3f48ec, "Footprint", fourth pass).
function checkFilters(filters: Record<string, unknown>, index: number): string | null {
  const groups = filters.groups;
  if (groups !== undefined && groups !== null) {
    if (!Array.isArray(groups)) return `flags[${index}].filters.groups is not an array`;
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g] as Record<string, unknown>;
      if (typeof group !== 'object' || group === null || Array.isArray(group)) return `flags[${index}].filters.groups[${g}] is not an object`;
      if (group.properties !== undefined && group.properties !== null && !Array.isArray(group.properties)) {
        return `flags[${index}].filters.groups[${g}].properties is not an array`;
      }
    }
  }
  const multivariate = filters.multivariate as Record<string, unknown> | null | undefined;
  const variants = typeof multivariate === 'object' && multivariate !== null && !Array.isArray(multivariate) ? multivariate.variants : undefined;
  if (variants !== undefined && variants !== null && !Array.isArray(variants)) {
    return `flags[${index}].filters.multivariate.variants is not an array`;
  }
  const payloads = filters.payloads;
  if (payloads !== undefined && payloads !== null && (typeof payloads !== 'object' || Array.isArray(payloads))) {
    return `flags[${index}].filters.payloads is not an object`;
  }
  return null;
}

function parseFlag(item: unknown, index: number): FlagDefinition | string {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return `flags[${index}] is not an object`;
  const value = item as Record<string, unknown>;
  const { id, key, active, deleted, filters } = value;
  if (typeof key !== 'string' || key === '') return `flags[${index}].key is not a non-empty string`;
  if (id !== undefined && id !== null && !Number.isInteger(id)) return `flags[${index}].id is not an integer`;
  if (typeof active !== 'boolean') return `flags[${index}].active is not a boolean`;
  if (deleted !== undefined && deleted !== null && typeof deleted !== 'boolean') return `flags[${index}].deleted is not a boolean`;
  let checked: Record<string, unknown> = {};
  if (filters !== undefined && filters !== null) {
    if (typeof filters !== 'object' || Array.isArray(filters)) return `flags[${index}].filters is not an object`;
    checked = filters as Record<string, unknown>;
    const problem = checkFilters(checked, index);
    if (problem !== null) return problem;
  }
  return {
    id: typeof id === 'number' ? id : null,
    key,
    active,
    deleted: deleted === true,
    filters: checked,
    raw: value,
  };
}

/** Validate an already-parsed local_evaluation value. */
export function validateDefinitions(value: unknown): PayloadResult {
  if (!isObject(value)) return invalid('body is not a JSON object');
  if (!Array.isArray(value.flags)) return invalid('body has no "flags" array');
  const flags: FlagDefinition[] = [];
  for (let index = 0; index < value.flags.length; index++) {
    const flag = parseFlag(value.flags[index] as unknown, index);
    if (typeof flag === 'string') return invalid(flag);
    flags.push(flag);
  }
  const mapping = value.group_type_mapping ?? {};
  if (!isObject(mapping)) return invalid('"group_type_mapping" is not an object');
  for (const [index, name] of Object.entries(mapping)) {
    if (typeof name !== 'string') return invalid(`group_type_mapping["${index}"] is not a string`);
  }
  const cohorts = value.cohorts ?? {};
  if (!isObject(cohorts)) return invalid('"cohorts" is not an object');
  for (const [id, cohort] of Object.entries(cohorts)) {
    if (!isObject(cohort)) return invalid(`cohorts["${id}"] is not an object`);
  }
  return { ok: true, value: { flags, groupTypeMapping: mapping as Record<string, string>, cohorts, parsed: value } };
}

/** Parse and validate a raw body. Invalid UTF-8 or JSON is refused with the parser's reason. */
export function parseDefinitions(body: Uint8Array): PayloadResult {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch (error) {
    return invalid(`body is not valid JSON: ${(error as Error).message}`);
  }
  return parseDefinitionsText(text);
}

/** Parse and validate a body already decoded to text. Invalid JSON is refused with the parser's reason. */
export function parseDefinitionsText(text: string): PayloadResult {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return invalid(`body is not valid JSON: ${(error as Error).message}`);
  }
  return validateDefinitions(value);
}
