/**
 * Two projects served from a fake upstream (tokens `phc_one` and `phc_two`, the sidecar's own key) and a
 * sidecar in front of both, logging at info: the setting of the raw-socket fault tests, where the personal
 * keys given say what a caller may reach.
 */
import { startFakeUpstream, type FakePersonalKey, type FakeUpstream } from './fake-upstream.js';
import { exampleDefinitions, upstreamKey } from './fixtures.js';
import { startTestSidecar, waitFor, type TestSidecar } from './start-sidecar.js';

/**
 * Start the fake upstream (project 1: the example definitions; project 2: `projectTwo`, the example definitions
 * unless given) and a sidecar polling both; resolves once both snapshots are loaded. Stop both when done.
 */
export async function startTwoProjects(options: {
  personalKeys: Record<string, FakePersonalKey>;
  projectTwo?: Record<string, unknown>;
}): Promise<{ upstream: FakeUpstream; sidecar: TestSidecar }> {
  const upstream = await startFakeUpstream({
    projects: { 1: { token: 'phc_one', definitions: exampleDefinitions() }, 2: { token: 'phc_two', definitions: options.projectTwo ?? exampleDefinitions() } },
    keys: [upstreamKey],
    personalKeys: options.personalKeys,
  });
  const sidecar = await startTestSidecar({
    FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
    FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
    FLAG_SIDECAR_PROJECTS: '1:phc_one,2:phc_two',
    FLAG_SIDECAR_LOG_LEVEL: 'info',
  });
  await waitFor(() => sidecar.store.ready(), 'first polls');
  return { upstream, sidecar };
}
