/** Run the `flag-sidecar` command (src/main.ts under tsx, or any node arguments) to its end, as users run it. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { childEnv } from './child-env.js';
import { rootDir } from './start-sidecar.js';

/** How a command ended. */
export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run `node ...command` with only PATH, the run's TMPDIR and `env` in its environment, to its end (killed after 20 s). */
export async function runCommand(command: string[], env: Record<string, string>, cwd = rootDir): Promise<Ran> {
  const child = spawn(process.execPath, command, { cwd, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** The node arguments that run src/main.ts with `args`. */
export const tsxMain = (...args: string[]): string[] => ['--import', 'tsx', 'src/main.ts', ...args];
