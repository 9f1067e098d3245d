/**
 * The events relay through a real sidecar in front of the fake upstream: posthog-node with host = the sidecar
 * (captures and flag events), the capture encodings, upstream's refusals, an upstream outage, a full queue.
 */
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { PostHog } from 'posthog-node';
import { afterEach, describe, expect, it } from 'vitest';
import { upstreamKey } from '../support/fixtures.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { startRelaySidecar } from '../support/relay-env.js';
import { startTestSidecar, waitFor } from '../support/start-sidecar.js';

const token = 'phc_eventstoken';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const start = (extra: Record<string, string> = {}) => startRelaySidecar(token, extra);

const event = (name = 'clicked', uuid = randomUUID()) => ({ event: name, distinct_id: 'user-1', uuid, timestamp: '2026-01-02T03:04:05.000Z', properties: { $lib: 'test', n: 1 } });

async function post(url: string, body: string | Uint8Array, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  const response = await fetch(url, { method: 'POST', body, headers });
  return { status: response.status, text: await response.text(), retryAfter: response.headers.get('retry-after') };
}

const uuidsOf = (upstream: FakeUpstream): string[] => upstream.capture.events().map((e) => String(e.uuid));

describe('events relay', () => {
  it('relays every posthog-node capture and $feature_flag_called event exactly once, untouched', async () => {
    const { upstream, sidecar } = await start();
    const client = new PostHog(token, { host: sidecar.apiUrl, personalApiKey: upstreamKey, featureFlagsPollingInterval: 60_000, flushAt: 50, flushInterval: 50 });
    const sent: string[] = [];
    for (let i = 0; i < 1000; i++) {
      const uuid = randomUUID();
      sent.push(uuid);
      client.capture({ distinctId: `user-${i % 37}`, event: 'relay test', properties: { i }, uuid });
    }
    for (let i = 0; i < 20; i++) await client.getFeatureFlag('beta-feature', `flag-user-${i}`);
    await client.shutdown(20_000);
    await waitFor(() => upstream.capture.events().filter((e) => e.event === 'relay test').length >= 1000, '1000 events upstream', 30_000);
    const captured = upstream.capture.events().filter((e) => e.event === 'relay test');
    expect(new Set(captured.map((e) => e.uuid)).size).toBe(1000);
    expect(captured.length).toBe(1000);
    expect(new Set(captured.map((e) => String(e.uuid)))).toEqual(new Set(sent));
    expect(captured.every((e) => e.token === token && typeof e.timestamp === 'string')).toBe(true);
    await waitFor(() => upstream.capture.events().some((e) => e.event === '$feature_flag_called'), 'flag events', 10_000);
    const flagEvents = upstream.capture.events().filter((e) => e.event === '$feature_flag_called');
    expect(new Set(flagEvents.map((e) => e.uuid)).size).toBe(flagEvents.length);
  }, 60_000);

  it('takes plain, gzip and form/base64 bodies on every capture path and keeps each event as sent', async () => {
    const { upstream, sidecar } = await start();
    const one = event();
    const two = event();
    const three = event();
    const four = event();
    expect(await post(`${sidecar.apiUrl}/batch/`, JSON.stringify({ api_key: token, batch: [one] }))).toMatchObject({ status: 200, text: '{"status":1}' });
    expect((await post(`${sidecar.apiUrl}/e?compression=gzip-js`, gzipSync(JSON.stringify([{ ...two, properties: { ...two.properties, token } }])))).status).toBe(200);
    expect((await post(`${sidecar.apiUrl}/i/v0/e/`, gzipSync(JSON.stringify({ ...three, api_key: token })), { 'content-type': 'application/json', 'content-encoding': 'gzip' })).status).toBe(200);
    const form = `data=${encodeURIComponent(Buffer.from(JSON.stringify({ ...four, api_key: token })).toString('base64'))}`;
    expect((await post(`${sidecar.apiUrl}/capture`, form, { 'content-type': 'application/x-www-form-urlencoded' })).status).toBe(200);
    await waitFor(() => upstream.capture.events().length === 4, 'four events upstream', 10_000);
    const byUuid = new Map(upstream.capture.events().map((e) => [e.uuid, e.raw]));
    expect(byUuid.get(one.uuid)).toEqual(one);
    expect(byUuid.get(four.uuid)).toEqual({ ...four, api_key: token });
  });

  it("answers upstream's refusals: 400 for a body it cannot use, 401 without a relayed token, 413 past its 20 MB body limit", async () => {
    const { upstream, sidecar } = await start();
    const cases: Array<[string | Uint8Array, number, string]> = [
      ['{not json', 400, 'failed to parse request'],
      [JSON.stringify({ api_key: token, batch: [] }), 400, 'request holds no event'],
      [JSON.stringify({ api_key: token, batch: [{ distinct_id: 'x' }] }), 400, 'failed to hydrate events from request: non-engage request missing event name attribute'],
      [JSON.stringify({ api_key: token, batch: [{ ...event(), event: '' }] }), 400, 'event submitted with an empty event name'],
      [JSON.stringify([event()]), 401, 'event submitted without an api_key'],
      [JSON.stringify({ api_key: 'phc_someoneelse', batch: [event()] }), 401, 'API key is not valid'],
    ];
    for (const [body, status, text] of cases) {
      const response = await post(`${sidecar.apiUrl}/batch`, body);
      expect(response.status, text).toBe(status);
      expect(response.text).toContain(text);
    }
    const gzipped = await post(`${sidecar.apiUrl}/e/?compression=gzip-js`, Buffer.from('not gzip at all'));
    expect(gzipped).toMatchObject({ status: 400, text: 'failed to decode request: invalid GZIP data' });
    expect(await post(`${sidecar.apiUrl}/e/`, 'x'.repeat(20 * 1024 * 1024 + 1))).toMatchObject({ status: 413, text: 'maximum event size exceeded: Request body exceeds limit of 20971520 bytes' });
    expect(upstream.capture.batches()).toBe(0);
  });

  it('delivers everything accepted during an upstream outage once upstream is back', async () => {
    const { upstream, sidecar } = await start();
    await upstream.goDown();
    // The outage lasts until the relay has failed three deliveries and accepted 20 events (~1 s of them): each
    // failed request doubles the forwarder's backoff (0.5 s, 1 s, 2 s, … up to 10 s), so ending it there bounds the
    // wait once upstream is back to 2 s; the fixed 5 s outage this was let it grow to 8-10 s (a 13 s test).
    const failedDeliveries = async (): Promise<number> =>
      [...(await sidecar.registry.metrics()).matchAll(/^flag_sidecar_upstream_requests_total\{operation="events_batch",status="(\w+)"\} (\d+)/gm)]
        .filter((m) => !(m[1] as string).startsWith('2'))
        .reduce((sum, m) => sum + Number(m[2]), 0);
    const sent: string[] = [];
    while (sent.length < 20 || (await failedDeliveries()) < 3) {
      const batch = [event(), event()];
      sent.push(...batch.map((e) => e.uuid));
      expect((await post(`${sidecar.apiUrl}/batch/`, JSON.stringify({ api_key: token, batch }))).status).toBe(200);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(upstream.capture.events().length).toBe(0);
    await upstream.comeBack();
    await waitFor(() => upstream.capture.events().length >= sent.length, 'all events after the outage', 45_000);
    expect(uuidsOf(upstream).sort()).toEqual([...sent].sort());
  }, 60_000);

  it('answers 503 with Retry-After when the queue is full, and loses nothing it accepted', async () => {
    const { upstream, sidecar } = await start({ FLAG_SIDECAR_EVENTS_QUEUE_MAX_EVENTS: '50' });
    await upstream.goDown();
    const accepted: string[] = [];
    let refused = 0;
    for (let i = 0; i < 5; i++) {
      const batch = Array.from({ length: 20 }, () => event());
      const response = await post(`${sidecar.apiUrl}/batch/`, JSON.stringify({ api_key: token, batch }));
      if (response.status === 200) accepted.push(...batch.map((e) => e.uuid));
      else {
        expect(response.status).toBe(503);
        expect(response.retryAfter).not.toBeNull();
        refused += 1;
      }
    }
    expect(accepted.length).toBe(40);
    expect(refused).toBe(3);
    await upstream.comeBack();
    await waitFor(() => upstream.capture.events().length >= 40, 'accepted events after the outage', 45_000);
    expect(uuidsOf(upstream).sort()).toEqual([...accepted].sort());
  }, 60_000);

  it('sends a batch upstream refuses (400) again in halves and drops only the event it refuses alone', async () => {
    const { upstream, sidecar } = await start();
    upstream.capture.force({ status: 400 }, { status: 400 });
    const batch = [event(), event()];
    expect((await post(`${sidecar.apiUrl}/batch/`, JSON.stringify({ api_key: token, batch }))).status).toBe(200);
    await waitFor(() => upstream.capture.batches() >= 3, 'the halves', 10_000);
    await waitFor(() => upstream.capture.events().length === 1, 'the one event upstream took', 10_000);
    expect(uuidsOf(upstream)).toEqual([batch[1]?.uuid]);
    const metrics = await (await fetch(`${sidecar.opsUrl}/metrics`)).text();
    expect(metrics).toMatch(/flag_sidecar_events_dropped_total\{reason="status_400"\} 1/);
    const status = (await (await fetch(`${sidecar.opsUrl}/status`)).json()) as { events: { queue: { events: number } } };
    expect(status.events.queue.events).toBe(0);
  });

  it('refuses captures with 503 and says why when offline without an events URL', async () => {
    const sidecar = await startTestSidecar({ FLAG_SIDECAR_LOG_LEVEL: 'warn' });
    cleanups.push(() => sidecar.stop());
    const response = await post(`${sidecar.apiUrl}/batch/`, JSON.stringify({ api_key: token, batch: [event()] }));
    expect(response).toMatchObject({ status: 503, text: 'events relay is off: offline sidecar without FLAG_SIDECAR_EVENTS_URL' });
  });

  it('forwards what is queued when stopped (SIGTERM), without waiting for the linger', async () => {
    const { upstream, sidecar } = await start({ FLAG_SIDECAR_EVENTS_LINGER: '10s' });
    const batch = [event(), event(), event()];
    expect((await post(`${sidecar.apiUrl}/batch/`, JSON.stringify({ api_key: token, batch }))).status).toBe(200);
    expect(upstream.capture.events().length).toBe(0);
    await sidecar.stop();
    expect(uuidsOf(upstream).sort()).toEqual(batch.map((e) => e.uuid).sort());
  });
});
