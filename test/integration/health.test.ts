/**
 * `flag-sidecar health` (the image's HEALTHCHECK) against real sidecar processes: ready (on the default
 * all-interfaces bind, asked on loopback), not ready (online, upstream failing, nothing to serve yet) and then
 * ready once upstream recovers, nothing listening, a listener that never answers, and a bad configuration.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { exampleDefinitions, upstreamKey } from '../support/fixtures.js';
import { freePort } from '../support/redis.js';
import { runCommand, tsxMain } from '../support/run-command.js';
import { spawnSidecar, type SidecarProcess } from '../support/spawn-sidecar.js';

const running: SidecarProcess[] = [];
afterEach(async () => {
  for (const s of running) s.child.kill('SIGKILL');
  await Promise.all(running.map((s) => s.exited));
  running.length = 0;
});

/** Start a sidecar with `env` and return the port its ops listener got. */
async function opsPortOf(env: Record<string, string>): Promise<number> {
  const sidecar = spawnSidecar(env);
  running.push(sidecar);
  return Number(new URL((await sidecar.listening).ops).port);
}

const health = (opsListen: string, ...args: string[]) => runCommand(tsxMain('health', ...args), { FLAG_SIDECAR_OPS_LISTEN: opsListen });

describe('flag-sidecar health', () => {
  let upstream: FakeUpstream;
  beforeAll(async () => {
    upstream = await startFakeUpstream({ projects: { 1: { token: 'phc_health', definitions: exampleDefinitions() } }, keys: [upstreamKey] });
  });
  afterAll(() => upstream.close());

  it('exits 0 when the ops listener (bound to all interfaces) says ready', async () => {
    const port = await opsPortOf({ FLAG_SIDECAR_OPS_LISTEN: '0.0.0.0:0' });
    const ran = await health(`0.0.0.0:${port}`);
    expect(ran).toEqual({ code: 0, stdout: `flag-sidecar: ready: http://127.0.0.1:${port}/readyz\n`, stderr: '' });
  });

  it('reads only FLAG_SIDECAR_OPS_LISTEN: a secret file gone since the start or another setting does not fail it', async () => {
    const port = await opsPortOf({ FLAG_SIDECAR_OPS_LISTEN: '127.0.0.1:0' });
    const ran = await runCommand(tsxMain('health'), {
      FLAG_SIDECAR_OPS_LISTEN: `127.0.0.1:${port}`,
      FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
      FLAG_SIDECAR_UPSTREAM_KEY_FILE: '/nonexistent/flag-sidecar/upstream-key',
      FLAG_SIDECAR_POLL_INTERVAL: 'soon',
    });
    expect(ran).toEqual({ code: 0, stdout: `flag-sidecar: ready: http://127.0.0.1:${port}/readyz\n`, stderr: '' });
  });

  it('exits 1 while the sidecar has nothing to serve, and 0 once upstream answers', async () => {
    upstream.setMode({ kind: 'status', status: 500, body: '{"detail":"down"}' });
    const port = await opsPortOf({ FLAG_SIDECAR_UPSTREAM_URL: upstream.url, FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey, FLAG_SIDECAR_PROJECTS: '1:phc_health' });
    const notReady = await health(`127.0.0.1:${port}`);
    expect(notReady.code).toBe(1);
    expect(notReady.stderr).toBe(`flag-sidecar: not ready: http://127.0.0.1:${port}/readyz answered 503 {"status":"not_ready","waiting_for_projects":[1]}\n`);

    upstream.setMode({ kind: 'normal' });
    while ((await fetch(`http://127.0.0.1:${port}/readyz`)).status !== 200) await new Promise((r) => setTimeout(r, 100));
    expect((await health(`127.0.0.1:${port}`)).code).toBe(0);
  }, 30_000);

  it('exits 1 when nothing listens on the ops port', async () => {
    const port = await freePort();
    const ran = await health(`127.0.0.1:${port}`);
    expect([ran.code, ran.stderr]).toEqual([1, `flag-sidecar: unreachable: http://127.0.0.1:${port}/readyz: ECONNREFUSED\n`]);
  });

  it('exits 1 after its timeout when the listener accepts but never answers', async () => {
    const sockets: Socket[] = [];
    const silent: Server = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    try {
      const ran = await health(`127.0.0.1:${port}`, '--timeout', '300ms');
      expect([ran.code, ran.stderr]).toEqual([1, `flag-sidecar: not ready: http://127.0.0.1:${port}/readyz gave no answer within 300ms\n`]);
      expect(sockets.length).toBe(1);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('exits 2 for a configuration that does not say where to ask', async () => {
    const bad = await health('localhost:notaport');
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('FLAG_SIDECAR_OPS_LISTEN: "localhost:notaport" is not host:port')]);
    const anyPort = await health('127.0.0.1:0');
    expect([anyPort.code, anyPort.stderr]).toEqual([2, expect.stringContaining('FLAG_SIDECAR_OPS_LISTEN has port 0')]);
    const usage = await health('127.0.0.1:8011', '--timeout', 'soon');
    expect([usage.code, usage.stderr]).toEqual([2, expect.stringContaining('health --timeout: "soon" is not a duration')]);
  });
});
