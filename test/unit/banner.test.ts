/** The start-up banner: plain text on a terminal, one JSON line otherwise; never "up" before ready. */
import { describe, expect, it } from 'vitest';
import { startupBanner } from '../../src/banner.js';
import { loadConfig } from '../../src/config/load.js';

const deps = { rootDir: '/app', readFile: () => '' };
const online = loadConfig({ FLAG_SIDECAR_UPSTREAM_URL: 'https://us.posthog.com', FLAG_SIDECAR_UPSTREAM_KEY: 'phs_a', FLAG_SIDECAR_PROJECTS: '7:phc_x' }, deps);
const offline = loadConfig({}, deps);
const state = (ready: boolean, tty: boolean) => ({ apiUrl: 'http://0.0.0.0:8010', opsUrl: 'http://0.0.0.0:8011', projects: [7], ready, tty, now: new Date(0) });

describe('startupBanner', () => {
  it.each([
    [false, false],
    [true, false],
  ])('not a terminal (ready %s): one JSON line, the shape of a log line', (ready) => {
    const text = startupBanner(online, state(ready, false));
    expect(text.endsWith('\n')).toBe(true);
    expect(text.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(text)).toEqual({
      level: 'info',
      time: '1970-01-01T00:00:00.000Z',
      service: 'flag-sidecar',
      msg: 'flag-sidecar listening',
      api: 'http://127.0.0.1:8010',
      ops: 'http://127.0.0.1:8011',
      mode: 'polling https://us.posthog.com',
      ready,
      try: `curl -H "Authorization: Bearer $YOUR_KEY" 'http://127.0.0.1:8010/api/projects/7/feature_flags/local_evaluation/?send_cohorts'`,
    });
  });

  it.each([
    [false, 'not ready yet: waiting for a first snapshot of every project (http://127.0.0.1:8011/status says which)'],
    [true, 'ready'],
  ])('a terminal, ready %s: plain text that says so, never "up"', (ready, says) => {
    const text = startupBanner(online, state(ready, true));
    expect(text).toContain(`flag-sidecar listening (polling https://us.posthog.com); ${says}\n`);
    expect(text).not.toMatch(/\bup\b/);
    expect(text).toContain('curl -H "Authorization: Bearer $YOUR_KEY" ');
    expect(text).not.toContain("'Authorization: Bearer $YOUR_KEY'");
  });

  it('offline on the example files: the example key in the curl', () => {
    expect(JSON.parse(startupBanner(offline, state(true, false))).try).toContain('Bearer phx_flag_sidecar_example_key"');
  });
});
