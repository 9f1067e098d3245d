import { describe, expect, it } from 'vitest';
import {
  createBodyDigest,
  encodeHead,
  headOf,
  maxHeadBytes,
  parseHead,
  parseNotice,
  parsePollRequest,
  type SnapshotHead,
} from '../../src/fleet/snapshot-head.js';
import { createVariant, emptyProject, withChanges } from '../../src/store/snapshot.js';

const definitions = { flags: [], groupTypeMapping: {}, cohorts: {}, parsed: { flags: [] } };
const body = Buffer.from('{"flags":[],"group_type_mapping":{},"cohorts":{}}');
const digest = createBodyDigest();
const variant = createVariant({ body, definitions, upstreamEtag: 'W/"abc"', fetchedAt: 1000, source: 'upstream' });
const poll = { outcome: 'updated' as const, error: null, failures: 0, at: 1000, lastSuccessAt: 1000 };
const project = withChanges(emptyProject(1, 'phc_x'), { cohorts: variant, quotaBody: Buffer.from('{"type":"quota_limited"}'), plainWanted: true });
const input = { poll, generation: 7, leader: 'pod-a/1/abcdef12', fleetSize: 1000, relay: false, stored: { cohorts: 40 } };
const head: SnapshotHead = headOf(project, input, digest);
const encoded = (change: Record<string, unknown>): Buffer => Buffer.from(JSON.stringify({ ...JSON.parse(encodeHead(head)), ...change }));

describe('snapshot head', () => {
  it('round-trips what followers need to serve like the leader', () => {
    const parsed = parseHead(Buffer.from(encodeHead(head)), 1 << 20);
    expect(parsed).toEqual({ ok: true, head });
    expect(head.cohorts).toEqual({ sha256: digest(body), bytes: body.length, stored: 40, encoding: 'br', upstreamEtag: 'W/"abc"', servedEtag: null, fetchedAt: 1000 });
    expect(head.fleetSize).toBe(1000);
    expect(head.relay).toBe(false);
  });

  it('reads a version 1 head (an older leader in a rolling upgrade): raw bodies, no fleet size', () => {
    const { fleetSize, relay, ...rest } = JSON.parse(encodeHead(head)) as Record<string, unknown>;
    const { stored, encoding, ...cohorts } = rest.cohorts as Record<string, unknown>;
    const parsed = parseHead(Buffer.from(JSON.stringify({ ...rest, v: 1, cohorts })), 1 << 20);
    expect(parsed.ok && parsed.head.cohorts).toEqual({ ...head.cohorts, stored: body.length + 73, encoding: 'identity' });
    expect(parsed.ok && [parsed.head.fleetSize, parsed.head.relay]).toEqual([null, false]);
    expect([fleetSize, relay, stored, encoding]).toEqual([1000, false, 40, 'br']);
    expect(head.quotaBody?.toString()).toBe('{"type":"quota_limited"}');
    expect(head.plainWanted).toBe(true);
  });

  it.each([
    ['not JSON', Buffer.from('{'), /not JSON/],
    ['another version', encoded({ v: 3 }), /version 1 or 2/],
    ['a body stored in another encoding', encoded({ cohorts: { ...head.cohorts, encoding: 'gzip' } }), /encoding/],
    ['a stored size above the bound', encoded({ cohorts: { ...head.cohorts, stored: (1 << 20) + 74 } }), /stored/],
    ['a negative fleet size', encoded({ fleetSize: -1 }), /fleetSize/],
    ['a fleet size above 10^7', encoded({ fleetSize: 1e7 + 1 }), /fleetSize/],
    ['a relay flag that is not a boolean', encoded({ relay: 'yes' }), /relay/],
    ['a string generation', encoded({ generation: 'x' }), /generation/],
    ['a generation above 10^12', encoded({ generation: 1e12 + 1 }), /generation/],
    ['a negative generation', encoded({ generation: -1 }), /generation/],
    ['a leader with a newline', encoded({ leader: 'a\nb' }), /leader/],
    ['no cohorts', encoded({ cohorts: null }), /cohorts is missing/],
    ['a short digest', encoded({ cohorts: { ...head.cohorts, sha256: 'abc' } }), /SHA-256/],
    ['a body above the bound', encoded({ cohorts: { ...head.cohorts, bytes: 2 << 20 } }), /MAX_BODY/],
    ['an ETag that would split a header', encoded({ cohorts: { ...head.cohorts, upstreamEtag: 'W/"a"\r\nx-evil: 1' } }), /ETag/],
    ['a served ETag of 600 characters', encoded({ cohorts: { ...head.cohorts, servedEtag: 'a'.repeat(600) } }), /ETag/],
    ['a fetched-at that is not a time', encoded({ cohorts: { ...head.cohorts, fetchedAt: 1.5 } }), /fetchedAt/],
    ['an unknown poll outcome', encoded({ poll: { ...poll, outcome: 'great' } }), /outcome/],
    ['a quota body that is not base64', encoded({ quotaBody: '<html>' }), /base64/],
    ['a huge quota body', encoded({ quotaBody: 'A'.repeat(40_000) }), /base64/],
    ['a head above the bound', Buffer.alloc(maxHeadBytes + 1, 32), /larger than/],
    ['an array', Buffer.from('[]'), /version 1 or 2/],
  ])('refuses %s', (_name, raw, error) => {
    const parsed = parseHead(raw, 1 << 20);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toMatch(error);
  });

  it('leaves out a 402 body too large to publish', () => {
    const big = withChanges(project, { quotaBody: Buffer.alloc(20_000, 'a') });
    expect(headOf(big, { ...input, generation: 1, leader: 'x' }, digest).quotaBody).toBeNull();
  });
});

describe('channel messages', () => {
  it.each([
    ['{"kind":"snapshot","project":1,"generation":3}', { kind: 'snapshot', project: 1, generation: 3 }],
    ['{"kind":"released","project":2}', { kind: 'released', project: 2 }],
    ['{"kind":"snapshot","project":1}', null],
    ['{"kind":"other","project":1}', null],
    ['{"kind":"released","project":-1}', null],
    ['{"kind":"released","project":"1"}', null],
    ['not json', null],
    [`{"kind":"released","project":1,"pad":"${'x'.repeat(600)}"}`, null],
  ])('notice %s → %j', (raw, expected) => {
    expect(parseNotice(Buffer.from(raw))).toEqual(expected);
  });

  it.each([
    ['{"project":1,"plain":true}', { project: 1, plain: true }],
    ['{"project":1,"plain":false}', { project: 1, plain: false }],
    ['{"project":1}', null],
    ['{"project":1.5,"plain":true}', null],
    ['[]', null],
  ])('poll request %s → %j', (raw, expected) => {
    expect(parsePollRequest(Buffer.from(raw))).toEqual(expected);
  });
});
