/**
 * The capture memory budget (FLAG_SIDECAR_EVENTS_INTAKE_MAX_BYTES), at a reduced scale: a real sidecar process
 * with a 1 MiB budget. A large batch whose body is still arriving holds the budget; a request arriving meanwhile is
 * not read: it waits, then gets 503 with Retry-After (counted, on /status, logged), and none of its events is
 * relayed; once the large batch is in, the same request sent again is taken. (The full-scale figure, 16 batches of
 * 19 MB at once, is test/bench/capture-memory.ts's; docs/reliability.md.)
 */
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { startFakeUpstream } from '../support/fake-upstream.js';
import { startProcess, stopAfterEach } from '../support/sidecar-process.js';
import { waitFor } from '../support/start-sidecar.js';

const token = 'phc_budget';
const started = stopAfterEach();

const event = (pad = 10) => ({ event: 'budget', distinct_id: 'user-1', uuid: randomUUID(), properties: { pad: 'x'.repeat(pad) } });

/** A sidecar with a 1 MiB capture budget, relaying to the fake upstream. */
async function start() {
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
  return { fake, proc, api, ops, url: new URL(api) };
}

/** A connection that has sent the headers of a POST /batch/ of `body` and the first `sent` bytes of it. */
async function halfSent(url: URL, body: Buffer, sent: number) {
  const socket = connect(Number(url.port), url.hostname);
  await once(socket, 'connect');
  socket.write(`POST /batch/ HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`);
  socket.write(body.subarray(0, sent));
  return socket;
}

type Intake = { bytes: number; waiting: number; max_bytes: number };
const intakeOf = async (ops: string): Promise<Intake> => ((await (await fetch(`${ops}/status`)).json()) as { events: { intake: Intake } }).events.intake;

describe('capture memory budget', () => {
  it('answers 503 with Retry-After, reading nothing, while a large body holds the budget; takes the request once it is free', async () => {
    const { fake, proc, api, ops, url } = await start();

    // A 1.2 MB batch (its share: its body, larger than the budget, so it is taken alone), half sent.
    const large = Array.from({ length: 300 }, () => event(4000));
    const body = Buffer.from(JSON.stringify({ api_key: token, batch: large }));
    const socket = await halfSent(url, body, body.length / 2);
    const intake = () => intakeOf(ops);
    await waitFor(async () => (await intake()).bytes >= body.length, 'the large batch holding the budget', 10_000);

    const small = [event(), event()];
    const send = () => fetch(`${api}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: token, batch: small }) });
    const refused = await send();
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(await refused.text()).toBe('transient error, please retry');
    const metrics = await (await fetch(`${ops}/metrics`)).text();
    expect(metrics).toMatch(/flag_sidecar_events_refused_total\{reason="busy"\} 1\b/);
    expect(metrics).toMatch(/flag_sidecar_events_intake_bytes [1-9]/);
    expect(await intake()).toEqual({ bytes: body.length, waiting: 0, max_bytes: 1024 * 1024 });
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

  it('counts a compressed body and its decoded text both: past the budget, 503 and nothing kept', async () => {
    const { fake, api, ops, url } = await start();
    // 600 KB half sent: its share is its body.
    const held = Buffer.from(JSON.stringify({ api_key: token, batch: Array.from({ length: 150 }, () => event(4000)) }));
    const socket = await halfSent(url, held, 1000);
    await waitFor(async () => (await intakeOf(ops)).bytes === held.length, 'the first batch holding its share', 10_000);
    // A few KB of gzip that decode to 600 KB: the body fits the budget beside the first, the decoded text does not.
    const inflating = Array.from({ length: 150 }, () => event(4000));
    const gzip = gzipSync(JSON.stringify({ api_key: token, batch: inflating }));
    expect(gzip.length).toBeLessThan(64 * 1024);
    const refused = await fetch(`${api}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzip });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(await intakeOf(ops)).toMatchObject({ bytes: held.length, waiting: 0 });
    // The first batch's client goes away mid-body: its share is given back.
    socket.destroy();
    await waitFor(async () => (await intakeOf(ops)).bytes === 0, 'the abandoned batch giving its share back', 10_000);
    const taken = await fetch(`${api}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzip });
    expect(taken.status).toBe(200);
    await waitFor(() => fake.capture.events().length >= inflating.length, 'the batch relayed once taken', 10_000);
    expect(fake.capture.events().map((e) => String(e.uuid)).sort()).toEqual(inflating.map((e) => e.uuid).sort());
  }, 30_000);
});
