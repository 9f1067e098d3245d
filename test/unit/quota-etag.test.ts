import { describe, expect, it } from 'vitest';
import { parseSnapshotFile, serializeProjectFile } from '../../src/store/snapshot-file.js';
import { computeEtag, createVariant, emptyProject, quotaRecoveryEtag, withChanges } from '../../src/store/snapshot.js';

const body = Buffer.from('{"flags":[]}');
const definitions = { flags: [], groupTypeMapping: {}, cohorts: {}, parsed: { flags: [] } };
const variant = (upstreamEtag: string | null, servedEtag?: string | null) =>
  createVariant({ body, definitions, upstreamEtag, fetchedAt: 1_000, source: 'upstream', servedEtag });

describe('the ETag served after a quota-limited period', () => {
  it.each([
    ['upstream ETag, none served', variant('W/"abc"'), 'W/"abc"'],
    ['no upstream ETag', variant(null), computeEtag(body)],
    ['a served ETag wins', variant('W/"abc"', 'W/"served"'), 'W/"served"'],
    ['a null served ETag is upstream\'s', variant('W/"abc"', null), 'W/"abc"'],
  ])('%s', (_name, v, etag) => {
    expect(v.etag).toBe(etag);
    expect(v.headers200.etag).toBe(etag);
    expect(v.headers304.etag).toBe(etag);
  });

  it('is new, weak, and fixed for a given time', () => {
    const withUpstream = variant('W/"abc"');
    const renewed = quotaRecoveryEtag(withUpstream, 5);
    expect(renewed).toMatch(/^W\/"[0-9a-f]{16}"$/);
    expect(renewed).not.toBe('W/"abc"');
    expect(quotaRecoveryEtag(withUpstream, 5)).toBe(renewed);
    expect(quotaRecoveryEtag(withUpstream, 6)).not.toBe(renewed);
    expect(quotaRecoveryEtag(variant(null), 5)).not.toBe(computeEtag(body));
    // Renewing a renewed variant starts from upstream's ETag again: no growth, still new.
    const again = variant('W/"abc"', renewed);
    expect(quotaRecoveryEtag(again, 7)).not.toBe(renewed);
  });

  it('survives a restart: persisted as served_etag and read back', () => {
    const project = withChanges(emptyProject(3, 'phc_x'), { cohorts: variant('W/"abc"', 'W/"served"'), plain: variant('W/"def"') });
    const text = serializeProjectFile(project, 2_000);
    expect(text).toContain('"served_etag": "W/\\"served\\""');
    const [read] = parseSnapshotFile(text, { file: 'f', source: 'disk', bareProjectId: 3, mtimeMs: 0 });
    expect(read?.cohorts?.etag).toBe('W/"served"');
    expect(read?.cohorts?.upstreamEtag).toBe('W/"abc"');
    expect(read?.plain?.etag).toBe('W/"def"');
    expect(read?.plain?.servedEtag).toBeNull();
    expect(() => parseSnapshotFile(text.replace('"served_etag": "W/\\"served\\""', '"served_etag": 5'), { file: 'f', source: 'disk', bareProjectId: 3, mtimeMs: 0 })).toThrow(/served_etag/);
  });
});
