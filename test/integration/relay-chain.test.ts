import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { digestKey } from '../../src/auth/principal.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { call, json, startFlagSidecar, startFlagUpstream, tokenOne } from '../support/flag-api-env.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';
import { tempDir } from '../support/temp-dir.js';

// Sidecar → relay → PostHog: an edge sidecar whose upstream is another flag-sidecar (the chart's relay
// Deployment) serves every key kind, asking the relay — never PostHog — about keys, and trusting a key no
// longer than the relay does.
const started: Array<{ stop(): Promise<void> } | { close(): Promise<void> }> = [];
afterEach(async () => {
  for (const s of started.reverse()) await ('stop' in s ? s.stop() : s.close());
  started.length = 0;
});

/** Keys only the relay knows (its keys file), each with the reach its label says. */
const relayKeys = { edge_fleet_key: [null, ['feature_flag:read']], relay_static_one: [[1], ['feature_flag:read']], relay_static_two: [[2], ['feature_flag:read']] } as const;

async function startChain(relayEnv: Record<string, string> = {}): Promise<{ upstream: FakeUpstream; relay: TestSidecar }> {
  const upstream = await startFlagUpstream();
  started.push(upstream);
  const keysFile = join(tempDir('relay-keys-'), 'keys.json');
  const keys = Object.entries(relayKeys).map(([key, [projects, scopes]]) => ({ sha256: digestKey(key), label: key, scopes, projects }));
  writeFileSync(keysFile, JSON.stringify({ keys }));
  const relay = await startFlagSidecar(upstream, { FLAG_SIDECAR_KEYS_FILE: keysFile, ...relayEnv });
  started.push(relay);
  return { upstream, relay };
}

/** An edge sidecar polling `relay` with a key only the relay knows (edge pods hold no PostHog credential). */
async function startEdge(relay: TestSidecar, env: Record<string, string> = {}): Promise<TestSidecar> {
  const edge = await startTestSidecar({
    FLAG_SIDECAR_UPSTREAM_URL: relay.apiUrl,
    FLAG_SIDECAR_UPSTREAM_KEY: 'edge_fleet_key',
    FLAG_SIDECAR_PROJECTS: `1:${tokenOne},2:phc_flagstwo`,
    FLAG_SIDECAR_UPSTREAM_TIMEOUT: '1s',
    FLAG_SIDECAR_UPSTREAM_CONNECT_TIMEOUT: '300ms',
    ...env,
  });
  started.push(edge);
  await Promise.all([edge.poller?.pollNow(1), edge.poller?.pollNow(2)]);
  await waitFor(() => edge.store.ready(), 'edge snapshots from the relay');
  return edge;
}

const localEvaluation = '/api/projects/1/feature_flags/local_evaluation/?send_cohorts';
const detail = (text: string): string => String(json(text).detail);

describe('an edge sidecar whose upstream is a relay', () => {
  it('serves personal, project secret and static keys, with introspections and grants answered by the relay', async () => {
    const { upstream, relay } = await startChain();
    const [edge, other] = [await startEdge(relay), await startEdge(relay)];
    const expectations: Array<[string, string, number, string | null]> = [
      // personal keys: introspected at the relay (PostHog asked once), granted per project there, reads through
      ['phx_reader', localEvaluation, 200, null],
      ['phx_reader', '/api/projects/1/feature_flags/', 200, null],
      ['phx_legacy', localEvaluation, 200, null],
      ['phx_old_reader', localEvaluation, 200, null], // PostHog will not describe it: a grant decides
      ['phx_project_two', localEvaluation, 403, 'API key does not have access to the requested project: ID 1.'],
      ['phx_writer', '/api/projects/1/feature_flags/activity/', 200, null],
      ['phx_reader', '/api/projects/1/feature_flags/activity/', 403, "API key missing required scope 'activity_log:read'"],
      ['phx_unknown', localEvaluation, 401, 'Personal API key found in request Authorization header is invalid.'],
      // project secret keys: granted per project by the relay
      ['phs_projectone', localEvaluation, 200, null],
      ['phs_projecttwo', localEvaluation, 403, 'You do not have permission to perform this action.'],
      ['phs_madeup', localEvaluation, 401, 'Personal API key found in request Authorization header is invalid.'],
      // static keys of the relay's keys file: PostHog never hears of them
      ['relay_static_one', localEvaluation, 200, null],
      ['relay_static_two', localEvaluation, 403, 'API key does not have access to the requested project: ID 1.'],
      ['relay_static_two', '/api/projects/2/feature_flags/local_evaluation/?send_cohorts', 200, null],
    ];
    for (const s of [edge, other]) {
      for (const [key, path, status, message] of expectations) {
        const answer = await call(`${s.apiUrl}${path}`, key);
        expect(`${key} ${path} → ${answer.status} ${answer.status === 200 ? '' : detail(answer.text)}`).toBe(`${key} ${path} → ${status} ${message ?? ''}`);
      }
    }
    // One introspection per personal key for the whole chain (two edges), made by the relay.
    const introspected = upstream.introspections().map((r) => r.headers.authorization);
    expect(introspected.filter((a) => a === 'Bearer phx_reader')).toHaveLength(1);
    expect(introspected.some((a) => /relay_static|edge_fleet/.test(String(a)))).toBe(false);
    expect(upstream.requests.some((r) => /relay_static|edge_fleet/.test(String(r.headers.authorization)))).toBe(false);
    // Reads went through with the caller's own key.
    expect(upstream.requests.find((r) => r.url === '/api/projects/1/feature_flags/')?.headers.authorization).toBe('Bearer phx_reader');
    // Nothing bypassed the relay: every request PostHog saw is one the relay made.
    const metrics = await (await fetch(`${relay.opsUrl}/metrics`)).text();
    const relayRequests = [...metrics.matchAll(/^flag_sidecar_upstream_requests_total\{[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
    expect(relayRequests).toBe(upstream.requests.length);
  });

  it("shows a write through the edge in the edge's very next local_evaluation", async () => {
    const { upstream, relay } = await startChain();
    const edge = await startEdge(relay);
    upstream.flagApi.setDefinitionsLag(150);
    const patched = await call(`${edge.apiUrl}/api/projects/1/feature_flags/4/`, 'phx_writer', { method: 'PATCH', body: JSON.stringify({ active: false }) });
    expect(patched.status).toBe(200);
    expect(upstream.requests.filter((r) => r.method === 'PATCH').map((r) => r.headers.authorization)).toEqual(['Bearer phx_writer']);
    const flags = json((await call(`${edge.apiUrl}${localEvaluation}`, 'phx_writer')).text).flags as Array<{ id: number; active: boolean }>;
    expect(flags.find((f) => f.id === 4)?.active).toBe(false);
  });

  it('trusts a personal key no longer than the relay does, and through an outage only within its grace', async () => {
    const { upstream, relay } = await startChain({ FLAG_SIDECAR_AUTH_CACHE_TTL: '1s', FLAG_SIDECAR_AUTH_GRACE: '1h' });
    const edge = await startEdge(relay); // its own TTL: the default 5 minutes
    expect((await call(`${edge.apiUrl}${localEvaluation}`, 'phx_reader')).status).toBe(200);
    expect(upstream.introspections()).toHaveLength(1);
    // Once the relay's answer expires, the edge asks again, and the relay asks PostHog again.
    await waitFor(async () => {
      expect((await call(`${edge.apiUrl}${localEvaluation}`, 'phx_reader')).status).toBe(200);
      return upstream.introspections().length >= 2;
    }, 'the edge to ask the relay again once its answer expired', 10_000);

    // PostHog down: a key the relay verified keeps working within the relay's grace, on a new edge too.
    await upstream.goDown();
    const relayFailedToAsk = async () => /flag_sidecar_key_introspections_total\{outcome="failed"\} [1-9]/.test(await (await fetch(`${relay.opsUrl}/metrics`)).text());
    await waitFor(async () => {
      expect((await call(`${edge.apiUrl}${localEvaluation}`, 'phx_reader')).status).toBe(200);
      return relayFailedToAsk();
    }, 'the relay to find its answer expired and PostHog unreachable', 10_000);
    const late = await startEdge(relay);
    expect((await call(`${late.apiUrl}${localEvaluation}`, 'phx_reader')).status).toBe(200);
    const unknown = await call(`${late.apiUrl}${localEvaluation}`, 'phx_writer');
    expect(unknown.status).toBe(503);
    expect(detail(unknown.text)).toMatch(/cannot be verified right now/);
  });

  it("passes on a 429 about a key with its Retry-After (the caller may retry), never as an outage", async () => {
    const { upstream, relay } = await startChain();
    const edge = await startEdge(relay);
    upstream.setMode({ kind: 'status', status: 429, body: '{"type":"throttled_error","code":"throttled","detail":"Request was throttled.","attr":null}', headers: { 'retry-after': '7' } });
    const throttled = await call(`${edge.apiUrl}${localEvaluation}`, 'phx_reader');
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after')).toBe('7');
    upstream.setMode({ kind: 'normal' });
    expect((await call(`${edge.apiUrl}${localEvaluation}`, 'phx_reader')).status).toBe(200);
  });
});
