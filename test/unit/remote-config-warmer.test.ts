import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import type { UpstreamClient, UpstreamRequest, UpstreamResult } from '../../src/upstream/client.js';
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
  const warmer = createRemoteConfigWarmer({
    client: stub.client,
    ownKey,
    now: () => clock,
    logger: createLogger('silent'),
    maxEntries: 10,
    idleMs: 60_000,
    staleMaxMs: 10_000,
  });
  return { warmer, ...stub, advance: (ms: number) => (clock += ms) };
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
    const { warmer, pending, ok, advance } = setup();
    warmer.want(1, 'a');
    pending.shift()?.answer(ok('"a"'));
    await tick();
    advance(10_001);
    expect(warmer.get(1, 'a', 'secret')).toBeUndefined();
    warmer.want(1, 'b');
    pending.shift()?.answer(ok('"b"'));
    await tick();
    const refreshing = warmer.refresh(1);
    pending.shift()?.answer(ok('{"detail":"nope"}', 403));
    await refreshing;
    expect(warmer.get(1, 'b', 'secret')).toBeUndefined();
  });

  it('answers OAuth callers never from a personal key (upstream decrypts for personal API keys only)', () => {
    expect(credentialClass('oauth')).toBe('oauth');
    expect(setup('phx_own').warmer.ownClass).toBe('personal');
  });
});
