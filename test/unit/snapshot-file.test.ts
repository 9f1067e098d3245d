import { describe, expect, it } from 'vitest';
import { SnapshotFileError } from '../../src/errors.js';
import { parseSnapshotFile, serializeProjectFile } from '../../src/store/snapshot-file.js';
import { createVariant, emptyProject, withChanges } from '../../src/store/snapshot.js';
import { exampleDefinitions } from '../support/fixtures.js';

const options = { file: 'snap.json', source: 'bootstrap' as const, bareProjectId: null, mtimeMs: 1000 };
const body = JSON.stringify(exampleDefinitions());

describe('snapshot files', () => {
  it('reads a hand-written envelope', () => {
    const text = JSON.stringify({
      flag_sidecar_snapshot: 1,
      projects: [
        { project_id: 3, token: 'phc_three', local_evaluation: exampleDefinitions(), fetched_at: '2026-01-02T03:04:05Z' },
        { project_id: 4, local_evaluation: { flags: [] }, local_evaluation_without_cohorts: { flags: [] } },
      ],
    });
    const [three, four] = parseSnapshotFile(text, options);
    expect(three?.projectId).toBe(3);
    expect(three?.token).toBe('phc_three');
    expect(three?.cohorts?.body.toString()).toBe(body);
    expect(three?.cohorts?.fetchedAt).toBe(Date.parse('2026-01-02T03:04:05Z'));
    expect(three?.cohorts?.source).toBe('bootstrap');
    expect(three?.plain).toBeNull();
    expect(four?.cohorts?.fetchedAt).toBe(1000);
    expect(four?.plain?.body.toString()).toBe('{"flags":[]}');
    expect(four?.plainWanted).toBe(true);
  });

  it('reads a bare local_evaluation body, byte for byte, for the one configured project', () => {
    const text = `${JSON.stringify(exampleDefinitions(), null, 2)}\n`;
    const [project] = parseSnapshotFile(text, { ...options, bareProjectId: 9 });
    expect(project?.projectId).toBe(9);
    expect(project?.cohorts?.body.toString()).toBe(text);
  });

  it('round-trips a persisted project, keeping bodies and upstream ETags exactly', () => {
    const raw = Buffer.from(`{"flags": [],   "cohorts": {"1": {"type": "OR", "values": []}}, "note": "caf\u00e9"}`);
    const variant = createVariant({ body: raw, definitions: { flags: [], groupTypeMapping: {}, cohorts: {}, parsed: { flags: [] } }, upstreamEtag: 'W/"aaaabbbbccccdddd"', fetchedAt: 5000, source: 'upstream' });
    const project = withChanges(emptyProject(7, 'phc_seven'), { cohorts: variant, plainWanted: true });
    const text = serializeProjectFile(project, 6000);
    const [back] = parseSnapshotFile(text, { ...options, source: 'disk' });
    expect(back?.cohorts?.body.equals(raw)).toBe(true);
    expect(back?.cohorts?.etag).toBe('W/"aaaabbbbccccdddd"');
    expect(back?.cohorts?.upstreamEtag).toBe('W/"aaaabbbbccccdddd"');
    expect(back?.cohorts?.fetchedAt).toBe(5000);
    expect(back?.cohorts?.source).toBe('disk');
    expect(back?.plainWanted).toBe(true);
    expect(back?.token).toBe('phc_seven');
  });

  const persisted = () => {
    const variant = createVariant({ body: Buffer.from('{"flags":[]}'), definitions: { flags: [], groupTypeMapping: {}, cohorts: {}, parsed: { flags: [] } }, upstreamEtag: null, fetchedAt: 1, source: 'upstream' });
    return serializeProjectFile(withChanges(emptyProject(1, null), { cohorts: variant }), 2);
  };

  it.each([
    ['truncated', () => persisted().slice(0, 80), 'not valid JSON'],
    ['corrupt (body changed, checksum kept)', () => persisted().replace('{\\"flags\\":[]}', '{\\"flags\\":[1]}'), 'does not match its sha256'],
    ['neither format', () => '{"hello":1}', 'neither a local_evaluation body nor a snapshot file'],
    ['bare without a known project', () => body, 'exactly one project in FLAG_SIDECAR_PROJECTS'],
    ['no projects', () => '{"flag_sidecar_snapshot":1,"projects":[]}', 'non-empty array'],
    ['a bad project id', () => '{"flag_sidecar_snapshot":1,"projects":[{"project_id":"1","local_evaluation":{"flags":[]}}]}', 'project_id'],
    ['a project without a body', () => '{"flag_sidecar_snapshot":1,"projects":[{"project_id":1}]}', 'no local_evaluation body'],
    ['an invalid body', () => '{"flag_sidecar_snapshot":1,"projects":[{"project_id":1,"local_evaluation":{"flags":[{"key":1}]}}]}', 'flags[0].key'],
    ['a duplicate project', () => '{"flag_sidecar_snapshot":1,"projects":[{"project_id":1,"local_evaluation":{"flags":[]}},{"project_id":1,"local_evaluation":{"flags":[]}}]}', 'listed twice'],
    ['a bad token', () => '{"flag_sidecar_snapshot":1,"projects":[{"project_id":1,"token":"x","local_evaluation":{"flags":[]}}]}', 'token'],
    ['a bad date', () => '{"flag_sidecar_snapshot":1,"projects":[{"project_id":1,"fetched_at":"yesterday","local_evaluation":{"flags":[]}}]}', 'fetched_at'],
    // JSON text escapes a lone surrogate, which no UTF-8 body can hold: the record is not what was persisted.
    ['a body with a lone surrogate', () => '{"flag_sidecar_snapshot":1,"projects":[{"project_id":1,"variants":{"cohorts":{"body":"{\\"flags\\":[],\\"x\\":\\"\\ud800\\"}"}}}]}', 'lone surrogate'],
  ])('refuses a file that is %s', (_name, text, reason) => {
    let error: unknown;
    try {
      parseSnapshotFile(text(), options);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SnapshotFileError);
    expect((error as Error).message).toContain('snap.json: ');
    expect((error as Error).message).toContain(reason);
  });
});
