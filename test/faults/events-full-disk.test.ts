/**
 * A full disk under the events spool: a real sidecar process whose files cannot grow past 48 KiB (its file size
 * limit, set with prlimit: writes past it fail as on a full disk, short first, then EFBIG) takes captures from an
 * SDK-like client that sends each request again on 503, as the SDKs do. Every event answered 200 reaches upstream
 * exactly once, and none of a request answered 503 does (before, a 503'd request's events were forwarded anyway
 * and each retry relayed another copy).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { startFakeUpstream } from '../support/fake-upstream.js';
import { startProcess, stopAfterEach } from '../support/sidecar-process.js';
import { waitFor } from '../support/start-sidecar.js';
import { tempDir } from '../support/temp-dir.js';

const token = 'phc_fulldisk';
const started = stopAfterEach();

const event = () => ({ event: 'full-disk', distinct_id: 'user-1', uuid: randomUUID(), properties: { pad: 'x'.repeat(400) } });

describe('events spool on a full disk', () => {
  it('relays each accepted event once and none of a request answered 503', async () => {
    const fake = started.upstream(await startFakeUpstream({ projects: { 42: { token, definitions: exampleDefinitions() } }, keys: [upstreamKey] }));
    const env = {
      FLAG_SIDECAR_UPSTREAM_URL: fake.url,
      FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
      FLAG_SIDECAR_PROJECTS: `42:${token}`,
      FLAG_SIDECAR_SNAPSHOT_DIR: tempDir('flag-sidecar-full-disk-'),
      FLAG_SIDECAR_EVENTS_URL: fake.url,
      FLAG_SIDECAR_EVENTS_LINGER: '20ms',
      FLAG_SIDECAR_LOG_LEVEL: 'info',
    };
    const proc = startProcess(env);
    started.children.push(proc);
    const { api, ops } = await proc.listening;
    execFileSync('prlimit', ['--pid', String(proc.child.pid), '--fsize=49152']);

    const accepted: string[] = [];
    const refused: string[] = [];
    let answered503 = 0;
    for (let request = 0; request < 40; request += 1) {
      const batch = Array.from({ length: 10 }, event);
      const uuids = batch.map((e) => e.uuid);
      let status = 0;
      for (let attempt = 0; attempt < 3 && status !== 200; attempt += 1) {
        const response = await fetch(`${api}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: token, batch }) });
        await response.arrayBuffer();
        status = response.status;
        if (status === 503) answered503 += 1;
        else expect(status).toBe(200);
      }
      (status === 200 ? accepted : refused).push(...uuids);
    }
    // The limit was reached (the test tests something) and the sidecar kept accepting after it (a new segment).
    expect(answered503).toBeGreaterThan(0);
    expect(accepted.length).toBeGreaterThan(refused.length);

    type Events = { queue: { events: number }; spool: { replay_bytes: number } };
    const events = async (url: string): Promise<Events> => ((await (await fetch(`${url}/status`)).json()) as { events: Events }).events;
    const expectOnce = (): void => {
      const relayed = new Map<string, number>();
      for (const e of fake.capture.events()) relayed.set(String(e.uuid), (relayed.get(String(e.uuid)) ?? 0) + 1);
      expect(accepted.filter((uuid) => relayed.get(uuid) !== 1)).toEqual([]);
      expect(refused.filter((uuid) => relayed.has(uuid))).toEqual([]);
      expect(fake.capture.events().length).toBe(accepted.length);
    };
    await waitFor(async () => (await events(ops)).queue.events === 0 && fake.capture.events().length >= accepted.length, 'the accepted events forwarded', 20_000);
    expectOnce();
    expect(proc.logs()).toContain('events spool: cannot write; the requests are answered 503 and nothing of them is kept');

    // Stopped and started again on the same spool, without the limit: nothing more is relayed (no record of a 503'd
    // request was left to replay, and the forwarded ones are acked).
    proc.child.kill('SIGTERM');
    await proc.exited;
    const next = startProcess(env);
    started.children.push(next);
    const restarted = await next.listening;
    await waitFor(async () => {
      const status = await events(restarted.ops);
      return status.queue.events === 0 && status.spool.replay_bytes === 0;
    }, 'the spool replayed', 20_000);
    expectOnce();
  }, 60_000);
});
