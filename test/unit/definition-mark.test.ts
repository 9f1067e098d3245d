import { describe, expect, it } from 'vitest';
import { createVariant, emptyProject, withChanges, type DefinitionsSummary, type FlagSummary } from '../../src/store/snapshot.js';
import { definitionMark } from '../../src/upstream/definition-mark.js';

const flag = (id: number, key: string, version: number | null): FlagSummary => ({ id, key, active: true, deleted: false, version });
const project = (flags: FlagSummary[], etag: string) => {
  const definitions: DefinitionsSummary = { flags, cohortCount: 0 };
  return withChanges(emptyProject(1, 'phc_x'), {
    cohorts: createVariant({ body: Buffer.from('{}'), definitions, upstreamEtag: `W/"${etag}"`, fetchedAt: 0, source: 'upstream' }),
  });
};

describe('definitionMark: when a flag’s remote config may have changed', () => {
  it('follows a held flag’s version, by id or key as remote_config reads them, whatever else changes', () => {
    const before = project([flag(3, 'config', 4), flag(4, 'other', 1)], 'aaaa');
    const otherEdited = project([flag(3, 'config', 4), flag(4, 'other', 2)], 'bbbb');
    const edited = project([flag(3, 'config', 5), flag(4, 'other', 2)], 'cccc');
    for (const name of ['3', 'config']) {
      expect(definitionMark(before, name)).toEqual({ described: true, value: 'flag:3:v4' });
      expect(definitionMark(otherEdited, name)).toEqual(definitionMark(before, name));
      expect(definitionMark(edited, name)).not.toEqual(definitionMark(before, name));
    }
  });

  it('follows the definitions’ ETag for a flag they do not hold (missing, or an encrypted remote config), or one without a version', () => {
    const before = project([flag(3, 'config', null)], 'aaaa');
    const after = project([flag(3, 'config', null)], 'bbbb');
    expect(definitionMark(before, 'missing')).toEqual({ described: false, value: 'defs:W/"aaaa"' });
    expect(definitionMark(after, 'missing').value).not.toBe(definitionMark(before, 'missing').value);
    expect(definitionMark(before, 'config')).toEqual({ described: true, value: 'defs:W/"aaaa"' });
    expect(definitionMark(before, '33')).toEqual({ described: false, value: 'defs:W/"aaaa"' });
    expect(definitionMark(emptyProject(1, null), 'config')).toEqual({ described: false, value: 'none' });
    expect(definitionMark(undefined, 'config')).toEqual({ described: false, value: 'none' });
  });
});
