/**
 * Sidecar processes (dist/main.js) for the fleet benchmarks (fleet.ts, fleet-scale.ts): started on fixed ports
 * from `basePort` (API on basePort + 2 × index, ops one above), polling project 1 of a stand-in upstream.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
/** The key and token the benchmarks' sidecars use. */
export const ownKey = 'phs_benchown';
export const token = 'phc_bench';

/** One sidecar process. */
export interface Sidecar {
  child: ChildProcess;
  api: string;
  ops: string;
}

/** Start sidecar `index` polling `upstream` with `env` on top of the common settings. */
export function startSidecarProcess(index: number, basePort: number, upstream: string, env: Record<string, string | undefined>): Sidecar {
  const api = basePort + 2 * index;
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'ignore'],
    env: {
      ...process.env,
      FLAG_SIDECAR_UPSTREAM_URL: upstream,
      FLAG_SIDECAR_UPSTREAM_KEY: ownKey,
      FLAG_SIDECAR_PROJECTS: `1:${token}`,
      FLAG_SIDECAR_LISTEN: `127.0.0.1:${api}`,
      FLAG_SIDECAR_OPS_LISTEN: `127.0.0.1:${api + 1}`,
      FLAG_SIDECAR_LOG_LEVEL: 'warn',
      ...env,
    },
  });
  return { child, api: `http://127.0.0.1:${api}`, ops: `http://127.0.0.1:${api + 1}` };
}

/** kill -9 every sidecar still running and wait for each to exit. */
export async function stopAll(sidecars: readonly Sidecar[]): Promise<void> {
  await Promise.all(
    sidecars.map(async (s) => {
      if (s.child.exitCode !== null || s.child.signalCode !== null) return;
      s.child.kill('SIGKILL');
      await once(s.child, 'exit');
    }),
  );
}
