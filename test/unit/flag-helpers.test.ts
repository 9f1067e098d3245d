import { describe, expect, it } from 'vitest';
import { canonicalQuery } from '../../src/http/forward.js';
import { parseQuery } from '../../src/http/query.js';
import { rewriteLink, rewriteLinks } from '../../src/http/links.js';
import { bulkKeys } from '../../src/http/routes/flags.js';
import { createVariant, emptyProject, withChanges, type ProjectSnapshot } from '../../src/store/snapshot.js';
import { parseDefinitions, type Definitions } from '../../src/upstream/payload.js';
import { createWriteSync, writeCheck } from '../../src/upstream/write-sync.js';

function project(flags: Array<Record<string, unknown>>, etag = 'W/"aaaa"'): ProjectSnapshot {
  const body = Buffer.from(JSON.stringify({ flags, group_type_mapping: {}, cohorts: {} }));
  const parsed = parseDefinitions(body);
  if (!parsed.ok) throw new Error(parsed.error);
  const variant = createVariant({ body, definitions: parsed.value as Definitions, upstreamEtag: etag, fetchedAt: 0, source: 'upstream' });
  return withChanges(emptyProject(1, 'phc_x'), { cohorts: variant });
}
const flag = (id: number, key: string, extra: Record<string, unknown> = {}) => ({ id, key, active: true, deleted: false, filters: { groups: [] }, version: 1, ...extra });

describe('paging links', () => {
  it.each([
    ['https://us.posthog.com/api/projects/1/feature_flags/?limit=2&offset=4', '', 'http://127.0.0.1:8010/api/projects/1/feature_flags/?limit=2&offset=4'],
    ['https://example.com/posthog/api/projects/1/feature_flags/?limit=2', '/posthog', 'http://127.0.0.1:8010/api/projects/1/feature_flags/?limit=2'],
    ['not a url', '', 'not a url'],
  ])('%s (upstream path %j) → %s', (url, path, expected) => expect(rewriteLink(url, 'http://127.0.0.1:8010', path)).toBe(expected));

  it('rewrites next and previous in place, keeping every other byte', () => {
    const body = '{"count":5,"next":"https://up/api/projects/1/feature_flags/?limit=2&offset=4","previous":"https://up/api/projects/1/feature_flags/?limit=2","results":[{"x":1.0}]}';
    expect(rewriteLinks(Buffer.from(body), 'http://side', '').toString()).toBe(
      '{"count":5,"next":"http://side/api/projects/1/feature_flags/?limit=2&offset=4","previous":"http://side/api/projects/1/feature_flags/?limit=2","results":[{"x":1.0}]}',
    );
  });

  it('leaves bodies without links alone (same buffer)', () => {
    const body = Buffer.from('{"count":0,"next":null,"previous":null,"results":[]}');
    expect(rewriteLinks(body, 'http://side', '')).toBe(body);
    const notJson = Buffer.from('<html>');
    expect(rewriteLinks(notJson, 'http://side', '')).toBe(notJson);
  });
});

describe('canonical query', () => {
  it('sorts parameters and never keeps the credential', () => {
    expect(canonicalQuery(parseQuery('offset=2&limit=1&personal_api_key=phx_secret'))).toBe('limit=1&offset=2');
    expect(canonicalQuery(parseQuery(''))).toBe('');
    expect(canonicalQuery(parseQuery('b&a=1&&personal%5Fapi%5Fkey=phx_secret'))).toBe('a=1&b=');
    // Repeated names: the value upstream reads (the last) decides the entry.
    expect(canonicalQuery(parseQuery('offset=0&offset=4'))).toBe('offset=4');
  });
});

describe('bulk_keys from the snapshot', () => {
  const p = project([flag(1, 'one'), flag(2, 'two'), flag(3, 'gone', { deleted: true })]);
  it.each([
    [{ ids: [1, '2'] }, 200, { keys: { '1': 'one', '2': 'two' } }],
    [{ ids: [1, 'abc', 2.5] }, 200, { keys: { '1': 'one' }, warning: "Invalid flag IDs ignored: ['abc', 2.5]" }],
    [{}, 200, { keys: {} }],
    [{ ids: [] }, 200, { keys: {} }],
    [{ ids: ['abc'] }, 400, { error: 'Invalid flag IDs provided' }],
  ])('%j → %i %j', (body, status, expected) => {
    const reply = bulkKeys(p, body);
    expect(reply?.status).toBe(status);
    expect(JSON.parse(reply?.body?.toString() ?? 'null')).toEqual(expected);
  });
  it.each([[{ ids: [1, 9] }], [{ ids: [3] }], [{ ids: [1, { a: 1 }] }], [{ ids: 'x' }], [[1]]])('%j is left to upstream', (body) =>
    expect(bulkKeys(p, body)).toBeNull(),
  );
});

describe('read-your-writes', () => {
  const reply = (value: unknown) => Buffer.from(JSON.stringify(value));
  it('waits for the flag at the written version, or its absence once deleted', () => {
    const check = writeCheck(reply({ id: 2, key: 'two', version: 3, deleted: false }), project([]));
    expect(check?.(project([flag(2, 'two', { version: 2 })]))).toBe(false);
    expect(check?.(project([flag(2, 'two', { version: 3 })]))).toBe(true);
    const deleted = writeCheck(reply({ id: 2, version: 4, deleted: true }), project([]));
    expect(deleted?.(project([flag(2, 'two', { version: 3 })]))).toBe(false);
    expect(deleted?.(project([]))).toBe(true);
  });
  it('falls back to an ETag change, and does not wait for remote-config flags local_evaluation leaves out', () => {
    const check = writeCheck(Buffer.from('not json'), project([], 'W/"aaaa"'));
    expect(check?.(project([], 'W/"aaaa"'))).toBe(false);
    expect(check?.(project([], 'W/"bbbb"'))).toBe(true);
    const held = project([flag(5, 'rc', { version: 1 })]);
    expect(writeCheck(reply({ id: 5, version: 2, is_remote_configuration: true, has_encrypted_payloads: true }), held)).toBeNull();
    expect(writeCheck(reply({ id: 6, version: 2, is_remote_configuration: true }), held)).toBeNull();
    expect(writeCheck(reply({ id: 5, version: 2, is_remote_configuration: true }), held)?.(held)).toBe(false);
  });
  it('re-polls until the snapshot shows the write, or gives up at the deadline', async () => {
    let clock = 0;
    let current = project([flag(2, 'two', { version: 1 })]);
    let polls = 0;
    const store = { get: () => current } as unknown as Parameters<typeof createWriteSync>[0]['store'];
    const sync = createWriteSync({
      store,
      pollNow: async () => {
        polls += 1;
        if (polls === 3) current = project([flag(2, 'two', { version: 2 })]);
      },
      timeoutMs: 1000,
      now: () => clock,
      sleep: async (ms) => void (clock += ms),
    });
    const check = writeCheck(reply({ id: 2, version: 2 }), undefined);
    expect(await sync(1, check as NonNullable<typeof check>)).toBe(true);
    expect(polls).toBe(3);
    const never = writeCheck(reply({ id: 2, version: 9 }), undefined);
    expect(await sync(1, never as NonNullable<typeof never>)).toBe(false);
    expect(clock).toBeGreaterThanOrEqual(1000);
  });
});
