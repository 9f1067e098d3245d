/**
 * What the process loads for a configuration (memory and start-up: docs/benchmarks.md, "Footprint and
 * start-up"): the real entry point with a preload recording every module resolved (loaded-modules.mjs in
 * test/support). An offline sidecar never loads the upstream HTTP client (undici), the events relay or the
 * Redis client; the regex engine comes with the first regex filter; prom-client's exemplar support
 * (@opentelemetry/api) never; `flag-sidecar health` (the image's HEALTHCHECK, every 30 s) loads none of the server.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { runCommand, tsxMain } from '../support/run-command.js';
import { spawnSidecar } from '../support/spawn-sidecar.js';
import { rootDir } from '../support/start-sidecar.js';
import { tempDir } from '../support/temp-dir.js';

/** The environment that makes a process record what it loads into `file`. */
const recording = (file: string): Record<string, string> => ({
  NODE_OPTIONS: `--import ${join(rootDir, 'test/support/loaded-modules.mjs')}`,
  LOADED_MODULES_FILE: file,
});

/** Loaded modules as `pkg:name` (a dependency) or a path under src/ (the sidecar's own). */
function loaded(file: string): Set<string> {
  const names = new Set<string>();
  for (const url of readFileSync(file, 'utf8').split('\n')) {
    const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (pkg) names.add(`pkg:${pkg[1]}`);
    else if (url.startsWith(`file://${rootDir}`)) names.add(url.slice(`file://${rootDir}`.length).replace(/^\//, ''));
  }
  return names;
}

/** Start the sidecar with `env`, wait until it is ready, run `use`, stop it (SIGTERM), and return what it loaded. */
async function loadedBySidecar(env: Record<string, string>, use?: (api: string) => Promise<void>): Promise<Set<string>> {
  const file = join(tempDir('flag-sidecar-modules-'), 'loaded.txt');
  const sidecar = spawnSidecar({ ...recording(file), ...env });
  const { api, ops } = await sidecar.listening;
  // Online, ready once the first poll answered.
  let status = 0;
  for (let i = 0; i < 250 && status !== 200; i++) {
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    status = (await fetch(`${ops}/readyz`)).status;
  }
  expect(status).toBe(200);
  await use?.(api);
  sidecar.child.kill('SIGTERM');
  const [code] = await sidecar.exited;
  expect(code).toBe(0);
  return loaded(file);
}

const serverModules = ['pkg:undici', 'pkg:@redis/client', 'pkg:re2js', 'pkg:@opentelemetry/api', 'src/upstream/client.ts', 'src/events/relay.ts', 'src/fleet/fleet.ts'];

describe('modules a configuration loads', () => {
  let upstream: FakeUpstream;
  beforeAll(async () => {
    upstream = await startFakeUpstream({ projects: { 1: { token: 'phc_modules', definitions: exampleDefinitions() } }, keys: [upstreamKey] });
  });
  afterAll(() => upstream.close());

  it('offline: no upstream client, events relay, Redis client or regex engine', async () => {
    const modules = await loadedBySidecar({});
    expect(modules).toContain('pkg:prom-client'); // the recording sees dependencies
    expect(modules).toContain('src/app.ts');
    for (const name of serverModules) expect(modules).not.toContain(name);
  });

  it('the regex engine with the first regex filter of a snapshot, once compiled (by its first evaluation)', async () => {
    const definitions = exampleDefinitions();
    (definitions.flags as unknown[]).push({
      id: 999,
      key: 'regex-flag',
      active: true,
      filters: { groups: [{ properties: [{ key: 'email', type: 'person', value: '^.*@example\\.com$', operator: 'regex' }], rollout_percentage: 100 }] },
    });
    const file = join(tempDir('flag-sidecar-regex-'), 'snapshot.json');
    writeFileSync(file, JSON.stringify(definitions));
    // The stored snapshot is compiled by its first evaluation: one /flags request.
    const evaluate = async (api: string): Promise<void> => {
      const res = await fetch(`${api}/flags?v=2`, { method: 'POST', body: JSON.stringify({ token: 'phc_modules', distinct_id: 'u', person_properties: { email: 'a@example.com' } }) });
      expect(((await res.json()) as { flags: Record<string, { enabled: boolean }> }).flags['regex-flag']?.enabled).toBe(true);
    };
    const modules = await loadedBySidecar({ FLAG_SIDECAR_BOOTSTRAP_FILE: file, FLAG_SIDECAR_PROJECTS: '1:phc_modules' }, evaluate);
    expect(modules).toContain('pkg:re2js');
    expect(modules).not.toContain('pkg:undici');
  });

  it('online: the upstream client and the events relay', async () => {
    const modules = await loadedBySidecar({ FLAG_SIDECAR_UPSTREAM_URL: upstream.url, FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey, FLAG_SIDECAR_PROJECTS: '1:phc_modules' });
    for (const name of ['pkg:undici', 'src/upstream/client.ts', 'src/events/relay.ts']) expect(modules).toContain(name);
    expect(modules).not.toContain('pkg:@redis/client');
  });

  it('`flag-sidecar health` loads none of the server', async () => {
    const file = join(tempDir('flag-sidecar-modules-'), 'loaded.txt');
    const ran = await runCommand(tsxMain('health', '--timeout', '200ms'), { ...recording(file), FLAG_SIDECAR_OPS_LISTEN: '127.0.0.1:1' });
    expect(ran.code).toBe(1);
    const modules = loaded(file);
    expect(modules).toContain('src/health.ts');
    for (const name of [...serverModules, 'pkg:prom-client', 'pkg:pino', 'src/app.ts']) expect(modules).not.toContain(name);
  });
});
