/**
 * kill -9 with events spooled: a real sidecar process accepts captures while its events URL is down, is SIGKILLed,
 * and a new process on the same snapshot dir, with the events URL up, delivers every accepted event (by uuid).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { startFakeUpstream } from '../support/fake-upstream.js';
import { freePort } from '../support/redis.js';
import { startProcess, stopAfterEach } from '../support/sidecar-process.js';
import { waitFor } from '../support/start-sidecar.js';
import { tempDir } from '../support/temp-dir.js';

const token = 'phc_spooltoken';
const started = stopAfterEach();

/** A local URL nothing listens on. */
const deadUrl = async (): Promise<string> => `http://127.0.0.1:${await freePort()}`;

const event = () => ({ event: 'spooled', distinct_id: 'user-1', uuid: randomUUID(), timestamp: '2026-01-02T03:04:05.000Z', properties: { n: 1 } });

describe('events spool across kill -9', () => {
  it('delivers every event accepted while upstream was down after a SIGKILL and a restart', async () => {
    const fake = started.upstream(await startFakeUpstream({ projects: { 42: { token, definitions: exampleDefinitions() } }, keys: [upstreamKey] }));
    const dir = tempDir('flag-sidecar-spool-');
    const env = {
      FLAG_SIDECAR_UPSTREAM_URL: fake.url,
      FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
      FLAG_SIDECAR_PROJECTS: `42:${token}`,
      FLAG_SIDECAR_SNAPSHOT_DIR: dir,
      FLAG_SIDECAR_EVENTS_LINGER: '20ms',
      FLAG_SIDECAR_LOG_LEVEL: 'info',
    };
    const first = startProcess({ ...env, FLAG_SIDECAR_EVENTS_URL: await deadUrl() });
    started.children.push(first);
    const { api } = await first.listening;
    const sent: string[] = [];
    // Concurrent requests share fsyncs; every 200 means on disk.
    for (let round = 0; round < 10; round += 1) {
      const answers = await Promise.all(
        Array.from({ length: 8 }, async () => {
          const batch = [event(), event(), event()];
          const response = await fetch(`${api}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: token, batch }) });
          if (response.status === 200) sent.push(...batch.map((e) => e.uuid));
          return response.status;
        }),
      );
      expect(answers.every((s) => s === 200)).toBe(true);
    }
    expect(sent.length).toBe(240);
    first.child.kill('SIGKILL');
    await first.exited;
    expect(fake.capture.events().length).toBe(0);

    const second = startProcess({ ...env, FLAG_SIDECAR_EVENTS_URL: fake.url });
    started.children.push(second);
    await second.listening;
    await waitFor(() => new Set(fake.capture.events().map((e) => String(e.uuid))).size >= sent.length, 'every spooled event upstream', 30_000);
    const delivered = fake.capture.events().map((e) => String(e.uuid));
    expect(new Set(delivered)).toEqual(new Set(sent));
    expect(second.logs()).toContain('replaying events a previous run spooled');
  }, 60_000);
});
