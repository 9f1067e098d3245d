/**
 * /metrics as Prometheus's own linter judges it: a real sidecar (polling the fake upstream, fleet mode on the
 * run's Redis, a snapshot volume, the events relay) answers traffic on every route family, then its /metrics is
 * checked with `promtool check metrics` (provisioned by the run's globalSetup; never skipped). The process and
 * Node.js collectors keep their standard names.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { bearer, exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { runRedisUrl, testPrefix } from '../support/redis.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';
import { tempDir } from '../support/temp-dir.js';
import { runTool } from '../support/tools.js';

const token = 'phc_metricstoken';
let upstream: FakeUpstream | null = null;
let sidecar: TestSidecar | null = null;
afterEach(async () => {
  await sidecar?.stop();
  await upstream?.close();
  sidecar = null;
  upstream = null;
});

async function start(): Promise<TestSidecar> {
  upstream = await startFakeUpstream({
    projects: { 1: { token, definitions: exampleDefinitions() } },
    keys: [upstreamKey],
    personalKeys: { phx_metrics_reader: { scopes: ['feature_flag:read', 'endpoint:read'] } },
  });
  upstream.endpointsApi.seed(1, { name: 'daily' });
  sidecar = await startTestSidecar({
    FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
    FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
    FLAG_SIDECAR_PROJECTS: `1:${token}`,
    FLAG_SIDECAR_SNAPSHOT_DIR: tempDir('metrics-snapshots-'),
    FLAG_SIDECAR_REDIS_URL: runRedisUrl,
    FLAG_SIDECAR_REDIS_PREFIX: testPrefix(),
    FLAG_SIDECAR_EVENTS_LINGER: '10ms',
    FLAG_SIDECAR_LOG_LEVEL: 'warn',
  });
  const started = sidecar;
  await waitFor(() => started.store.ready(), 'sidecar ready');
  return started;
}

/** One request of each route family: snapshot reads, evaluation, read-through, endpoint runs, events, refusals, ops. */
async function traffic(s: TestSidecar): Promise<void> {
  const reader = bearer('phx_metrics_reader');
  const json = { 'content-type': 'application/json' };
  const requests: Array<[string, RequestInit]> = [
    [`${s.apiUrl}/api/projects/1/feature_flags/local_evaluation/?send_cohorts`, { headers: bearer(upstreamKey) }],
    [`${s.apiUrl}/flags/definitions?token=${token}&send_cohorts`, { headers: bearer(upstreamKey) }],
    [`${s.apiUrl}/api/feature_flag/local_evaluation?token=${token}&send_cohorts`, { headers: bearer(upstreamKey) }],
    [`${s.apiUrl}/flags?v=2`, { method: 'POST', headers: json, body: JSON.stringify({ token, distinct_id: 'user-1' }) }],
    [`${s.apiUrl}/api/projects/1/feature_flags/`, { headers: reader }],
    [`${s.apiUrl}/api/projects/1/feature_flags/evaluation_reasons?distinct_id=user-1`, { headers: reader }],
    [`${s.apiUrl}/api/projects/1/endpoints/daily/run`, { method: 'POST', headers: { ...reader, ...json }, body: '{}' }],
    [`${s.apiUrl}/batch/`, { method: 'POST', headers: json, body: JSON.stringify({ api_key: token, batch: [{ event: 'e', distinct_id: 'u', properties: {} }] }) }],
    [`${s.apiUrl}/api/projects/1/feature_flags/`, { headers: bearer('phx_not_a_key_upstream_knows') }],
    [`${s.apiUrl}/no/such/route`, {}],
    [`${s.opsUrl}/status`, {}],
    [`${s.opsUrl}/readyz`, {}],
  ];
  for (const [url, init] of requests) await (await fetch(url, init)).arrayBuffer();
  await waitFor(() => (upstream?.capture.events().length ?? 0) > 0, 'the event relayed');
}

describe('/metrics', () => {
  it('passes promtool check metrics after traffic on every route family, with the standard process and Node.js names', async () => {
    const s = await start();
    await traffic(s);
    const text = await (await fetch(`${s.opsUrl}/metrics`)).text();
    for (const family of ['flag_sidecar_http_requests_total', 'flag_sidecar_endpoint_runs_total', 'flag_sidecar_events_received_total', 'flag_sidecar_fleet_role', 'flag_sidecar_snapshot_persist_pending']) {
      expect(text).toContain(`# TYPE ${family} `);
    }
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(text).toMatch(/^process_cpu_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes \d+/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_p99_seconds /m);
    expect(text).not.toMatch(/^flag_sidecar_(process|nodejs)_/m);

    const check = runTool('promtool', ['check', 'metrics'], { input: text });
    expect(`${check.stdout}${check.stderr}`).toBe('');
    expect(check.status).toBe(0);
  });
});
