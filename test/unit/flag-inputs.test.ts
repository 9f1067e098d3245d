/** What a flag's conditions read (explained when one is left out offline): the example snapshot's flags. */
import { describe, expect, it } from 'vitest';
import { flagInputs } from '../../src/eval/flag-inputs.js';
import { parseDefinitionsText } from '../../src/upstream/payload.js';
import { exampleDefinitions } from '../support/fixtures.js';

const parsed = parseDefinitionsText(JSON.stringify(exampleDefinitions()));
if (!parsed.ok) throw new Error(parsed.error);
const definitions = parsed.value;
const inputsOf = (key: string) => {
  const flag = definitions.flags.find((f) => f.key === key);
  if (flag === undefined) throw new Error(`no flag ${key} in the example snapshot`);
  return flagInputs(flag, definitions);
};

describe('flagInputs', () => {
  it.each([
    ['new-checkout', { person: [], groups: {}, cohorts: [] }],
    ['pricing-experiment', { person: ['country'], groups: {}, cohorts: [] }],
    ['beta-programme', { person: ['beta_opt_in', 'signup_year'], groups: {}, cohorts: [7] }],
    ['enterprise-dashboards', { person: [], groups: { company: ['plan'] }, cohorts: [] }],
    ['fast-search', { person: ['app_version', 'plan'], groups: {}, cohorts: [] }],
  ])('%s reads %j', (key, inputs) => expect(inputsOf(key)).toEqual(inputs));

  it('follows nested cohorts once, names an unmapped group type by index, and skips what it cannot read', () => {
    const flag = {
      id: 1,
      key: 'k',
      active: true,
      deleted: false,
      raw: {},
      filters: {
        groups: [
          { properties: [{ key: 'id', type: 'cohort', value: 1 }, { key: 'size', type: 'group', group_type_index: 3 }, 'junk', { type: 'person' }] },
          'junk',
        ],
      },
    };
    const cohorts = {
      1: { type: 'AND', values: [{ key: 'id', type: 'cohort', value: 2 }, { key: 'a', type: 'person' }] },
      2: { type: 'OR', values: [{ key: 'id', type: 'cohort', value: 1 }, { key: 'b', type: 'person' }] },
    };
    expect(flagInputs(flag, { cohorts, groupTypeMapping: {} })).toEqual({ person: ['a', 'b'], groups: { 'group 3': ['size'] }, cohorts: [1, 2] });
  });
});
