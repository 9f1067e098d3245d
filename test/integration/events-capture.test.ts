/**
 * The capture paths through a real sidecar in front of the fake upstream, for what upstream's rust/capture does
 * (docs/api-compatibility.md, "Capture, as rust/capture answers"): its decoded-size limit (100 MB) within the
 * queue's bound, historical_migration batches, distinct_id and UTF-8 refusals, /engage's $identify, GET ?data=,
 * OPTIONS and CORS, ?beacon=1, lz64 bodies.
 */
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import LZString from 'lz-string';
import { describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { startRelaySidecar } from '../support/relay-env.js';
import { waitFor } from '../support/start-sidecar.js';

const token = 'phc_capturetoken';
const start = (extra: Record<string, string> = {}) => startRelaySidecar(token, { FLAG_SIDECAR_LOG_LEVEL: 'error', ...extra });

const event = (extra: Record<string, unknown> = {}) => ({ event: 'clicked', distinct_id: 'user-1', uuid: randomUUID(), timestamp: '2026-01-02T03:04:05.000Z', properties: { $lib: 'test' }, ...extra });
const json = { 'content-type': 'application/json' };
const form = { 'content-type': 'application/x-www-form-urlencoded' };

async function send(url: string, init: RequestInit = {}) {
  const response = await fetch(url, init);
  return { status: response.status, text: await response.text(), headers: response.headers };
}
const post = (url: string, body: string | Uint8Array, headers: Record<string, string> = json) => send(url, { method: 'POST', body, headers });
const padded = (bytes: number) => event({ properties: { $lib: 'test', pad: 'x'.repeat(bytes) } });
const arrived = (upstream: FakeUpstream, uuid: unknown) => waitFor(() => upstream.capture.events().some((e) => e.uuid === uuid), `event ${String(uuid)} upstream`, 15_000);

describe('capture, as rust/capture answers', () => {
  it('takes a body that inflates past the body limit, up to the sidecar\'s 32 MiB bound (3 KB → 3 MB on /e, 60 KB → 25 MB on /batch)', async () => {
    const { upstream, sidecar } = await start({ FLAG_SIDECAR_EVENTS_QUEUE_MAX_BYTES: '128MiB' });
    // Events of 100 KB: upstream's per-event limit is its Kafka producer's message size (1,000,000 bytes by default).
    const events = (count: number) => Array.from({ length: count }, () => padded(100 * 1024));
    const small = events(30);
    const smallBody = gzipSync(JSON.stringify(small.map((e) => ({ ...e, api_key: token }))));
    expect(smallBody.length).toBeLessThan(8 * 1024);
    expect(await post(`${sidecar.apiUrl}/e/?compression=gzip-js`, smallBody)).toMatchObject({ status: 200, text: '{"status":1}' });
    const large = events(256);
    const largeBody = gzipSync(JSON.stringify({ api_key: token, batch: large }));
    expect(largeBody.length).toBeLessThan(64 * 1024);
    expect((await post(`${sidecar.apiUrl}/batch/`, largeBody, { ...json, 'content-encoding': 'gzip' })).status).toBe(200);
    await waitFor(() => upstream.capture.events().length === small.length + large.length, 'every event upstream', 30_000);
    // Past 32 MiB decoded: upstream's 413 for its own (100 MB) limit, naming the sidecar's, so one request's memory stays bounded.
    const past = gzipSync(JSON.stringify({ api_key: token, batch: [padded(33 * 1024 * 1024)] }));
    expect(await post(`${sidecar.apiUrl}/batch/`, past, json)).toMatchObject({ status: 413, text: 'maximum event size exceeded: Decompressed payload would exceed 33554432 bytes' });
  }, 60_000);

  it('answers 503 + Retry-After (the SDK retries), not 400, for a decoded body larger than the queue has room for', async () => {
    const { upstream, sidecar } = await start({ FLAG_SIDECAR_EVENTS_QUEUE_MAX_BYTES: '1MiB' });
    const body = gzipSync(JSON.stringify({ api_key: token, batch: [padded(3 * 1024 * 1024)] }));
    const response = await post(`${sidecar.apiUrl}/batch/`, body);
    expect(response).toMatchObject({ status: 503, text: 'transient error, please retry' });
    expect(response.headers.get('retry-after')).toBe('5');
    expect(upstream.capture.batches()).toBe(0);
  });

  it('forwards a historical_migration batch in batches of its own that carry the flag', async () => {
    const { upstream, sidecar } = await start();
    const backfill = [event(), event()];
    const live = event();
    expect((await post(`${sidecar.apiUrl}/batch/`, JSON.stringify({ api_key: token, historical_migration: true, batch: backfill }))).status).toBe(200);
    expect((await post(`${sidecar.apiUrl}/batch/`, JSON.stringify({ api_key: token, batch: [live] }))).status).toBe(200);
    await waitFor(() => upstream.capture.events().length === 3, 'three events upstream', 10_000);
    const historical = new Map(upstream.capture.events().map((e) => [e.uuid, e.historical]));
    expect(historical).toEqual(new Map([[backfill[0]?.uuid, true], [backfill[1]?.uuid, true], [live.uuid, false]]));
  });

  it.each([
    ['an event without a distinct_id', JSON.stringify({ api_key: token, batch: [event(), event({ distinct_id: undefined })] }), 'event submitted without a distinct_id'],
    ['an empty distinct_id', JSON.stringify({ api_key: token, batch: [event({ distinct_id: '' })] }), 'event submitted without a distinct_id'],
    ['text that is not UTF-8', Buffer.concat([Buffer.from(`{"api_key":"${token}","batch":[{"event":"e","distinct_id":"`), Buffer.from([0xff, 0xfe]), Buffer.from('"}]}')]), 'failed to decode request: invalid UTF8 in request payload'],
  ])('refuses %s with upstream 400 at once, forwarding nothing', async (_what, body, text) => {
    const { upstream, sidecar } = await start();
    expect(await post(`${sidecar.apiUrl}/batch/`, body)).toMatchObject({ status: 400, text });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(upstream.capture.batches()).toBe(0);
  });

  it('makes an /engage update without an event name an $identify', async () => {
    const { upstream, sidecar } = await start();
    const uuid = randomUUID();
    const update = { $set: { plan: 'pro' }, distinct_id: 'user-9', uuid, api_key: token };
    expect((await post(`${sidecar.apiUrl}/engage/`, JSON.stringify(update))).status).toBe(200);
    await arrived(upstream, uuid);
    expect(upstream.capture.events().find((e) => e.uuid === uuid)?.raw).toEqual({ event: '$identify', ...update });
  });

  it('answers GET ?data=, OPTIONS and CORS as upstream does', async () => {
    const { upstream, sidecar } = await start();
    const one = event({ api_key: token });
    const data = encodeURIComponent(Buffer.from(JSON.stringify(one)).toString('base64'));
    const got = await send(`${sidecar.apiUrl}/e/?data=${data}&compression=base64`, { headers: { origin: 'https://app.example' } });
    expect(got).toMatchObject({ status: 200, text: '{"status":1}' });
    expect(got.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(got.headers.get('access-control-allow-credentials')).toBe('true');
    await arrived(upstream, one.uuid);
    const preflight = await send(`${sidecar.apiUrl}/i/v0/e/`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    expect(preflight).toMatchObject({ status: 200, text: '' });
    expect(Object.fromEntries([...preflight.headers].filter(([name]) => name.startsWith('access-control-')))).toEqual({
      'access-control-allow-credentials': 'true',
      'access-control-allow-headers': 'content-type',
      'access-control-allow-methods': 'GET,POST,OPTIONS',
      'access-control-allow-origin': 'https://app.example',
    });
  });

  it('answers ?beacon=1 with 204 and no body', async () => {
    const { upstream, sidecar } = await start();
    const one = event({ api_key: token });
    const response = await post(`${sidecar.apiUrl}/e/?beacon=1`, JSON.stringify(one));
    expect(response).toMatchObject({ status: 204, text: '' });
    await arrived(upstream, one.uuid);
  });

  it('decodes lz64 bodies (posthog-js compression=lz64)', async () => {
    const { upstream, sidecar } = await start();
    const batch = [event({ api_key: token }), event({ api_key: token, properties: { emoji: '🦔' } })];
    const body = `data=${encodeURIComponent(LZString.compressToBase64(JSON.stringify(batch)))}&compression=lz64`;
    expect(await post(`${sidecar.apiUrl}/e/`, body, form)).toMatchObject({ status: 200, text: '{"status":1}' });
    await arrived(upstream, batch[1]?.uuid);
    expect(upstream.capture.events().find((e) => e.uuid === batch[1]?.uuid)?.properties).toEqual({ emoji: '🦔' });
  });
});
