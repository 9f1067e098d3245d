/**
 * The capture memory budget (FLAG_SIDECAR_EVENTS_INTAKE_MAX_BYTES), at a reduced scale: a real sidecar process
 * with a 1 MiB budget. A large batch whose body is still arriving holds the budget; a request arriving meanwhile is
 * not read: it waits, then gets 503 with Retry-After (counted, on /status, logged), and none of its events is
 * relayed; once the large batch is in, the same request sent again is taken. (The full-scale figure, 16 batches of
 * 19 MB at once, is test/bench/capture-memory.ts's; docs/reliability.md.)
 */
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { startFakeUpstream } from '../support/fake-upstream.js';
import { startProcess, stopAfterEach } from '../support/sidecar-process.js';
import { waitFor } from '../support/start-sidecar.js';

const token = 'phc_budget';
const started = stopAfterEach();

const event = (pad = 10) => ({ event: 'budget', distinct_id: 'user-1', uuid: randomUUID(), properties: { pad: 'x'.repeat(pad) } });

describe('capture memory budget', () => {
  it('answers 503 with Retry-After, reading nothing, while a large body holds the budget; takes the request once it is free', async () => {
    const fake = started.upstream(await startFakeUpstream({ projects: { 42: { token, definitions: exampleDefinitions() } }, keys: [upstreamKey] }));
    const proc = startProcess({
      FLAG_SIDECAR_UPSTREAM_URL: fake.url,
      FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
      FLAG_SIDECAR_PROJECTS: `42:${token}`,
      FLAG_SIDECAR_EVENTS_URL: fake.url,
      FLAG_SIDECAR_EVENTS_LINGER: '20ms',
      FLAG_SIDECAR_EVENTS_INTAKE_MAX_BYTES: '1MiB',
      FLAG_SIDECAR_LOG_LEVEL: 'info',
    });
    started.children.push(proc);
    const { api, ops } = await proc.listening;
    const url = new URL(api);

    // A 400 KB batch (a share of 1.2 MB: larger than the budget, so it is taken alone), half sent.
    const large = Array.from({ length: 100 }, () => event(4000));
    const body = Buffer.from(JSON.stringify({ api_key: token, batch: large }));
    const socket = connect(Number(url.port), url.hostname);
    await once(socket, 'connect');
    socket.write(`POST /batch/ HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`);
    socket.write(body.subarray(0, body.length / 2));
    type Intake = { bytes: number; waiting: number; max_bytes: number };
    const intake = async (): Promise<Intake> => ((await (await fetch(`${ops}/status`)).json()) as { events: { intake: Intake } }).events.intake;
    await waitFor(async () => (await intake()).bytes >= 3 * body.length, 'the large batch holding the budget', 10_000);

    const small = [event(), event()];
    const send = () => fetch(`${api}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: token, batch: small }) });
    const refused = await send();
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(await refused.text()).toBe('transient error, please retry');
    const metrics = await (await fetch(`${ops}/metrics`)).text();
    expect(metrics).toMatch(/flag_sidecar_events_refused_total\{reason="busy"\} 1\b/);
    expect(metrics).toMatch(/flag_sidecar_events_intake_bytes [1-9]/);
    expect(await intake()).toEqual({ bytes: 3 * body.length, waiting: 0, max_bytes: 1024 * 1024 });
    expect(proc.logs()).toContain('capture memory budget (FLAG_SIDECAR_EVENTS_INTAKE_MAX_BYTES) is taken');

    // The rest of the large batch: it is taken, the budget is free again, and the small request is taken when sent again.
    const answer = once(socket, 'data');
    socket.write(body.subarray(body.length / 2));
    expect(String((await answer)[0])).toMatch(/^HTTP\/1.1 200/);
    socket.destroy();
    expect((await send()).status).toBe(200);
    expect((await intake()).bytes).toBe(0);
    await waitFor(() => fake.capture.events().length >= large.length + small.length, 'every accepted event relayed', 10_000);
    const relayed = fake.capture.events().map((e) => String(e.uuid));
    expect(relayed.sort()).toEqual([...large, ...small].map((e) => e.uuid).sort());
  }, 30_000);
});
