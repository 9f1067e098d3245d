/**
 * Shared key checks in fleet mode (issue 16 item 3), two sidecars on one Redis prefix: what upstream said about
 * a key through one sidecar answers the other without asking upstream again — principals, grants and refusals —
 * a sidecar started during an outage accepts keys the fleet verified within the grace period, and a key upstream
 * stopped accepting loses its shared record at once.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { bearer } from '../support/fixtures.js';
import { runRedisUrl, testPrefix } from '../support/redis.js';
import {
  projectOnePath,
  projectTwoPath,
  redisReady,
  redisValue,
  requestsWith,
  secretKeyOne,
  sharedCacheCount,
  sharedNames,
  startFleetSidecar,
  startSharedKeysUpstream,
} from '../support/shared-keys-env.js';
import { waitFor, type TestSidecar } from '../support/start-sidecar.js';

let upstream: FakeUpstream;
beforeEach(async () => {
  upstream = await startSharedKeysUpstream();
});
afterEach(async () => {
  await upstream.close();
});

/** A GET on a connection of its own (no per-connection memo carries anything over). */
async function get(sidecar: TestSidecar, path: string, key: string): Promise<{ status: number; detail: string }> {
  const res = await fetch(sidecar.apiUrl + path, { headers: { ...bearer(key), connection: 'close' } });
  const text = await res.text();
  return { status: res.status, detail: res.status === 200 ? '' : ((JSON.parse(text) as { detail?: string }).detail ?? '') };
}

/** Two fleet sidecars on one fresh prefix, both connected to Redis. */
async function twoSidecars(extra: Record<string, string> = {}): Promise<{ a: TestSidecar; b: TestSidecar; prefix: string }> {
  const prefix = testPrefix();
  const a = await startFleetSidecar(upstream, runRedisUrl, prefix, extra);
  const b = await startFleetSidecar(upstream, runRedisUrl, prefix, extra);
  await Promise.all([redisReady(a), redisReady(b)]);
  return { a, b, prefix };
}

const shared = async (name: string, type: string): Promise<boolean> => (await redisValue(name)).includes(`"type":"${type}"`);

describe('shared key checks', () => {
  it('a personal key verified through A is neither introspected nor granted again through B', async () => {
    const { a, b, prefix } = await twoSidecars();
    const names = sharedNames(upstream, prefix, 'phx_reader');
    expect((await get(a, projectOnePath, 'phx_reader')).status).toBe(200);
    expect(requestsWith(upstream, 'phx_reader')).toBe(2); // the introspection and the grant check for project 1
    await waitFor(async () => (await shared(names.key, 'principal')) && (await shared(names.grant, 'grant')), 'records shared');
    expect(await redisValue(names.key)).not.toContain('phx_reader');

    expect((await get(b, projectOnePath, 'phx_reader')).status).toBe(200);
    expect((await get(b, projectOnePath, 'phx_reader')).status).toBe(200);
    expect(requestsWith(upstream, 'phx_reader')).toBe(2);
    expect(await sharedCacheCount(b, 'principal', 'hit')).toBe(1);
    expect(await sharedCacheCount(b, 'grant', 'hit')).toBe(1);
  });

  it('a project secret key granted through A is not checked again through B', async () => {
    const { a, b, prefix } = await twoSidecars();
    expect((await get(a, projectOnePath, secretKeyOne)).status).toBe(200);
    expect(requestsWith(upstream, secretKeyOne)).toBe(1);
    await waitFor(() => shared(sharedNames(upstream, prefix, secretKeyOne).grant, 'grant'), 'grant shared');
    expect((await get(b, projectOnePath, secretKeyOne)).status).toBe(200);
    expect(requestsWith(upstream, secretKeyOne)).toBe(1);
  });

  it("an unknown key rejected through A is answered 401 by B without upstream, and a project's 403 likewise", async () => {
    const { a, b, prefix } = await twoSidecars();
    expect((await get(a, projectOnePath, 'phx_nobody_knows')).status).toBe(401);
    expect((await get(a, projectTwoPath, secretKeyOne)).status).toBe(403);
    await waitFor(() => shared(sharedNames(upstream, prefix, 'phx_nobody_knows').key, 'unknown'), 'refusal shared');
    await waitFor(() => shared(sharedNames(upstream, prefix, secretKeyOne, 2).grant, 'denied'), 'denial shared');
    const asked = (): number => requestsWith(upstream, 'phx_nobody_knows') + requestsWith(upstream, secretKeyOne);
    const before = asked();
    const unknown = await get(b, projectOnePath, 'phx_nobody_knows');
    expect(unknown).toEqual({ status: 401, detail: 'Personal API key found in request Authorization header is invalid.' });
    const denied = await get(b, projectTwoPath, secretKeyOne);
    expect(denied).toEqual({ status: 403, detail: 'You do not have permission to perform this action.' });
    expect(asked()).toBe(before);
  });

  it('B started while upstream is down accepts a key A verified (within grace), and answers 503 for one nobody verified', async () => {
    const env = { FLAG_SIDECAR_AUTH_CACHE_TTL: '1s', FLAG_SIDECAR_AUTH_GRACE: '1h' };
    const prefix = testPrefix();
    const a = await startFleetSidecar(upstream, runRedisUrl, prefix, env);
    await redisReady(a);
    expect((await get(a, projectOnePath, 'phx_reader')).status).toBe(200);
    const names = sharedNames(upstream, prefix, 'phx_reader');
    await waitFor(async () => (await shared(names.key, 'principal')) && (await shared(names.grant, 'grant')), 'records shared');
    const verifiedAt = Date.now();
    await waitFor(() => Date.now() > verifiedAt + 1100, 'the records past their TTL');

    await upstream.goDown();
    const b = await startFleetSidecar(upstream, runRedisUrl, prefix, env);
    await redisReady(b);
    expect((await get(b, projectOnePath, 'phx_reader')).status).toBe(200);
    const nobody = await get(b, projectOnePath, 'phx_second');
    expect(nobody.status).toBe(503);
    expect(nobody.detail).toMatch(/cannot be verified right now/);

    // Upstream back: a record past its TTL is not used while upstream can be asked.
    await upstream.comeBack();
    const c = await startFleetSidecar(upstream, runRedisUrl, prefix, env);
    await redisReady(c);
    const asked = requestsWith(upstream, 'phx_reader');
    expect((await get(c, projectOnePath, 'phx_reader')).status).toBe(200);
    expect(requestsWith(upstream, 'phx_reader')).toBe(asked + 2);
  });

  it('a key upstream stops accepting loses its shared record at once: B refuses it after A saw the 401', async () => {
    const { a, b, prefix } = await twoSidecars();
    expect((await get(a, projectOnePath, 'phx_revoked')).status).toBe(200);
    const names = sharedNames(upstream, prefix, 'phx_revoked');
    await waitFor(async () => (await shared(names.key, 'principal')) && (await shared(names.grant, 'grant')), 'records shared');

    upstream.revokeKey('phx_revoked');
    // A still trusts its own cached principal, but upstream now refuses the key on project 2.
    expect((await get(a, projectTwoPath, 'phx_revoked')).status).toBe(401);
    await waitFor(() => shared(names.key, 'unknown'), 'the shared principal replaced by the refusal');
    expect((await get(b, projectOnePath, 'phx_revoked')).status).toBe(401);
  });
});
