import { describe, expect, it } from 'vitest';
import { bearer, exampleKey } from '../support/fixtures.js';
import { startProcess } from '../support/sidecar-process.js';

// The real entry point as a process: what `npm start` runs, its signals and its exit codes.
describe('the sidecar process', () => {
  it('serves the example snapshot offline and exits 0 on SIGTERM after draining', async () => {
    const proc = startProcess({});
    const { api, ops } = await proc.listening;
    expect((await fetch(`${ops}/readyz`)).status).toBe(200);
    const res = await fetch(`${api}/api/projects/1/feature_flags/local_evaluation/?send_cohorts`, { headers: bearer(exampleKey) });
    expect(res.status).toBe(200);
    proc.child.kill('SIGTERM');
    const [code] = await proc.exited;
    expect(code).toBe(0);
    expect(proc.output()).toContain('"msg":"flag-sidecar stopped"');
    expect(proc.logs()).not.toContain(exampleKey); // JSON logs on stdout never carry a key
    // stderr is no terminal here: the banner is one JSON line, like the log lines.
    const banner = JSON.parse(proc.stderr().trim()) as Record<string, unknown>;
    expect(banner).toMatchObject({ msg: 'flag-sidecar listening', api, ops, ready: true });
    expect(banner.try).toBe(`curl -H "Authorization: Bearer ${exampleKey}" '${api}/api/projects/1/feature_flags/local_evaluation/?send_cohorts'`);
  });

  it('stops with exit code 2 and one message naming every bad variable', async () => {
    const proc = startProcess({ FLAG_SIDECAR_POLL_INTERVAL: 'sometimes', FLAG_SIDECAR_UPSTREAM_URL: 'http://127.0.0.1:1' });
    const [code] = await proc.exited;
    expect(code).toBe(2);
    const text = proc.output();
    expect(text).toContain('flag-sidecar: invalid configuration:');
    expect(text).toContain('FLAG_SIDECAR_POLL_INTERVAL');
    expect(text).toContain('FLAG_SIDECAR_UPSTREAM_KEY: required');
    expect(text).toContain('FLAG_SIDECAR_PROJECTS: required');
  });

  it('refuses to start (exit 2, bad configuration) with an unusable keys file, saying why', async () => {
    const proc = startProcess({ FLAG_SIDECAR_KEYS_FILE: 'config/snapshot.example.json' });
    const [code] = await proc.exited;
    expect(code).toBe(2);
    expect(proc.output()).toContain('expected {\\"keys\\": [...]}');
    expect(proc.output()).toContain('FLAG_SIDECAR_KEYS_FILE');
  });

  it('a mistyped setting stops the process with exit 2, naming the closest setting and never its value', async () => {
    const proc = startProcess({ FLAG_SIDECAR_POLL_INTERVALL: 'phx_valueneverechoed' });
    const [code] = await proc.exited;
    expect(code).toBe(2);
    expect(proc.output()).toContain('FLAG_SIDECAR_POLL_INTERVALL: not a setting; did you mean FLAG_SIDECAR_POLL_INTERVAL?');
    expect(proc.output()).not.toContain('valueneverechoed');
  });

  it('a listener that cannot be had is a failure, not a bad configuration: exit 1', async () => {
    const first = startProcess({});
    const { api } = await first.listening;
    try {
      const second = startProcess({ FLAG_SIDECAR_LISTEN: new URL(api).host });
      const [code] = await second.exited;
      expect(code).toBe(1);
      expect(second.output()).toContain('flag-sidecar failed to start');
    } finally {
      first.child.kill('SIGTERM');
      await first.exited;
    }
  });
});
