/**
 * The events spool in a real sidecar: captures are on disk (0600) before the 200 and counted in /status and the
 * metrics; a snapshot volume where the spool cannot be opened leaves the relay on memory alone, logged, not down;
 * a spool many times the queue bound is replayed with the queue held to its bound, each event delivered once.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { openSpool } from '../../src/events/spool.js';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { startFakeUpstream } from '../support/fake-upstream.js';
import { startTestSidecar, waitFor } from '../support/start-sidecar.js';
import { freePort } from '../support/redis.js';
import { tempDir } from '../support/temp-dir.js';

const token = 'phc_spoolint';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(dir: string, extra: Record<string, string> = {}) {
  const upstream = await startFakeUpstream({ projects: { 42: { token, definitions: exampleDefinitions() } }, keys: [upstreamKey] });
  cleanups.push(() => upstream.close());
  const sidecar = await startTestSidecar({
    FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
    FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
    FLAG_SIDECAR_PROJECTS: `42:${token}`,
    FLAG_SIDECAR_SNAPSHOT_DIR: dir,
    FLAG_SIDECAR_EVENTS_LINGER: '20ms',
    FLAG_SIDECAR_LOG_LEVEL: 'silent',
    FLAG_SIDECAR_SHUTDOWN_TIMEOUT: '1s',
    ...extra,
  });
  cleanups.push(() => sidecar.stop());
  await waitFor(() => sidecar.store.ready(), 'sidecar ready');
  return { upstream, sidecar };
}

const capture = (apiUrl: string, uuid: string) =>
  fetch(`${apiUrl}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: token, batch: [{ event: 'e', distinct_id: 'd', uuid }] }) });

describe('events spool', () => {
  it('has a request on disk (0600) when it answers 200, and shows the spool in /status', async () => {
    const dir = tempDir('spool-int-');
    const { upstream, sidecar } = await start(dir);
    await upstream.goDown();
    expect((await capture(sidecar.apiUrl, randomUUID())).status).toBe(200);
    const spoolDir = join(dir, 'events-spool');
    const segments = readdirSync(spoolDir).filter((n) => n.endsWith('.seg'));
    expect(segments.length).toBe(1);
    expect(statSync(join(spoolDir, segments[0] as string)).size).toBeGreaterThan(8);
    expect(statSync(join(spoolDir, segments[0] as string)).mode & 0o777).toBe(0o600);
    const status = (await (await fetch(`${sidecar.opsUrl}/status`)).json()) as { events: { spool: { bytes: number; max_bytes: number } } };
    expect(status.events.spool.bytes).toBeGreaterThan(8);
    expect(status.events.spool.max_bytes).toBe(256 * 1024 * 1024);
    expect(await (await fetch(`${sidecar.opsUrl}/metrics`)).text()).toMatch(/^flag_sidecar_events_spool_bytes [1-9]/m);
  });

  it('runs on memory alone when the spool cannot be opened', async () => {
    const dir = tempDir('spool-int-');
    writeFileSync(join(dir, 'events-spool'), 'not a directory');
    const { upstream, sidecar } = await start(dir);
    const uuid = randomUUID();
    expect((await capture(sidecar.apiUrl, uuid)).status).toBe(200);
    await waitFor(() => upstream.capture.events().some((e) => e.uuid === uuid), 'event upstream', 10_000);
    const status = (await (await fetch(`${sidecar.opsUrl}/status`)).json()) as { events: { spool: unknown } };
    expect(status.events.spool).toBeNull();
  });

  it('replays a spool many times the queue bound with the queue held to its bound, every event delivered once', async () => {
    const dir = tempDir('spool-int-');
    // What a previous run left: 6 MiB of records, 12 times the 512 KiB queue below.
    const previous = await openSpool({ dir: join(dir, 'events-spool'), maxBytes: 64 << 20, logger: createLogger('silent') });
    const uuids: string[] = [];
    const writes: Array<Promise<unknown> | null> = [];
    const pad = 'x'.repeat(250);
    while (previous.spool.bytes() < 6 << 20) {
      const events = Array.from({ length: 20 }, () => {
        const uuid = randomUUID();
        uuids.push(uuid);
        return Buffer.from(JSON.stringify({ event: 'e', distinct_id: 'd', uuid, properties: { pad } }));
      });
      writes.push(previous.spool.append({ token, events }));
    }
    expect((await Promise.all(writes)).every((ref) => ref !== null)).toBe(true);
    await previous.spool.close();

    const queueMax = 512 * 1024;
    type Status = { events: { queue: { bytes: number }; spool: { bytes: number; replay_bytes: number } } };
    const status = async (opsUrl: string): Promise<Status['events']> => ((await (await fetch(`${opsUrl}/status`)).json()) as Status).events;
    // Restarted with its events URL still down: the queue holds its bound and one part (1 MiB) at most, not the
    // spool; the rest stays on disk, counted against the spool's bound.
    const down = await start(dir, { FLAG_SIDECAR_EVENTS_QUEUE_MAX_BYTES: String(queueMax), FLAG_SIDECAR_EVENTS_URL: `http://127.0.0.1:${await freePort()}` });
    await waitFor(async () => (await status(down.sidecar.opsUrl)).queue.bytes > queueMax / 2, 'the queue filled from the spool');
    const held = await status(down.sidecar.opsUrl);
    expect(held.queue.bytes).toBeLessThanOrEqual(queueMax + (1 << 20));
    expect(held.spool.replay_bytes).toBeGreaterThan(3 << 20);
    expect(held.spool.bytes).toBeGreaterThanOrEqual(6 << 20);
    await down.sidecar.stop();
    // Restarted with upstream reachable: every spooled event is forwarded, each once.
    const { upstream, sidecar } = await start(dir, { FLAG_SIDECAR_EVENTS_QUEUE_MAX_BYTES: String(queueMax) });
    const mine = (): unknown[] => upstream.capture.events().map((e) => e.uuid);
    await waitFor(() => mine().length >= uuids.length, `${uuids.length} events upstream`, 20_000);
    await waitFor(async () => (await status(sidecar.opsUrl)).spool.replay_bytes === 0, 'replay finished');
    expect(new Set(mine()).size).toBe(mine().length);
    expect([...mine()].sort()).toEqual([...uuids].sort());
  });
});

