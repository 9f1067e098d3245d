import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { startFakeUpstream, type FakePersonalKey, type FakeUpstream } from '../support/fake-upstream.js';
import { startProcess } from '../support/sidecar-process.js';

// Memory under many distinct keys and URLs, against a real sidecar process on loopback (keep-alive, 8
// connections): 2,000 distinct personal keys and 10,000 distinct URLs. Every cache stays within its bound (the
// read-through cache's entries and bytes on /metrics; the principal cache evicts its oldest keys), metric label
// sets stay small and carry no raw path or key, and RSS is reported (not asserted tightly: it is the process's).
// Sizes: what is proven is that a bound holds however far the distinct inputs exceed it, so the counts are set
// against the bounds, and the bounds are set low (the settings allow 10 entries at least): 20 times more keys
// than the principal cache holds, 3 times more read-through URLs than the cache's entries (whose bytes bound
// binds first), and 10,000 URLs, 16 times the most metric series allowed, so that one series per path or key
// could not pass. These are the ratios of the earlier 20,000 keys and 100,000 URLs against ten times the bounds,
// which took 30-70 s of a CI pass (one request at a time costs the same at any scale).
const token = 'phc_memorytoken';
const keyCount = 2_000;
const urlCount = 10_000;
const readThroughUrls = 150;
const limits = { authMax: 100, cacheEntries: 50, cacheBytes: 26 * 1024 };
let upstream: FakeUpstream | null = null;
let proc: ReturnType<typeof startProcess> | null = null;

afterEach(async () => {
  if (proc && proc.child.exitCode === null) proc.child.kill('SIGKILL');
  await proc?.exited;
  proc = null;
  await upstream?.close();
  upstream = null;
});

const keyOf = (i: number): string => `phx_memory${String(i).padStart(6, '0')}abcdefghijklmnopqrstuvwxyz0123`;
const rssMiB = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

/** Run `count` requests, 8 at a time over keep-alive connections; returns the count of answers by status. */
async function run(dispatcher: Agent, count: number, make: (i: number) => { url: string; key: string }): Promise<Record<number, number>> {
  const statuses: Record<number, number> = {};
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < count) {
        const { url, key } = make(next++);
        const res = await request(url, { dispatcher, headers: { authorization: `Bearer ${key}` } });
        await res.body.dump();
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
      }
    }),
  );
  return statuses;
}

describe('memory bounds', () => {
  it(`${keyCount} distinct keys and ${urlCount} distinct URLs stay within the configured bounds`, async () => {
    const personalKeys: Record<string, FakePersonalKey> = {};
    for (let i = 0; i < keyCount; i++) personalKeys[keyOf(i)] = { scopes: ['feature_flag:read'], scoped_teams: [1] };
    const fake = (upstream = await startFakeUpstream({ projects: { 1: { token, definitions: exampleDefinitions() } }, keys: [upstreamKey], personalKeys }));
    proc = startProcess({
      FLAG_SIDECAR_UPSTREAM_URL: fake.url,
      FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
      FLAG_SIDECAR_PROJECTS: `1:${token}`,
      FLAG_SIDECAR_AUTH_CACHE_MAX: String(limits.authMax),
      FLAG_SIDECAR_CACHE_MAX_ENTRIES: String(limits.cacheEntries),
      FLAG_SIDECAR_CACHE_MAX_BYTES: String(limits.cacheBytes),
      FLAG_SIDECAR_LOG_LEVEL: 'info',
    });
    const { api, ops } = await proc.listening;
    const pid = proc.child.pid as number;
    const dispatcher = new Agent({ connections: 8, pipelining: 1 });
    const rss: Record<string, number> = { start: rssMiB(pid) };
    try {
      // 20,000 distinct keys, each introspected and verified once.
      const snapshot = `${api}/api/projects/1/feature_flags/local_evaluation/`;
      const byKey = await run(dispatcher, keyCount, (i) => ({ url: snapshot, key: keyOf(i) }));
      expect(byKey).toEqual({ 200: keyCount });
      rss.after_keys = rssMiB(pid);
      // The principal cache kept only the newest keys: the first one is asked about again.
      const asked = () => fake.introspections().filter((r) => r.headers.authorization === `Bearer ${keyOf(0)}`).length;
      expect(asked()).toBe(1);
      await run(dispatcher, 1, () => ({ url: snapshot, key: keyOf(0) }));
      expect(asked()).toBe(2);

      // 100,000 distinct URLs with one key: distinct queries on a snapshot route, paths no route matches,
      // templated paths (distinct ids), and read-through reads that each go upstream once.
      const key = keyOf(keyCount - 1);
      const byUrl = await run(dispatcher, urlCount, (i) => {
        if (i < readThroughUrls) return { url: `${api}/api/projects/1/feature_flags/?search=q${i}`, key };
        const kind = i % 3;
        if (kind === 0) return { url: `${snapshot}?send_cohorts&n=${i}`, key };
        if (kind === 1) return { url: `${api}/no/such/path/${i}`, key };
        return { url: `${api}/api/projects/1/endpoints/name-${i}/versions/${i}`, key };
      });
      expect(Object.keys(byUrl).every((s) => Number(s) < 500)).toBe(true);
      rss.after_urls = rssMiB(pid);

      const metrics = await (await fetch(`${ops}/metrics`)).text();
      const gauge = (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(metrics)?.[1]);
      expect(gauge('flag_sidecar_cache_entries')).toBeGreaterThan(0);
      expect(gauge('flag_sidecar_cache_entries')).toBeLessThanOrEqual(limits.cacheEntries);
      expect(gauge('flag_sidecar_cache_bytes')).toBeLessThanOrEqual(limits.cacheBytes);
      // Label sets: few, and none made of a path, a query or a key.
      const series = metrics.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
      expect(series.length).toBeLessThan(600);
      for (const line of series) expect(line).not.toMatch(/phx_|no\/such|name-\d|search=|n=\d/);
      console.log(`memory: RSS MiB ${JSON.stringify(rss)}; cache ${gauge('flag_sidecar_cache_entries')} entries, ${gauge('flag_sidecar_cache_bytes')} bytes; ${series.length} metric series; statuses ${JSON.stringify(byUrl)}`);
    } finally {
      await dispatcher.close();
    }
  }, 240_000); // room for a loaded two-core machine (it ran past 120 s while other test runs shared the cores)
});
