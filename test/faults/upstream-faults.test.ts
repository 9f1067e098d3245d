import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bearer, get, upstreamKey } from '../support/fixtures.js';
import type { FakeMode, FakeUpstream } from '../support/fake-upstream.js';
import { pollingEnv, projectOneToken as token, snapshotPath, startProjectOneUpstream, status, withFlag } from '../support/polling-env.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

// Every upstream fault, in one table, against the three ways the sidecar uses upstream:
// - the poller: the last good snapshot keeps being served, /status says stale with the outcome and error, the
//   poll metric counts it, and the sidecar catches up when upstream heals;
// - a read-through read (cold cache) and a forwarded write: the caller gets upstream's own answer or an
//   upstream-style `{type, code, detail, attr}` 502/504, never a hang (the vitest timeout catches one);
// - the evaluation endpoint: flags it can decide are answered, the rest come back as errors; a request for a
//   project it does not serve, forwarded whole, gets upstream's status or a 502/504.
let upstream: FakeUpstream;
let sidecar: TestSidecar | null = null;
const key = 'phx_faults_writer';

beforeEach(async () => {
  upstream = await startProjectOneUpstream({ [key]: { scopes: ['*'] } });
});
afterEach(async () => {
  await sidecar?.stop();
  sidecar = null;
  await upstream.close();
});

const start = () =>
  startTestSidecar(
    { ...pollingEnv(upstream), FLAG_SIDECAR_UPSTREAM_MAX_BODY: '256KiB', FLAG_SIDECAR_WRITE_SYNC_TIMEOUT: '300ms' },
    { random: () => 0.5 },
  );

const serverError = '{"type":"server_error","code":"error","detail":"A server error occurred.","attr":null}';
const throttled = '{"type":"throttled_error","code":"throttled","detail":"Request was throttled.","attr":null}';

/**
 * What a caller of a read-through read or a forwarded write gets: a status and the body's `code` (or the exact
 * body); for a write, the `status` label it is counted under in flag_sidecar_forwarded_writes_total.
 */
type Answer = { status: number; code?: string; body?: string; retryAfter?: string; metric?: string };

interface Fault {
  name: string;
  apply: (u: FakeUpstream) => Promise<void> | void;
  heal: (u: FakeUpstream) => Promise<void> | void;
  /** The poll outcome reported, and the start of its error text when it has one. */
  poll: { outcome: string; error?: RegExp; metricStatus?: string };
  read: Answer;
  write: Answer;
  /**
   * `POST /flags?v=2`: with the project's token, whether flags left to upstream come back as errors (the rest are
   * answered locally); with a token the sidecar does not serve (the whole request forwarded), the status.
   * The fake's /flags is spoiled only by the faults that hit every path.
   */
  flags: { errors: boolean; unknownToken: number };
  /** Seconds the poller must wait before asking again (Retry-After honoured). */
  retryAfter?: number;
}

const mode = (m: FakeMode) => ({ apply: (u: FakeUpstream) => u.setMode(m), heal: (u: FakeUpstream) => u.setMode({ kind: 'normal' }) });

const faults: Fault[] = [
  {
    name: 'down (connection refused)',
    apply: (u) => u.goDown(),
    heal: (u) => u.comeBack(),
    poll: { outcome: 'failed', error: /connect \(ECONNREFUSED\)/ },
    read: { status: 502, code: 'upstream_unavailable' },
    write: { status: 502, code: 'upstream_unavailable', metric: 'connect' },
    flags: { errors: true, unknownToken: 502 },
  },
  {
    name: 'slow past FLAG_SIDECAR_UPSTREAM_TIMEOUT',
    ...mode({ kind: 'slow', delayMs: 1500 }),
    poll: { outcome: 'failed', error: /timeout/, metricStatus: 'timeout' },
    read: { status: 504, code: 'upstream_timeout' },
    write: { status: 504, code: 'upstream_timeout', metric: 'timeout' },
    flags: { errors: true, unknownToken: 504 },
  },
  {
    name: '500',
    ...mode({ kind: 'status', status: 500, body: serverError }),
    poll: { outcome: 'failed', metricStatus: '500' },
    read: { status: 500, body: serverError },
    write: { status: 500, body: serverError, metric: '500' },
    flags: { errors: true, unknownToken: 500 },
  },
  {
    name: '429 with Retry-After',
    ...mode({ kind: 'status', status: 429, body: throttled, headers: { 'retry-after': '2' } }),
    poll: { outcome: 'refused', metricStatus: '429' },
    read: { status: 429, body: throttled, retryAfter: '2' },
    write: { status: 429, body: throttled, retryAfter: '2', metric: '429' },
    flags: { errors: true, unknownToken: 429 },
    retryAfter: 2,
  },
  {
    name: '403',
    ...mode({ kind: 'status', status: 403, body: '{}' }),
    poll: { outcome: 'refused', metricStatus: '403' },
    read: { status: 403, body: '{}' },
    write: { status: 403, body: '{}', metric: '403' },
    flags: { errors: true, unknownToken: 403 },
  },
  {
    name: 'a reset connection',
    ...mode({ kind: 'reset' }),
    poll: { outcome: 'failed' },
    read: { status: 502, code: 'upstream_unavailable' },
    write: { status: 502, code: 'upstream_unavailable', metric: 'reset' },
    flags: { errors: true, unknownToken: 502 },
  },
  {
    name: 'a truncated body',
    ...mode({ kind: 'truncated' }),
    poll: { outcome: 'failed' },
    read: { status: 502, code: 'upstream_unavailable' },
    write: { status: 502, code: 'upstream_unavailable', metric: 'reset' },
    flags: { errors: false, unknownToken: 401 },
  },
  {
    // Upstream's bytes are passed on as they came (the sidecar is no judge of a read's body); the poller refuses them.
    name: 'a garbage body',
    ...mode({ kind: 'garbage' }),
    poll: { outcome: 'invalid' },
    read: { status: 200, body: '<html>upstream proxy error</html>' },
    write: { status: 200, body: '<html>upstream proxy error</html>', metric: '200' },
    flags: { errors: false, unknownToken: 401 },
  },
  {
    name: 'a body that is JSON but not flag definitions',
    ...mode({ kind: 'invalid' }),
    poll: { outcome: 'invalid' },
    read: { status: 200 },
    write: { status: 200, metric: '200' },
    flags: { errors: false, unknownToken: 401 },
  },
  {
    name: 'a huge body (over FLAG_SIDECAR_UPSTREAM_MAX_BODY)',
    ...mode({ kind: 'huge', bytes: 1024 * 1024 }),
    poll: { outcome: 'failed', error: /^too_large/, metricStatus: 'too_large' },
    read: { status: 502, code: 'upstream_unavailable' },
    write: { status: 502, code: 'upstream_unavailable', metric: 'too_large' },
    flags: { errors: true, unknownToken: 502 },
  },
];

async function expectAnswer(res: Response, expected: Answer, what: string): Promise<void> {
  const text = await res.text();
  expect(res.status, `${what}: ${text}`).toBe(expected.status);
  if (expected.body !== undefined) expect(text, what).toBe(expected.body);
  if (expected.code !== undefined) {
    const body = JSON.parse(text) as Record<string, unknown>;
    expect(Object.keys(body).sort(), what).toEqual(['attr', 'code', 'detail', 'type']);
    expect(body.code, what).toBe(expected.code);
  }
  if (expected.retryAfter !== undefined) expect(res.headers.get('retry-after'), what).toBe(expected.retryAfter);
}

describe('upstream faults', () => {
  it.each(faults.map((f) => [f.name, f] as const))('%s: poller, read-through and forwarded write', async (_name, fault) => {
    const s = (sidecar = await start());
    await waitFor(() => s.store.ready(), 'first poll');
    const good = await get(s.apiUrl + snapshotPath, bearer(key)); // also remembers the key
    expect(good.status).toBe(200);
    upstream.setDefinitions(1, withFlag('never-seen'));
    await fault.apply(upstream);

    // The poller: last good snapshot served, stale and the outcome on /status, counted, logged.
    await waitFor(async () => (await status(s)).projects[0]?.last_poll?.consecutive_failures >= 1, 'a failed poll', 8000);
    const during = await get(s.apiUrl + snapshotPath, bearer(key));
    expect([during.status, during.text]).toEqual([200, good.text]);
    const st = (await status(s)).projects[0] as Record<string, any>;
    expect(st.serving_stale).toBe(true);
    expect(st.last_poll.outcome).toBe(fault.poll.outcome);
    if (fault.poll.error) expect(st.last_poll.error).toMatch(fault.poll.error);
    if (fault.retryAfter) expect(Date.parse(st.last_poll.next_poll_at) - Date.parse(st.last_poll.at)).toBeGreaterThanOrEqual(fault.retryAfter * 1000);
    const metrics = await s.registry.metrics();
    expect(metrics).toMatch(new RegExp(`flag_sidecar_polls_total\\{project="1",variant="cohorts",outcome="${fault.poll.outcome}"\\} [1-9]`));
    if (fault.poll.metricStatus) {
      expect(metrics).toMatch(new RegExp(`flag_sidecar_upstream_requests_total\\{operation="local_evaluation",status="${fault.poll.metricStatus}"\\} [1-9]`));
    }
    expect(s.logs.some((l) => l.msg === 'poll failed; serving last good snapshot' && l.outcome === fault.poll.outcome)).toBe(true);

    // A read-through read with a cold cache, and a forwarded write.
    await expectAnswer(await fetch(`${s.apiUrl}/api/projects/1/feature_flags/2/`, { headers: bearer(key) }), fault.read, 'read');
    const write = await fetch(`${s.apiUrl}/api/projects/1/feature_flags/1/`, {
      method: 'PATCH',
      headers: { ...bearer(key), 'content-type': 'application/json' },
      body: '{"name":"renamed during a fault"}',
    });
    await expectAnswer(write, fault.write, 'write');
    if (fault.write.metric) {
      expect(await s.registry.metrics()).toMatch(new RegExp(`flag_sidecar_forwarded_writes_total\\{route="flag_update",status="${fault.write.metric}"\\} 1`));
    }

    // The evaluation endpoint: local answers stay, what needs upstream is marked as an error, never a hang.
    const flags = await fetch(`${s.apiUrl}/flags?v=2`, { method: 'POST', body: JSON.stringify({ token, distinct_id: 'user-1' }) });
    const evaluated = (await flags.json()) as { flags: Record<string, { enabled: boolean }>; errorsWhileComputingFlags: boolean };
    expect(flags.status).toBe(200);
    expect(evaluated.errorsWhileComputingFlags).toBe(fault.flags.errors);
    expect(evaluated.flags['new-checkout']).toBeDefined();
    const forwarded = await fetch(`${s.apiUrl}/flags?v=2`, { method: 'POST', body: JSON.stringify({ token: 'phc_notservedhere', distinct_id: 'user-1' }) });
    await forwarded.arrayBuffer();
    expect(forwarded.status).toBe(fault.flags.unknownToken);

    // Healed: the sidecar catches up.
    await fault.heal(upstream);
    await waitFor(async () => (await get(s.apiUrl + snapshotPath, bearer(key))).text.includes('never-seen'), 'recovery', 10_000);
    expect((await status(s)).projects[0]?.serving_stale).toBe(false);
    expect(s.logs.filter((l) => (l.level as number) >= 50 && l.msg !== 'could not persist snapshot')).toEqual([]);
  }, 30_000);

  it('a huge body at start: never ready from part of it, says why', async () => {
    upstream.setMode({ kind: 'huge', bytes: 1024 * 1024 });
    const s = (sidecar = await start());
    await waitFor(async () => (await status(s)).projects[0]?.last_poll?.consecutive_failures >= 1, 'a failed poll');
    expect((await status(s)).projects[0]?.last_poll?.error).toMatch(/^too_large/);
    expect(s.store.ready()).toBe(false);
    expect((await get(s.apiUrl + snapshotPath, bearer(upstreamKey))).status).toBe(503);
  });
});
