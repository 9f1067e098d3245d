/**
 * What a flag's conditions read from the caller: person properties, group properties by group type name, and the
 * cohorts they test (with the person properties those read, nested cohorts followed). Used to explain a flag left
 * undecided offline; pure, tolerant of any shape (what it cannot read it leaves out), never throws.
 */
import type { Definitions, FlagDefinition } from '../upstream/payload.js';

/** The inputs of one flag, each list sorted and without repeats. */
export interface FlagInputs {
  readonly person: readonly string[];
  /** Group type name (or `group <index>` when the mapping lacks it) → its property keys. */
  readonly groups: Readonly<Record<string, readonly string[]>>;
  readonly cohorts: readonly number[];
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** The inputs of `flag`, cohorts looked up in `definitions`. */
export function flagInputs(flag: FlagDefinition, definitions: Pick<Definitions, 'cohorts' | 'groupTypeMapping'>): FlagInputs {
  const person = new Set<string>();
  const groups = new Map<string, Set<string>>();
  const cohorts = new Set<number>();
  const groupName = (index: unknown): string => definitions.groupTypeMapping[String(index)] ?? `group ${String(index)}`;

  const visit = (filter: unknown, groupIndex: unknown): void => {
    if (!isObject(filter)) return;
    // A cohort's (and a nested group's) filters: {type: AND|OR, values: [...]}.
    if (Array.isArray(filter.values)) {
      for (const value of filter.values) visit(value, groupIndex);
      return;
    }
    const key = typeof filter.key === 'string' ? filter.key : null;
    if (filter.type === 'cohort') {
      const id = Number(filter.value);
      if (!Number.isInteger(id) || cohorts.has(id)) return;
      cohorts.add(id);
      const cohort = definitions.cohorts[String(id)];
      visit(isObject(cohort) && isObject(cohort.properties) ? cohort.properties : cohort, groupIndex);
    } else if (filter.type === 'group' && key !== null) {
      const name = groupName(filter.group_type_index ?? groupIndex);
      groups.set(name, (groups.get(name) ?? new Set()).add(key));
    } else if ((filter.type === 'person' || filter.type === undefined) && key !== null) {
      person.add(key);
    }
  };

  const aggregation = flag.filters.aggregation_group_type_index;
  for (const condition of list(flag.filters.groups)) {
    if (!isObject(condition)) continue;
    for (const property of list(condition.properties)) {
      // A group-aggregated flag's conditions read that group's properties whatever their type says.
      if (aggregation !== undefined && aggregation !== null && isObject(property) && typeof property.key === 'string' && property.type !== 'cohort') {
        visit({ ...property, type: 'group', group_type_index: property.group_type_index ?? aggregation }, aggregation);
      } else visit(property, aggregation);
    }
  }
  const sorted = (set: Set<string>): string[] => [...set].sort();
  return {
    person: sorted(person),
    groups: Object.fromEntries([...groups].sort(([a], [b]) => a.localeCompare(b)).map(([name, keys]) => [name, sorted(keys)])),
    cohorts: [...cohorts].sort((a, b) => a - b),
  };
}
