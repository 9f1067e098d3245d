/**
 * The real entry point (`src/main.ts` under tsx, what `npm start` runs) as a child process, for tests of
 * signals, exit codes and crashes. Listeners default to 127.0.0.1:0; the environment is only what is given
 * (plus PATH). Output is captured; `listening` resolves with the "flag-sidecar listening" log line.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rootDir } from './start-sidecar.js';

/** The "flag-sidecar listening" log line. */
export interface ListeningLine {
  api: string;
  ops: string;
  ready: boolean;
}

/** Start `src/main.ts` with `env` (`listening` needs FLAG_SIDECAR_LOG_LEVEL info or lower); kill the child when done with it (tests that expect an early exit need not await `listening`). */
export function startProcess(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: rootDir,
    env: { PATH: process.env.PATH ?? '', FLAG_SIDECAR_LISTEN: '127.0.0.1:0', FLAG_SIDECAR_OPS_LISTEN: '127.0.0.1:0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const listening = new Promise<ListeningLine>((resolve, reject) => {
    const check = (): void => {
      const line = stdout.split('\n').find((l) => l.includes('"flag-sidecar listening"'));
      if (line) resolve(JSON.parse(line) as ListeningLine);
    };
    child.stdout.on('data', check);
    void exited.then(() => reject(new Error(`exited before listening: ${stdout}${stderr}`)));
  });
  listening.catch(() => undefined); // tests that expect an early exit never await it
  return { child, exited, listening, output: () => stdout + stderr, logs: () => stdout };
}
