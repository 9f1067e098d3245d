import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import type { UpstreamClient, UpstreamRequest, UpstreamResult } from '../../src/upstream/client.js';
import type { DefinitionMark } from '../../src/upstream/definition-mark.js';
import { createRemoteConfigWarmer, credentialClass } from '../../src/upstream/remote-config-warmer.js';

/** A client whose answers the test releases one by one. */
function stubClient() {
  const pending: Array<{ req: UpstreamRequest; answer: (r: UpstreamResult) => void }> = [];
  const client = {
    request: (req: UpstreamRequest) => new Promise<UpstreamResult>((answer) => pending.push({ req, answer })),
  } as unknown as UpstreamClient;
  const ok = (text: string, status = 200): UpstreamResult => ({ kind: 'response', status, headers: { 'content-type': 'application/json' }, body: Buffer.from(text) });
  return { client, pending, ok };
}
const tick = () => new Promise((r) => setImmediate(r));

function setup(ownKey = 'phs_own') {
  let clock = 0;
  const stub = stubClient();
  // What the snapshot says of each flag (default: held, at version 1).
  const marks = new Map<string, DefinitionMark>();
  const warmer = createRemoteConfigWarmer({
    client: stub.client,
    ownKey,
    now: () => clock,
    logger: createLogger('silent'),
    maxEntries: 10,
    idleMs: 60_000,
    staleMaxMs: 10_000,
    mark: (_projectId, flag) => marks.get(flag) ?? { described: true, value: 'v1' },
  });
  const mark = (flag: string, value: string, described = true) => marks.set(flag, { described, value });
  return { warmer, ...stub, mark, advance: (ms: number) => (clock += ms) };
}

describe('remote-config warmer', () => {
  it('fills entries only with its own key, at the numeric project path, for its own key kind', async () => {
    const { warmer, pending, ok } = setup();
    warmer.want(1, 'my flag');
    warmer.want(1, 'my flag'); // one fetch at a time per flag
    expect(pending).toHaveLength(1);
    expect(pending[0]?.req.path).toBe('/api/projects/1/feature_flags/my%20flag/remote_config/');
    expect(pending[0]?.req.headers?.authorization).toBe('Bearer phs_own');
    pending[0]?.answer(ok('"x"'));
    await tick();
    expect(warmer.get(1, 'my flag', 'secret')?.response.body.toString()).toBe('"x"');
    expect(warmer.get(1, 'my flag', 'personal')).toBeUndefined();
    expect(warmer.get(2, 'my flag', 'secret')).toBeUndefined();
  });

  it('keeps nothing from a fetch that a write overtook', async () => {
    const { warmer, pending, ok } = setup();
    warmer.want(1, 'f');
    warmer.drop(1);
    pending[0]?.answer(ok('"before the write"'));
    await tick();
    expect(warmer.get(1, 'f', 'secret')).toBeUndefined();
  });

  it('stops serving past the stale limit, and drops entries the own key may no longer read', async () => {
    const { warmer, pending, ok, advance, mark } = setup();
    warmer.want(1, 'a');
    pending.shift()?.answer(ok('"a"'));
    await tick();
    advance(10_001);
    expect(warmer.get(1, 'a', 'secret')).toBeUndefined();
    warmer.want(1, 'b');
    pending.shift()?.answer(ok('"b"'));
    await tick();
    mark('b', 'v2');
    const refreshing = warmer.refresh(1);
    pending.shift()?.answer(ok('{"detail":"nope"}', 403));
    await refreshing;
    expect(warmer.get(1, 'b', 'secret')).toBeUndefined();
  });

  it("asks again only after a poll that changed the flag's definition, and serves on what unchanged polls confirm", async () => {
    const { warmer, pending, ok, advance, mark } = setup();
    warmer.want(1, 'config');
    pending.shift()?.answer(ok('"old"'));
    await tick();
    for (let poll = 0; poll < 10; poll++) {
      advance(2_000); // 20 s in all: past the stale limit, but every poll confirmed the entry
      await warmer.refresh(1);
    }
    expect(pending).toHaveLength(0);
    expect(warmer.get(1, 'config', 'secret')?.response.body.toString()).toBe('"old"');
    mark('config', 'v2');
    const refreshing = warmer.refresh(1);
    expect(pending).toHaveLength(1);
    pending.shift()?.answer(ok('"new"'));
    await refreshing;
    for (let poll = 0; poll < 3; poll++) await warmer.refresh(1);
    expect(pending).toHaveLength(0);
    expect(warmer.get(1, 'config', 'secret')?.response.body.toString()).toBe('"new"');
  });

  it('never asks again for a 404 (a missing flag, or one that is no remote config) until the definitions change', async () => {
    const { warmer, pending, ok, mark } = setup();
    mark('missing', 'defs:etag-1', false);
    warmer.want(1, 'missing');
    warmer.want(1, 'plain-flag');
    pending.shift()?.answer(ok('', 404));
    pending.shift()?.answer(ok('', 404));
    await tick();
    for (let poll = 0; poll < 10; poll++) await warmer.refresh(1);
    expect(pending).toHaveLength(0);
    expect(warmer.get(1, 'missing', 'secret')?.response.status).toBe(404);
    mark('missing', 'defs:etag-2', false); // the definitions changed: the flag may exist now
    const refreshing = warmer.refresh(1);
    expect(pending.map((p) => p.req.path)).toEqual(['/api/projects/1/feature_flags/missing/remote_config/']);
    pending.shift()?.answer(ok('"created"'));
    await refreshing;
    expect(warmer.get(1, 'missing', 'secret')?.response.body.toString()).toBe('"created"');
  });

  it('asks again, past the stale limit, for a 404 of a flag the definitions do not hold (an encrypted one may have been created)', async () => {
    const { warmer, pending, ok, mark, advance } = setup();
    mark('missing', 'defs:etag-1', false);
    warmer.want(1, 'missing');
    pending.shift()?.answer(ok('', 404));
    await tick();
    for (let poll = 0; poll < 12; poll++) {
      advance(1_000);
      await warmer.refresh(1); // unchanged definitions: nothing asked, and the 404 not confirmed by them
    }
    expect(pending).toHaveLength(0);
    expect(warmer.get(1, 'missing', 'secret')).toBeUndefined(); // past staleMaxMs (10 s): the next read asks upstream
  });

  it('refreshes after every poll a remote config the definitions do not hold (encrypted): no change of it is visible', async () => {
    const { warmer, pending, ok, mark } = setup();
    mark('sealed', 'defs:etag-1', false);
    warmer.want(1, 'sealed');
    pending.shift()?.answer(ok('"********* (encrypted)"'));
    await tick();
    for (let poll = 0; poll < 3; poll++) {
      const refreshing = warmer.refresh(1);
      expect(pending).toHaveLength(1);
      pending.shift()?.answer(ok('"********* (encrypted)"'));
      await refreshing;
    }
  });

  it('answers OAuth callers never from a personal key (upstream decrypts for personal API keys only)', () => {
    expect(credentialClass('oauth')).toBe('oauth');
    expect(setup('phx_own').warmer.ownClass).toBe('personal');
  });
});
