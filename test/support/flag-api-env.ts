/**
 * A fake upstream with two projects and a set of personal keys, and a sidecar in front of it: the setting of
 * the flag API integration tests.
 */
import { startFakeUpstream, type FakeUpstream } from './fake-upstream.js';
import { bearer, exampleDefinitions, upstreamKey } from './fixtures.js';
import { startTestSidecar, waitFor, type TestSidecar } from './start-sidecar.js';

/** Project 1's token. */
export const tokenOne = 'phc_flagsone';

/** Personal keys of the fake: name says what the key may do. */
export const personalKeys = {
  phx_reader: { scopes: ['feature_flag:read'] },
  phx_writer: { scopes: ['feature_flag:write', 'activity_log:read'] },
  phx_project_two: { scopes: ['*'], scoped_teams: [2] },
  phx_legacy: { scopes: null },
  phx_old_reader: { scopes: ['feature_flag:read'], refuseIntrospection: true },
};

/** Start the fake upstream (project 1: the example flags; project 2: none). */
export function startFlagUpstream(): Promise<FakeUpstream> {
  return startFakeUpstream({
    projects: {
      1: { token: tokenOne, definitions: exampleDefinitions(), secretKey: 'phs_projectone' },
      2: { token: 'phc_flagstwo', definitions: { flags: [], group_type_mapping: {}, cohorts: {} }, secretKey: 'phs_projecttwo' },
    },
    keys: [upstreamKey],
    personalKeys,
  });
}

/** Start a sidecar polling `upstream` for both projects; resolves once both snapshots are loaded. */
export async function startFlagSidecar(upstream: FakeUpstream, extra: Record<string, string> = {}): Promise<TestSidecar> {
  const sidecar = await startTestSidecar({
    FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
    FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
    FLAG_SIDECAR_PROJECTS: `1:${tokenOne},2:phc_flagstwo`,
    FLAG_SIDECAR_POLL_INTERVAL: '30s',
    FLAG_SIDECAR_UPSTREAM_TIMEOUT: '500ms',
    FLAG_SIDECAR_UPSTREAM_CONNECT_TIMEOUT: '300ms',
    ...extra,
  });
  await Promise.all([sidecar.poller?.pollNow(1), sidecar.poller?.pollNow(2)]);
  await waitFor(() => sidecar.store.ready(), 'both snapshots');
  return sidecar;
}

/** A request returning status, headers and text. */
export async function call(url: string, key: string | null, init: { method?: string; body?: string; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...(key === null ? {} : bearer(key)), ...init.headers };
  if (init.body !== undefined) headers['content-type'] ??= 'application/json';
  const response = await fetch(url, { method: init.method ?? 'GET', body: init.body, headers });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** Parse a JSON object body. */
export const json = (text: string): Record<string, unknown> => JSON.parse(text) as Record<string, unknown>;
