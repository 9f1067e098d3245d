import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { bearer, exampleKey, exampleToken } from '../support/fixtures.js';
import { npmStart } from '../support/npm-start.js';
import { descendants, running } from '../support/process-tree.js';
import { openRaw, rawRequest } from '../support/raw-connection.js';
import { runCommand, tsxMain } from '../support/run-command.js';
import { startProcess } from '../support/sidecar-process.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/start-sidecar.js';

/** A keys file in `dir` that is not JSON. */
function notJson(dir: string): string {
  const file = join(dir, 'keys.json');
  writeFileSync(file, '{"keys": [');
  return file;
}

/** Whether something accepts a TCP connection at `url`'s host and port. */
async function accepting(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

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
    // Said once, on stdout with the other log lines, with all there is to say; nothing on stderr.
    const said = proc.output().split('\n').filter((l) => l.includes('flag-sidecar listening'));
    expect(said).toHaveLength(1);
    expect(JSON.parse(said[0] as string)).toEqual({
      level: 'info',
      time: expect.any(String),
      service: 'flag-sidecar',
      msg: 'flag-sidecar listening',
      api,
      ops,
      mode: 'offline',
      serving: expect.stringMatching(/^offline, serving \/.*\/config\/snapshot\.example\.json$/),
      projects: [1],
      ready: true,
      try: `curl -H "Authorization: Bearer ${exampleKey}" '${api}/api/projects/1/feature_flags/local_evaluation/?send_cohorts'`,
    });
    expect(proc.stderr()).toBe('');
    // The curl is the one place the example key shows: a key a caller presents is never logged.
    expect(proc.logs().replace(/"try":"[^\n]*"}/, '')).not.toContain(exampleKey);
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

  it.each([
    ['a bad environment variable', () => ({ FLAG_SIDECAR_POLL_INTERVAL: 'sometimes' }), 'FLAG_SIDECAR_POLL_INTERVAL: "sometimes" is not a duration'],
    ['a keys file that is not JSON', (dir: string) => ({ FLAG_SIDECAR_KEYS_FILE: notJson(dir) }), 'FLAG_SIDECAR_KEYS_FILE: '],
    [
      'an upstream key of a shape PostHog never issues',
      () => ({ FLAG_SIDECAR_UPSTREAM_URL: 'http://127.0.0.1:9', FLAG_SIDECAR_PROJECTS: '1:phc_one', FLAG_SIDECAR_UPSTREAM_KEY: '"phs_copiedwithquotes"' }),
      'FLAG_SIDECAR_UPSTREAM_KEY: is not a key PostHog issues',
    ],
  ])('%s: exit 2 with the same plain text on stderr from the start and from check-config, no JSON', async (_, env, problem) => {
    const given = env(tempDir('config-error-'));
    const start = startProcess(given);
    onTestFinished(() => void start.child.kill('SIGKILL')); // one that started after all is not left running
    const [code] = await start.exited;
    const check = await runCommand(tsxMain('check-config'), given);
    expect([code, check.code]).toEqual([2, 2]);
    expect(start.stderr()).toMatch(/^flag-sidecar: invalid configuration:\n( {2}- [^\n]+\n)+$/);
    expect(start.stderr()).toContain(`\n  - ${problem}`);
    expect(check.stderr).toBe(start.stderr());
    expect(start.logs()).not.toContain('"level":"fatal"');
    expect(start.output() + check.stdout + check.stderr).not.toContain('copiedwithquotes');
  });

  it('a mistyped setting stops the process with exit 2, naming the closest setting and never its value', async () => {
    const proc = startProcess({ FLAG_SIDECAR_POLL_INTERVALL: 'phx_valueneverechoed' });
    const [code] = await proc.exited;
    expect(code).toBe(2);
    expect(proc.output()).toContain('FLAG_SIDECAR_POLL_INTERVALL: not a setting; did you mean FLAG_SIDECAR_POLL_INTERVAL?');
    expect(proc.output()).not.toContain('valueneverechoed');
  });

  it.each([
    ['API', 'FLAG_SIDECAR_LISTEN'],
    ['ops', 'FLAG_SIDECAR_OPS_LISTEN'],
  ])('the %s address in use: exit 1, one line naming it, and nothing ever said ready or listening', async (_, setting) => {
    const taken = createServer();
    taken.listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const { port } = taken.address() as AddressInfo;
    try {
      const proc = startProcess({ [setting]: `127.0.0.1:${port}` });
      const [code] = await proc.exited;
      expect(code).toBe(1);
      expect(proc.stderr()).toBe(`flag-sidecar: failed to start: cannot listen on 127.0.0.1:${port} (${setting}): the address is already in use (another process listens there)\n`);
      expect(proc.logs()).not.toMatch(/\bready\b|listening/);
    } finally {
      taken.close();
    }
  });
});

// What a user runs from a clone. npm runs a script with `sh -c`, and Debian's sh (dash) stays the parent of its
// command: a signal npm forwards to its child reaches only the shell, which dies and leaves the sidecar running.
// The script `exec`s node, so npm's child is the sidecar itself.
describe('npm start', () => {
  it.each([
    ["SIGTERM to npm's PID", (pid: number) => process.kill(pid, 'SIGTERM'), 'SIGTERM'],
    // A terminal's Ctrl-C signals the whole group, and npm forwards its own: the sidecar gets SIGINT twice.
    ['SIGINT to its process group (Ctrl-C)', (pid: number) => process.kill(-pid, 'SIGINT'), 'SIGINT'],
  ])('%s: one graceful drain (the request in flight answered), npm exits 0, nothing left running or listening', async (_, signal, name) => {
    const npm = npmStart({});
    const pid = npm.child.pid as number;
    let tree: number[] = [];
    try {
      const { api, ops } = await npm.listening;
      await waitFor(async () => (await fetch(`${ops}/readyz`)).status === 200, 'readiness', 15_000);
      tree = descendants(pid);
      expect(tree.length).toBeGreaterThan(0);
      // A /flags request in flight: its body half sent when the signal comes. It carries what the example's flags
      // read (the README's request), so the answer is whole and nothing else is logged around the drain.
      const body = JSON.stringify({
        token: exampleToken,
        distinct_id: 'user-1',
        person_properties: { email: 'a@example.com', country: 'US', plan: 'pro', beta_opt_in: true, signup_year: 2021 },
      });
      const conn = await openRaw(api);
      conn.send(rawRequest('GET', '/api/projects/1/feature_flags/local_evaluation/?send_cohorts', bearer(exampleKey)));
      await conn.next();
      conn.send(rawRequest('POST', '/flags?v=2', { 'content-type': 'application/json' }, body).slice(0, -10));
      await sleep(300);
      signal(pid);
      await waitFor(() => npm.stdout().includes('"msg":"shutting down"'), 'the drain to begin', 15_000);
      conn.send(body.slice(-10));
      expect(await conn.next()).toMatchObject({ kind: 'response', status: 200, headers: { connection: 'close' } });
      expect(await npm.exited).toEqual([0, null]);
      const lines = npm.stdout().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; signal?: string });
      expect(lines.filter((l) => l.msg === 'shutting down')).toEqual([expect.objectContaining({ signal: name })]);
      expect(lines.at(-1)?.msg).toBe('flag-sidecar stopped');
      expect([await accepting(api), await accepting(ops)]).toEqual([false, false]);
      expect(tree.filter(running)).toEqual([]);
    } finally {
      if (npm.child.exitCode === null && npm.child.signalCode === null) process.kill(-pid, 'SIGKILL');
      for (const left of [...tree, ...descendants(pid)].filter(running)) process.kill(left, 'SIGKILL');
    }
  }, 30_000);
});
