/**
 * The `flag-sidecar` command as users run it: `--help`, `--version`, `check-config`, `snapshot pull` against the
 * fake upstream (and the pulled file served offline), and the built `dist/` entry point — what the image runs —
 * compiled into a scratch directory here so the test never depends on a stale build.
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import nodeModule from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childEnv } from '../support/child-env.js';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { bearer, exampleDefinitions, exampleKey, upstreamKey } from '../support/fixtures.js';
import { npmStart } from '../support/npm-start.js';
import { runCommand, tsxMain } from '../support/run-command.js';
import { rootDir } from '../support/start-sidecar.js';

const scratch = mkdtempSync(join(tmpdir(), 'flag-sidecar-cli-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('flag-sidecar (src/main.ts)', () => {
  it('prints help and version, and refuses unknown commands with exit 2', async () => {
    const help = await runCommand(tsxMain('--help'), {});
    expect([help.code, help.stdout]).toEqual([0, expect.stringContaining('snapshot pull --out FILE')]);
    const version = await runCommand(tsxMain('--version'), { FLAG_SIDECAR_BUILD_VERSION: '9.9.9', FLAG_SIDECAR_BUILD_COMMIT: 'abc123' });
    expect([version.code, version.stdout]).toEqual([0, `flag-sidecar 9.9.9 (commit abc123, node ${process.version})\n`]);
    const unknown = await runCommand(tsxMain('frobnicate'), {});
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringContaining('unknown command "frobnicate"')]);
  });

  it('check-config: prints the effective configuration with the key masked; exit 2 naming each problem', async () => {
    const secret = 'phx_supersecretvalue0123456789';
    const good = await runCommand(tsxMain('check-config'), {
      FLAG_SIDECAR_UPSTREAM_URL: 'http://127.0.0.1:9',
      FLAG_SIDECAR_UPSTREAM_KEY: secret,
      FLAG_SIDECAR_PROJECTS: '1:phc_one',
    });
    expect(good.code).toBe(0);
    // Every setting by its variable's name, as it would be written (src/config/describe.ts).
    const shown = JSON.parse(good.stdout) as Record<string, string | null>;
    expect(shown).toMatchObject({
      FLAG_SIDECAR_UPSTREAM_URL: 'http://127.0.0.1:9',
      FLAG_SIDECAR_UPSTREAM_KEY: `phx_… (${secret.length} characters, masked)`,
      FLAG_SIDECAR_PROJECTS: '1:phc_one',
      FLAG_SIDECAR_EVENTS_URL: 'http://127.0.0.1:9',
      FLAG_SIDECAR_UPSTREAM_TIMEOUT: '10s',
      FLAG_SIDECAR_OFREP_REQUIRE_KEY: null,
      FLAG_SIDECAR_FLAGS_ANSWER_CACHE_MAX_BYTES: '8MiB',
      FLAG_SIDECAR_STATIC_COHORT_MAX_PERSONS: '10000',
    });
    expect(Object.keys(shown).every((name) => name.startsWith('FLAG_SIDECAR_'))).toBe(true);
    expect(good.stdout + good.stderr).not.toContain('supersecret');

    const badEnv = await runCommand(tsxMain('check-config'), { FLAG_SIDECAR_UPSTREAM_URL: 'http://127.0.0.1:9', FLAG_SIDECAR_POLL_INTERVAL: 'often' });
    expect(badEnv.code).toBe(2);
    expect(badEnv.stderr).toContain('FLAG_SIDECAR_POLL_INTERVAL');
    expect(badEnv.stderr).toContain('FLAG_SIDECAR_UPSTREAM_KEY: required');

    const notJson = join(scratch, 'not-json.json');
    writeFileSync(notJson, '{"flags": [');
    const badFiles = await runCommand(tsxMain('check-config'), {
      FLAG_SIDECAR_BOOTSTRAP_FILE: notJson,
      FLAG_SIDECAR_KEYS_FILE: join(scratch, 'missing-keys.json'),
      FLAG_SIDECAR_SNAPSHOT_DIR: notJson,
    });
    expect(badFiles.code).toBe(2);
    expect(badFiles.stderr).toContain('FLAG_SIDECAR_BOOTSTRAP_FILE:');
    expect(badFiles.stderr).toContain('FLAG_SIDECAR_KEYS_FILE:');
    expect(badFiles.stderr).toContain(`FLAG_SIDECAR_SNAPSHOT_DIR: ${notJson} is not a directory`);
  });

  it('runs from a clone after npm ci as its help says: npm start -- <command> (-s: only the command on stdout)', async () => {
    const run = async (args: string[], env: Record<string, string> = {}, silent = true) => {
      const npm = npmStart(env, args, silent);
      const [code] = await npm.exited;
      return { code, stdout: npm.stdout(), stderr: npm.stderr() };
    };
    const help = await run(['--help'], {}, false);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('> exec node --import tsx src/main.ts --help'); // npm's own lines, without -s
    expect(help.stdout).toContain('  npm start -- [command] [options]        in a clone, after npm ci');
    const version = await run(['--version']);
    const { version: ours } = JSON.parse(readFileSync(join(rootDir, 'package.json'), 'utf8')) as { version: string };
    expect([version.code, version.stdout]).toEqual([0, `flag-sidecar ${ours} (commit unknown, node ${process.version})\n`]);
    const check = await run(['check-config']);
    expect([check.code, check.stderr]).toEqual([0, 'flag-sidecar: configuration OK\n']);
    expect(JSON.parse(check.stdout)).toMatchObject({ FLAG_SIDECAR_BOOTSTRAP_FILE: join(rootDir, 'config/snapshot.example.json') });
    const health = await run(['health', '--timeout', '1s'], { FLAG_SIDECAR_OPS_LISTEN: '127.0.0.1:9' });
    expect([health.code, health.stderr]).toEqual([1, expect.stringContaining('flag-sidecar: unreachable: http://127.0.0.1:9/readyz')]);
    const pull = await run(['snapshot', 'pull', '--out', join(scratch, 'from-npm.json')]);
    expect([pull.code, pull.stderr]).toEqual([1, expect.stringContaining('snapshot pull needs FLAG_SIDECAR_UPSTREAM_URL')]);
  }, 60_000);

  describe('snapshot pull', () => {
    let upstream: FakeUpstream;
    beforeAll(async () => {
      upstream = await startFakeUpstream({
        projects: {
          1: { token: 'phc_pullone', definitions: exampleDefinitions() },
          2: { token: 'phc_pulltwo', definitions: { flags: [{ id: 9, key: 'solo', active: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } }], group_type_mapping: {}, cohorts: {} } },
        },
        keys: [upstreamKey],
        personalKeys: { phx_allscopes0123: { scopes: ['*'] } },
      });
    });
    afterAll(() => upstream.close());
    const env = (): Record<string, string> => ({
      FLAG_SIDECAR_UPSTREAM_URL: upstream.url,
      FLAG_SIDECAR_UPSTREAM_KEY: upstreamKey,
      FLAG_SIDECAR_PROJECTS: '1:phc_pullone,2:phc_pulltwo',
    });

    it('check-config refuses a project whose token cannot be learned with the key (exit 2, naming the fix), accepts one it can', async () => {
      const refused = await runCommand(tsxMain('check-config'), { ...env(), FLAG_SIDECAR_PROJECTS: '1,2:phc_pulltwo' });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('project 1 has no token, and a project secret key cannot read it');
      expect(refused.stderr).toContain('FLAG_SIDECAR_PROJECTS as 1:phc_…');
      const learnable = await runCommand(tsxMain('check-config'), { ...env(), FLAG_SIDECAR_UPSTREAM_KEY: 'phx_allscopes0123', FLAG_SIDECAR_PROJECTS: '1' });
      expect([learnable.code, learnable.stderr]).toEqual([0, 'flag-sidecar: configuration OK\n']);
    });

    it('writes every project into one file that an offline sidecar then serves byte for byte', async () => {
      const out = join(scratch, 'pulled.json');
      const pulled = await runCommand(tsxMain('snapshot', 'pull', '--out', out), env());
      expect([pulled.code, pulled.stderr]).toEqual([0, `flag-sidecar: wrote ${out}: project 1 (7 flags), project 2 (1 flags)\n`]);
      const file = JSON.parse(readFileSync(out, 'utf8')) as { flag_sidecar_snapshot: number; projects: Array<{ project_id: number; token: string }> };
      expect(file.flag_sidecar_snapshot).toBe(1);
      expect(file.projects.map((p) => [p.project_id, p.token])).toEqual([
        [1, 'phc_pullone'],
        [2, 'phc_pulltwo'],
      ]);
      expect(readFileSync(out, 'utf8')).not.toContain(upstreamKey);

      // Served offline from that file: the same bytes upstream sent.
      const direct = await fetch(`${upstream.url}/api/projects/1/feature_flags/local_evaluation/?send_cohorts`, { headers: bearer(upstreamKey) });
      const expected = await direct.text();
      const check = await runCommand(tsxMain('check-config'), { FLAG_SIDECAR_BOOTSTRAP_FILE: out });
      expect(check.code).toBe(0);
      // With a bootstrap file of one's own the example keys are not implied: named explicitly here.
      const served = await serveOnce(tsxMain(), { FLAG_SIDECAR_BOOTSTRAP_FILE: out, FLAG_SIDECAR_KEYS_FILE: 'config/keys.example.json' }, '/api/projects/1/feature_flags/local_evaluation/?send_cohorts');
      expect([served.status, served.text]).toEqual([200, expected]);
    });

    it('writes nothing and exits 1 when any project fails, naming it; usage errors exit 2', async () => {
      const out = join(scratch, 'never.json');
      upstream.setMode({ kind: 'status', status: 503, body: '{"detail":"down"}' });
      const failed = await runCommand(tsxMain('snapshot', 'pull', `--out=${out}`), env());
      upstream.setMode({ kind: 'normal' });
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(/snapshot pull failed: project \d: upstream answered 503/);
      expect(() => readFileSync(out)).toThrow();
      const offline = await runCommand(tsxMain('snapshot', 'pull', '--out', out), {});
      expect([offline.code, offline.stderr]).toEqual([1, expect.stringContaining('needs FLAG_SIDECAR_UPSTREAM_URL')]);
      const noOut = await runCommand(tsxMain('snapshot', 'pull'), env());
      expect([noOut.code, noOut.stderr]).toEqual([2, expect.stringContaining('--out FILE is required')]);
    });
  });
});

/** Start `command` serving (ports chosen by the OS), GET `path` with the example key, stop it (exit 0 expected). */
async function serveOnce(command: string[], env: Record<string, string>, path: string, cwd = rootDir): Promise<{ status: number; text: string; stderr: string }> {
  const child = spawn(process.execPath, command, {
    cwd,
    env: childEnv({ FLAG_SIDECAR_LISTEN: '127.0.0.1:0', FLAG_SIDECAR_OPS_LISTEN: '127.0.0.1:0', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit') as Promise<[number | null]>;
  try {
    const { api, ops } = await new Promise<{ api: string; ops: string }>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const line = stdout.split('\n').find((l) => l.includes('"flag-sidecar listening"'));
        if (line) resolve(JSON.parse(line) as { api: string; ops: string });
      });
      void exited.then(() => reject(new Error(`exited before listening: ${stdout}${stderr}`)));
    });
    expect((await fetch(`${ops}/readyz`)).status).toBe(200);
    const response = await fetch(`${api}${path}`, { headers: bearer(exampleKey) });
    return { status: response.status, text: await response.text(), stderr };
  } finally {
    child.kill('SIGTERM');
    const [code] = await exited;
    expect(code).toBe(0);
  }
}

describe('the built entry point (dist/main.js, what the image runs)', () => {
  const app = join(scratch, 'app');
  beforeAll(() => {
    // A copy of the package as the image holds it: dist/, package.json, config/ (examples), node_modules.
    execFileSync(process.execPath, [join(rootDir, 'scripts/build.mjs'), join(app, 'dist')], {
      cwd: rootDir,
      stdio: 'inherit',
    });
    cpSync(join(rootDir, 'package.json'), join(app, 'package.json'));
    cpSync(join(rootDir, 'config'), join(app, 'config'), { recursive: true });
    cpSync(join(rootDir, 'scripts/warm-compile-cache.mjs'), join(app, 'scripts/warm-compile-cache.mjs'));
    symlinkSync(join(rootDir, 'node_modules'), join(app, 'node_modules'));
  }, 60_000);

  it('--version, check-config with a bad environment (exit 2, a clear message), and serve offline answering /readyz', async () => {
    const version = await runCommand(['dist/main.js', '--version'], {}, app);
    expect([version.code, version.stdout]).toEqual([0, expect.stringMatching(/^flag-sidecar \d+\.\d+\.\d+ \(commit unknown, node v\d+/)]);
    const bad = await runCommand(['dist/main.js', 'check-config'], { FLAG_SIDECAR_LISTEN: 'localhost:notaport' }, app);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^flag-sidecar: invalid configuration:\n {2}- FLAG_SIDECAR_LISTEN/);
    const served = await serveOnce(['dist/main.js', 'serve'], {}, '/api/projects/1/feature_flags/local_evaluation/?send_cohorts', app);
    expect(served.status).toBe(200);
    expect(JSON.parse(served.text)).toEqual(exampleDefinitions());
  }, 30_000);

  it('serves offline without loading a file of node_modules: its dependencies are bundled in its chunks', async () => {
    // Resolved by node file by file (~50 CommonJS files of pino and prom-client), they made node's own path
    // functions hot enough at start for V8 to optimize them: its optimizing compiler paged into an idle process.
    const file = join(scratch, 'built-loaded.txt');
    const env = { NODE_OPTIONS: `--import ${join(rootDir, 'test/support/loaded-modules.mjs')}`, LOADED_MODULES_FILE: file };
    const served = await serveOnce(['dist/main.js', 'serve'], env, '/api/projects/1/feature_flags/local_evaluation/?send_cohorts', app);
    expect(served.status).toBe(200);
    const loaded = readFileSync(file, 'utf8').split('\n');
    expect(loaded.some((url) => url.startsWith(`file://${app}/dist/`))).toBe(true);
    // node_modules is a link to the checkout's: either path.
    expect(loaded.filter((url) => url.includes('/node_modules/'))).toEqual([]);
  }, 30_000);

  it('evaluates node-http.ts first: its V8 flag must precede the emitters of the start (src/http/node-http.ts)', () => {
    const dist = join(app, 'dist');
    const relativeImports = (file: string): string[] => [...readFileSync(join(dist, file), 'utf8').matchAll(/^import[^'"]*["']\.\/([^'"]+)["']/gm)].map((m) => m[1] as string);
    const first = relativeImports('main.js')[0] as string;
    expect(readFileSync(join(dist, first), 'utf8')).toContain("--max-valid-polymorphic-map-count=16");
    // Nothing of the sidecar's is evaluated before it: the chunk imports no other chunk.
    expect(relativeImports(first)).toEqual([]);
  });

  it('scripts/warm-compile-cache.mjs fills the compile cache a start then reads, read-only (the image, built)', async () => {
    const cache = join(scratch, 'compile-cache');
    const warm = await runCommand(['scripts/warm-compile-cache.mjs', cache], {}, app);
    if (typeof (nodeModule as { enableCompileCache?: unknown }).enableCompileCache !== 'function') {
      // Node 20: no compile cache; the image's Node has one (a build there would fail here, not silently skip).
      expect([warm.code, warm.stderr]).toEqual([1, expect.stringContaining(`node ${process.version} has no module compile cache`)]);
      return;
    }
    expect(warm.code, warm.stderr).toBe(0);
    const entries = (): string[] => readdirSync(cache, { recursive: true }).map(String).sort();
    const before = entries();
    // One directory per node, V8 flags and uid; in it an entry per module (dist/'s chunks, and undici for online).
    expect(before.filter((e) => !e.includes('/'))).toEqual([expect.stringMatching(new RegExp(`^${process.version}-.*-${process.getuid?.() ?? 0}$`))]);
    expect(before.length).toBeGreaterThan(30);
    for (const entry of before) expect(statSync(join(cache, entry)).mode & 0o777, entry).toBe(statSync(join(cache, entry)).isDirectory() ? 0o755 : 0o644);
    const env = { NODE_COMPILE_CACHE: cache, NODE_COMPILE_CACHE_READONLY: '1', NODE_DEBUG_NATIVE: 'COMPILE_CACHE' };
    const served = await serveOnce(['dist/main.js', 'serve'], env, '/api/projects/1/feature_flags/local_evaluation/?send_cohorts', app);
    expect(served.status).toBe(200);
    const accepted = [...served.stderr.matchAll(/V8 code cache for ESM file:\/\/(\S+) was accepted/g)].map((m) => (m[1] as string).slice(app.length + 1));
    expect(accepted).toContain('dist/main.js');
    expect(accepted.some((file) => /^dist\/app-\w+\.js$/.test(file))).toBe(true);
    expect(served.stderr).not.toMatch(/V8 code cache for .* was rejected/);
    expect(entries()).toEqual(before);

    // Refused plainly: a bad --as, and --as when not root (only root starts processes as another user).
    const badAs = await runCommand(['scripts/warm-compile-cache.mjs', '--as', 'nobody', cache], {}, app);
    expect([badAs.code, badAs.stderr]).toEqual([1, 'warm-compile-cache: --as needs UID:GID (numbers)\n']);
    if (process.getuid?.() !== 0) {
      const notRoot = await runCommand(['scripts/warm-compile-cache.mjs', '--as', '65534:65534', cache], {}, app);
      expect([notRoot.code, notRoot.stderr]).toEqual([1, expect.stringContaining('--as needs root')]);
      return;
    }
    // As root (CI): the starts run as the given user, whose cache directory it is; the files are root's.
    chmodSync(scratch, 0o755);
    const other = join(scratch, 'compile-cache-as');
    const as = await runCommand(['scripts/warm-compile-cache.mjs', '--as', '65534:65534', other], {}, app);
    expect(as.code, as.stderr).toBe(0);
    const [dir] = readdirSync(other);
    expect(dir).toMatch(/-65534$/);
    expect([statSync(join(other, dir as string)).uid, statSync(other).uid]).toEqual([0, 0]);
    expect(readdirSync(join(other, dir as string)).length).toBeGreaterThan(30);
  }, 60_000);

  it('writes every chunk in ASCII (V8 holds a module source with one other character at two bytes a character)', () => {
    const chunks = readdirSync(join(app, 'dist')).filter((name) => name.endsWith('.js'));
    expect(chunks.length).toBeGreaterThan(1);
    const other = chunks.filter((name) => /[^\x00-\x7f]/.test(readFileSync(join(app, 'dist', name), 'utf8')));
    expect(other).toEqual([]);
  });
});
