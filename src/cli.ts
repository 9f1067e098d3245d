/**
 * The command line (`flag-sidecar`: `npm start -- …` in a clone, the image's entrypoint, the package's bin): which
 * command to run, and the two that are not the server — `check-config` (validate the environment and the files it names, print the effective configuration
 * with secrets masked) and `snapshot pull --out FILE` (the configured projects' definitions from upstream into a
 * snapshot file usable as FLAG_SIDECAR_BOOTSTRAP_FILE). main.ts does the IO of starting and exiting.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseKeysFile } from './auth/keys-file.js';
import type { Config } from './config/load.js';
import { parseHealthOptions } from './health.js';
import type { BuildInfo } from './metrics/metrics.js';
import { writeFileAtomic } from './store/persist.js';
import { serializeSnapshotFile, parseSnapshotFile } from './store/snapshot-file.js';
import { createVariant, emptyProject, withChanges, type ProjectSnapshot } from './store/snapshot.js';
import { upstreamAnswered } from './upstream/error-body.js';
import { parseDefinitions } from './upstream/payload.js';

/** What the command line asks for. */
export type Command =
  | { readonly kind: 'serve' }
  | { readonly kind: 'help' }
  | { readonly kind: 'version' }
  | { readonly kind: 'check-config' }
  | { readonly kind: 'snapshot-pull'; readonly out: string }
  | { readonly kind: 'health'; readonly timeoutMs: number }
  | { readonly kind: 'usage-error'; readonly message: string };

export const helpText = `Usage (flag-sidecar [command] [options]):
  npm start -- [command] [options]        in a clone, after npm ci (npm start -s -- …: npm's own lines off stdout)
  docker run IMAGE [command] [options]    the image (its entrypoint is node dist/main.js)
  node dist/main.js [command] [options]   after npm run build

Commands:
  serve                       run the sidecar (the default)
  check-config                validate the FLAG_SIDECAR_* environment and the files it names; print the
                              effective configuration (secrets masked); exit 2 on a problem
  snapshot pull --out FILE    fetch the configured projects' flag definitions from upstream into FILE, a
                              snapshot file usable as FLAG_SIDECAR_BOOTSTRAP_FILE (offline, air-gapped runs)
  health [--timeout 3s]       ask the running sidecar's ops listener (FLAG_SIDECAR_OPS_LISTEN) for /readyz:
                              exit 0 when ready, 1 when not ready or unreachable (a container HEALTHCHECK)

Options:
  -h, --help                  show this help
  -v, --version               print the version

Configuration is read from the environment only (FLAG_SIDECAR_*; see README.md).
Exit codes: 0 done (serve: after a clean SIGTERM/SIGINT), 1 failed, 2 bad configuration or usage.
`;

/** Parse the arguments after `node main.js` (or `npm start --`). */
export function parseCommand(args: readonly string[]): Command {
  if (args.includes('-h') || args.includes('--help') || args[0] === 'help') return { kind: 'help' };
  if (args.includes('-v') || args.includes('--version') || args[0] === 'version') return { kind: 'version' };
  const [command, ...rest] = args;
  const extra = (list: readonly string[]): Command => ({ kind: 'usage-error', message: `unexpected argument "${list[0]}"` });
  if (command === undefined || command === 'serve') return rest.length > 0 ? extra(rest) : { kind: 'serve' };
  if (command === 'check-config') return rest.length > 0 ? extra(rest) : { kind: 'check-config' };
  if (command === 'health') {
    const options = parseHealthOptions(rest);
    return 'error' in options ? { kind: 'usage-error', message: options.error } : { kind: 'health', timeoutMs: options.timeoutMs };
  }
  if (command === 'snapshot') {
    const [sub, ...options] = rest;
    if (sub !== 'pull') return { kind: 'usage-error', message: sub === undefined ? 'snapshot: say "pull"' : `snapshot: unknown subcommand "${sub}"` };
    let out: string | undefined;
    for (let i = 0; i < options.length; i++) {
      const option = options[i] as string;
      if (option === '--out' || option === '-o') {
        out = options[i + 1];
        i++;
      } else if (option.startsWith('--out=')) out = option.slice('--out='.length);
      else return extra([option]);
    }
    if (out === undefined || out === '') return { kind: 'usage-error', message: 'snapshot pull: --out FILE is required' };
    return { kind: 'snapshot-pull', out };
  }
  return { kind: 'usage-error', message: `unknown command "${command}"` };
}

/**
 * Problems with the files the configuration names (the environment itself was validated by loadConfig): the
 * keys file and bootstrap file must read and parse; the snapshot dir must be writable (or creatable); every
 * project's token must be known or learnable (see check-tokens.ts).
 */
export async function checkFiles(config: Config): Promise<string[]> {
  const problems: string[] = [];
  if (config.keysFile !== null) {
    try {
      parseKeysFile(await readFile(config.keysFile, 'utf8'), config.keysFile);
    } catch (error) {
      problems.push(`FLAG_SIDECAR_KEYS_FILE: ${(error as Error).message}`);
    }
  }
  if (config.bootstrapFile !== null) {
    try {
      const text = await readFile(config.bootstrapFile, 'utf8');
      const single = config.projects?.length === 1 ? (config.projects[0]?.id ?? null) : null;
      parseSnapshotFile(text, { file: config.bootstrapFile, source: 'bootstrap', bareProjectId: single, mtimeMs: Date.now() });
    } catch (error) {
      problems.push(`FLAG_SIDECAR_BOOTSTRAP_FILE: ${(error as Error).message}`);
    }
  }
  if (config.snapshotDir !== null) {
    const problem = await snapshotDirProblem(config.snapshotDir);
    if (problem !== null) problems.push(`FLAG_SIDECAR_SNAPSHOT_DIR: ${problem}`);
  }
  // Loaded here (with undici when upstream is configured), not when main.ts reads the command line.
  const { projectTokenProblems } = await import('./check-tokens.js');
  problems.push(...(await projectTokenProblems(config)));
  if (config.upstream === null && config.bootstrapFile === null && config.snapshotDir === null) {
    problems.push('nothing to serve: offline (no FLAG_SIDECAR_UPSTREAM_URL) and no FLAG_SIDECAR_BOOTSTRAP_FILE or FLAG_SIDECAR_SNAPSHOT_DIR');
  }
  return problems;
}

/**
 * Whether the snapshot dir can be written, tried for real: a temporary file is created and removed in it (in its
 * nearest existing parent when it does not exist yet, as the first save creates it). Permission bits alone do
 * not tell (root passes every access check; a read-only mount or a full disk does not show in them).
 */
export async function snapshotDirProblem(dir: string): Promise<string | null> {
  let target = dir;
  for (;;) {
    try {
      if (!(await stat(target)).isDirectory()) return `${target} is not a directory`;
      break;
    } catch {
      const parent = dirname(target);
      if (parent === target) return `${dir}: no existing parent directory`;
      target = parent; // created at the first save: its nearest existing parent must be writable
    }
  }
  const probe = join(target, `.flag-sidecar-check-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await writeFile(probe, '', { flag: 'wx' });
  } catch (error) {
    return `${target} is not writable (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
  }
  await rm(probe, { force: true });
  return null;
}

/** Why a pull failed, per project. */
export class PullError extends Error {}

/**
 * Fetch each configured project's local_evaluation (with cohorts) with the sidecar's own key and write them, all
 * or nothing, as one snapshot file (written atomically). Returns the projects and their flag counts.
 */
export async function pullSnapshot(config: Config, out: string, build: BuildInfo, now: () => number = Date.now): Promise<Array<{ id: number; flags: number }>> {
  if (config.upstream === null || config.projects === null) {
    throw new PullError('snapshot pull needs FLAG_SIDECAR_UPSTREAM_URL, FLAG_SIDECAR_UPSTREAM_KEY and FLAG_SIDECAR_PROJECTS');
  }
  const { upstream } = config;
  // Loaded here, not with the module: main.ts reads the command line with this file before serving.
  const [{ Registry }, { createMetrics }, { createUpstreamClient }] = await Promise.all([
    import('./metrics/prom.js'),
    import('./metrics/metrics.js'),
    import('./upstream/client.js'),
  ]);
  const client = createUpstreamClient({
    url: upstream.url,
    timeoutMs: upstream.timeoutMs,
    connectTimeoutMs: upstream.connectTimeoutMs,
    maxBodyBytes: upstream.maxBodyBytes,
    userAgent: `flag-sidecar/${build.version}`,
    metrics: createMetrics(new Registry(), build),
  });
  try {
    const projects = await Promise.all(
      config.projects.map(async (project): Promise<ProjectSnapshot> => {
        const result = await client.request({
          operation: 'local_evaluation',
          method: 'GET',
          path: `/api/projects/${project.id}/feature_flags/local_evaluation/?send_cohorts`,
          headers: { authorization: `Bearer ${upstream.key}`, accept: 'application/json' },
        });
        if (result.kind === 'failure') throw new PullError(`project ${project.id}: no answer from upstream (${result.cause}: ${result.message})`);
        if (result.status !== 200) throw new PullError(`project ${project.id}: ${upstreamAnswered(result.status, result.body)}`);
        const parsed = parseDefinitions(result.body);
        if (!parsed.ok) throw new PullError(`project ${project.id}: unusable body: ${parsed.error}`);
        const etag = result.headers.etag;
        const cohorts = createVariant({
          body: result.body,
          definitions: parsed.value,
          upstreamEtag: typeof etag === 'string' ? etag : null,
          fetchedAt: now(),
          source: 'upstream',
        });
        return withChanges(emptyProject(project.id, project.token), { cohorts });
      }),
    );
    await writeFileAtomic(out, serializeSnapshotFile(projects, now()));
    return projects.map((p) => ({ id: p.projectId, flags: p.cohorts?.definitions.flags.length ?? 0 }));
  } finally {
    await client.close();
  }
}
