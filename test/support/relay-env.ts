/**
 * A sidecar relaying events for project 42 to a fake upstream, as the events tests start it (a short linger so a
 * batch leaves at once); both are stopped when the test ends.
 */
import { onTestFinished } from 'vitest';
import { exampleDefinitions, upstreamKey } from './fixtures.js';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream.js';
import { startTestSidecar, waitFor, type TestSidecar } from './start-sidecar.js';

/**
 * Start the fake upstream (project 42 with `token`, the sidecar's key known) and a ready sidecar polling it, with
 * `env` on top of the defaults; call inside a test. Throws when either does not start (what started is stopped).
 */
export async function startRelaySidecar(token: string, env: Record<string, string> = {}): Promise<{ upstream: FakeUpstream; sidecar: TestSidecar }> {
  const upstream = await startFakeUpstream({ projects: { 42: { token, definitions: exampleDefinitions() } }, keys: [upstreamKey] });
  let sidecar: TestSidecar | null = null;
  onTestFinished(async () => {
    await sidecar?.stop();
    await upstream.close();
  });
  sidecar = await startTestSidecar({
    FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
    FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
    FLAG_SIDECAR_PROJECTS: `42:${token}`,
    FLAG_SIDECAR_EVENTS_LINGER: '20ms',
    FLAG_SIDECAR_LOG_LEVEL: 'warn',
    ...env,
  });
  const started = sidecar;
  await waitFor(() => started.store.ready(), 'sidecar ready');
  return { upstream, sidecar: started };
}
