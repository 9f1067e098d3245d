/** The "flag-sidecar listening" line's fields: where, what is served, whether ready, a curl that pastes as printed. */
import { describe, expect, it } from 'vitest';
import { listeningFields } from '../../src/banner.js';
import { loadConfig } from '../../src/config/load.js';

const deps = { rootDir: '/app', readFile: () => '' };
const online = loadConfig({ FLAG_SIDECAR_UPSTREAM_URL: 'https://us.posthog.com', FLAG_SIDECAR_UPSTREAM_KEY: 'phs_a', FLAG_SIDECAR_PROJECTS: '7:phc_x' }, deps);
const offline = loadConfig({}, deps);
const state = (ready: boolean) => ({ apiUrl: 'http://0.0.0.0:8010', opsUrl: 'http://0.0.0.0:8011', projects: [7], ready });

describe('listeningFields', () => {
  it('ready: the listeners as bound, the mode and what is served, and a curl to a loopback address', () => {
    expect(listeningFields(online, state(true))).toEqual({
      api: 'http://0.0.0.0:8010',
      ops: 'http://0.0.0.0:8011',
      mode: 'online',
      serving: 'polling https://us.posthog.com',
      projects: [7],
      ready: true,
      try: `curl -H "Authorization: Bearer $YOUR_KEY" 'http://127.0.0.1:8010/api/projects/7/feature_flags/local_evaluation/?send_cohorts'`,
    });
  });

  it('not ready: says what it waits for and where to look', () => {
    expect(listeningFields(online, state(false))).toMatchObject({ ready: false, waiting: 'a first snapshot of every project (http://127.0.0.1:8011/status says which)' });
  });

  it('offline on the example files: what file is served, and the example key in the curl', () => {
    const fields = listeningFields(offline, state(true));
    expect(fields).toMatchObject({ mode: 'offline', serving: 'offline, serving /app/config/snapshot.example.json' });
    expect(fields.try).toContain('Bearer phx_flag_sidecar_example_key"');
  });
});
