/** The seal of shared state (src/seal.ts): what opens, and everything that must not. */
import { describe, expect, it } from 'vitest';
import { createSealer, looksSealed, sealContext, sealHeaderBytes, stripSeal, unverifiableReason } from '../../src/seal.js';

const sealer = createSealer('phs_thesidecarsownkey', 'upstream_key');
const context = sealContext('snapshot-head', 'flag-sidecar:{abc:1}:snapshot-head');
const payload = Buffer.from('{"flags":[]}');

describe('seal', () => {
  it('opens what it sealed, under the same context, and leaves the payload readable after one line', () => {
    const sealed = sealer.seal(payload, context);
    expect(sealed.length).toBe(payload.length + sealHeaderBytes);
    expect(sealed.toString('utf8').split('\n')[1]).toBe('{"flags":[]}');
    expect(sealer.open(sealed, context)?.equals(payload)).toBe(true);
    expect(createSealer('phs_thesidecarsownkey', 'fleet_secret').open(sealed, context)?.equals(payload)).toBe(true);
    expect(stripSeal(sealed).equals(payload)).toBe(true);
    expect(stripSeal(payload).equals(payload)).toBe(true);
  });

  const sealed = sealer.seal(payload, context);
  it.each([
    ['unsealed', payload],
    ['empty', Buffer.alloc(0)],
    ['truncated', sealed.subarray(0, sealHeaderBytes - 1)],
    ['a payload byte changed', Buffer.concat([sealed.subarray(0, sealed.length - 2), Buffer.from('}}')])],
    ['a payload byte added', Buffer.concat([sealed, Buffer.from(' ')])],
    ['the tag changed', Buffer.from(sealed.toString('latin1').replace(/^fsseal1 ./, (m) => `fsseal1 ${m.endsWith('0') ? '1' : '0'}`), 'latin1')],
    ['the tag not hex', Buffer.from(sealed.toString('latin1').replace(/^fsseal1 ../, 'fsseal1 zz'), 'latin1')],
    ['sealed under another context (another project)', sealer.seal(payload, sealContext('snapshot-head', 'flag-sidecar:{abc:2}:snapshot-head'))],
    ['sealed as another kind', sealer.seal(payload, sealContext('snapshot-body', 'flag-sidecar:{abc:1}:snapshot-head'))],
    ['sealed with another secret', createSealer('phs_anothersidecarskey', 'upstream_key').seal(payload, context)],
  ])('%s: does not open', (_name, value) => {
    expect(sealer.open(value, context)).toBeNull();
  });

  it('says why a value does not open', () => {
    expect(looksSealed(payload)).toBe(false);
    expect(unverifiableReason(payload)).toMatch(/^not sealed/);
    expect(unverifiableReason(createSealer('phs_other', 'upstream_key').seal(payload, context))).toMatch(/does not verify/);
  });

  it('keeps context and payload apart: moving bytes between them changes the tag', () => {
    const a = sealer.seal('bc', sealContext('a'));
    const b = sealer.seal('c', sealContext('ab'));
    expect(a.subarray(0, sealHeaderBytes).equals(b.subarray(0, sealHeaderBytes))).toBe(false);
  });
});
