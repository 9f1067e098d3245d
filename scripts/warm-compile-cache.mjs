// Fill node's module compile cache (NODE_COMPILE_CACHE, Node >= 22.1) for the built sidecar, as the image does at
// build time, so that a pod's start reads V8's code cache for dist/'s modules instead of compiling them from source
// (docs/benchmarks.md as of c3f48ec, "Start-up with the compile cache").
//
// Usage: node scripts/warm-compile-cache.mjs [--as UID:GID] CACHE_DIR [ENTRY]
//
// It starts ENTRY (default dist/main.js beside this script) twice with NODE_COMPILE_CACHE=CACHE_DIR, each time up to
// /readyz answering 200, then stops it with SIGTERM: once offline on the example snapshot, once online against an
// upstream that refuses connections (served from the same snapshot as a bootstrap file), so the modules either mode
// loads are in the cache. The runs bind 127.0.0.1 on ports the system picks and write their snapshots to a scratch
// directory they remove: nothing but CACHE_DIR is left behind. The cache is then made readable by everyone, and
// left owned by the user running this script.
//
// Node keys the cache by its version, V8's flags that change code, and the user id of the process (a subdirectory
// per uid), so it must be warmed by the node binary that will run the sidecar, with the flags it will have
// (NODE_OPTIONS is passed on), as the uid it will run as: `--as UID:GID` runs the two starts as that user (this
// script must then run as root), the cache directory theirs while they write it and root's again afterwards.
// A start under another uid, node or code finds no entry of its own and compiles as if there were no cache.
// Exit 0 when both starts were served and left entries in the cache; 1 otherwise (a build should fail).
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import module from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const fail = (message) => {
  process.stderr.write(`warm-compile-cache: ${message}\n`);
  process.exit(1);
};

const args = process.argv.slice(2);
let as = null;
if (args[0] === '--as') {
  const m = /^(\d+):(\d+)$/.exec(args[1] ?? '');
  if (!m) fail('--as needs UID:GID (numbers)');
  as = { uid: Number(m[1]), gid: Number(m[2]) };
  args.splice(0, 2);
}
if (args.length < 1 || args.length > 2 || args[0].startsWith('-')) fail('usage: node scripts/warm-compile-cache.mjs [--as UID:GID] CACHE_DIR [ENTRY]');
if (typeof module.enableCompileCache !== 'function') fail(`node ${process.version} has no module compile cache (Node >= 22.1 has)`);
if (as && process.getuid?.() !== 0) fail('--as needs root: only root starts processes as another user');

const root = fileURLToPath(new URL('..', import.meta.url));
const cacheDir = resolve(args[0]);
const entry = resolve(root, args[1] ?? 'dist/main.js');
const snapshot = join(root, 'config/snapshot.example.json');
const keys = join(root, 'config/keys.example.json');

/** Start the sidecar with `env`, wait until it is ready, stop it; resolves once it has exited 0. */
function warmOnce(name, env) {
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, [entry, 'serve'], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(as ?? {}),
    });
    let output = '';
    let ops = null;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} start: not ready within 30 s:\n${output.slice(-2000)}`));
    }, 30_000);
    const poll = async () => {
      for (;;) {
        try {
          const res = await fetch(`${ops}/readyz`);
          await res.arrayBuffer();
          if (res.status === 200) return child.kill('SIGTERM');
        } catch {
          /* not answering yet */
        }
        if (child.exitCode !== null) return;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const read = (chunk) => {
      output += chunk.toString('utf8');
      if (ops !== null) return;
      const line = output.split('\n').find((l) => l.includes('"flag-sidecar listening"') && l.includes('"ops"'));
      if (line === undefined) return;
      ops = JSON.parse(line).ops;
      void poll();
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0 && ops !== null) done();
      else reject(new Error(`${name} start exited with ${code ?? signal}:\n${output.slice(-2000)}`));
    });
  });
}

const scratch = mkdtempSync(join(tmpdir(), 'flag-sidecar-warm-'));
try {
  mkdirSync(cacheDir, { recursive: true });
  if (as) {
    chownSync(cacheDir, as.uid, as.gid);
    chownSync(scratch, as.uid, as.gid);
  }
  // Only what the starts need: none of this process's FLAG_SIDECAR_* (an image's snapshot directory must stay empty).
  const base = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    NODE_COMPILE_CACHE: cacheDir,
    ...(process.env.NODE_OPTIONS ? { NODE_OPTIONS: process.env.NODE_OPTIONS } : {}),
    ...(process.env.NODE_ENV ? { NODE_ENV: process.env.NODE_ENV } : {}),
    FLAG_SIDECAR_LISTEN: '127.0.0.1:0',
    FLAG_SIDECAR_OPS_LISTEN: '127.0.0.1:0',
    FLAG_SIDECAR_LOG_LEVEL: 'info',
  };
  await warmOnce('offline', base);
  await warmOnce('online', {
    ...base,
    // Port 9 (discard) on the loopback: refused at once, so the poller retries in the background while the
    // bootstrap file serves. The key is never sent anywhere else.
    FLAG_SIDECAR_UPSTREAM_URL: 'http://127.0.0.1:9',
    FLAG_SIDECAR_UPSTREAM_KEY: 'phx_warm_compile_cache_unused_key',
    FLAG_SIDECAR_PROJECTS: '1:phc_flag_sidecar_example_project',
    FLAG_SIDECAR_BOOTSTRAP_FILE: snapshot,
    FLAG_SIDECAR_KEYS_FILE: keys,
    FLAG_SIDECAR_SNAPSHOT_DIR: scratch,
  });
  const files = [cacheDir, ...readdirSync(cacheDir, { recursive: true }).map((name) => join(cacheDir, name))];
  if (files.length < 3) throw new Error(`${cacheDir} holds no cache entries after two starts (is NODE_COMPILE_CACHE disabled?)`);
  for (const path of files) {
    if (as) chownSync(path, 0, 0);
    chmodSync(path, statSync(path).isDirectory() ? 0o755 : 0o644);
  }
  process.stdout.write(`warm-compile-cache: ${files.length - 1} entries in ${cacheDir} (node ${process.version}${as ? `, uid ${as.uid}` : ''})\n`);
} catch (error) {
  process.stderr.write(`warm-compile-cache: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
