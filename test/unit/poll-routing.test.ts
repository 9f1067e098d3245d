/**
 * Poll routing as a follower (src/fleet/poll-routing.ts) with fakes: the plain variant asked of the leader through
 * Redis. A request that Redis did not take is asked again by the next caller (it is not marked wanted for good);
 * two callers at once ask once.
 */
import { describe, expect, it } from 'vitest';
import { createNoticeWaiters } from '../../src/fleet/notice-waiters.js';
import { createPollRouting } from '../../src/fleet/poll-routing.js';
import type { FleetRedis } from '../../src/fleet/redis.js';
import { fleetKeys, type FleetKeys } from '../../src/fleet/keys.js';
import { emptyProject } from '../../src/store/snapshot.js';
import { createStore } from '../../src/store/store.js';
import type { Poller } from '../../src/upstream/poller.js';

function setup(failures: number) {
  const store = createStore([emptyProject(1, null)]);
  const sent: string[] = [];
  let left = failures;
  const attempt = (what: string): Promise<null> => {
    sent.push(what);
    if (left > 0) {
      left -= 1;
      return Promise.reject(new Error('redis did not answer'));
    }
    return Promise.resolve(null);
  };
  const redis = {
    command: (_operation: string, args: ReadonlyArray<string | Buffer>) => attempt(String(args[0])),
    publish: () => attempt('PUBLISH').then(() => undefined),
  } as unknown as FleetRedis;
  const keys: FleetKeys = fleetKeys('test', new URL('http://upstream.test'));
  const polling = createPollRouting({
    poller: {} as Poller,
    store,
    redis,
    keys,
    waiters: createNoticeWaiters(),
    waitMs: 10,
    role: () => Promise.resolve('follower' as const),
    load: () => Promise.resolve(),
    publish: () => Promise.resolve(),
    listeners: [],
  });
  return { store, sent, polling };
}

describe('poll routing as a follower: the plain variant', () => {
  it.each([
    { failures: 0, calls: 2, sent: ['SET', 'PUBLISH'], wanted: true },
    { failures: 1, calls: 1, sent: ['SET'], wanted: false },
    { failures: 1, calls: 2, sent: ['SET', 'SET', 'PUBLISH'], wanted: true },
  ])('Redis failing $failures time(s), $calls call(s): sends $sent', async ({ failures, calls, sent, wanted }) => {
    const follower = setup(failures);
    for (let i = 0; i < calls; i++) await follower.polling.ensurePlain(1);
    expect(follower.sent).toEqual(sent);
    expect(follower.store.get(1)?.plainWanted).toBe(wanted);
  });

  it('two callers at once ask the leader once (the role is checked before the mark)', async () => {
    const follower = setup(0);
    await Promise.all([follower.polling.ensurePlain(1), follower.polling.ensurePlain(1)]);
    expect(follower.sent).toEqual(['SET', 'PUBLISH']);
  });
});
