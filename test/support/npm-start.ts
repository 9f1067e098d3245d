/**
 * `npm start` as a user runs it from a clone, as a child process in a process group of its own (as a terminal
 * runs a job), for tests of what a signal to its PID or to its group does. The listeners' URLs come from the
 * "flag-sidecar listening" log line on stdout (npm's own header lines come before it).
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { rootDir } from './start-sidecar.js';

/** A started `npm start`. */
export interface NpmStart {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  /** npm's exit code and signal, once it exited. */
  readonly exited: Promise<[number | null, NodeJS.Signals | null]>;
  /** The API and ops URLs once the sidecar listens. */
  readonly listening: Promise<{ api: string; ops: string }>;
  stdout(): string;
  stderr(): string;
}

/**
 * Run `npm start -- ...args` (`silent`: `npm start -s -- ...args`, without npm's own lines on stdout) with PATH,
 * HOME and `env` (listeners on 127.0.0.1:0 unless given).
 */
export function npmStart(env: Record<string, string>, args: readonly string[] = [], silent = false): NpmStart {
  const child = spawn('npm', ['start', ...(silent ? ['-s'] : []), ...(args.length > 0 ? ['--', ...args] : [])], {
    cwd: rootDir,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', FLAG_SIDECAR_LISTEN: '127.0.0.1:0', FLAG_SIDECAR_OPS_LISTEN: '127.0.0.1:0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const listening = new Promise<{ api: string; ops: string }>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split('\n').find((l) => l.startsWith('{') && l.includes('"flag-sidecar listening"'));
      if (line) resolve(JSON.parse(line) as { api: string; ops: string });
    });
    void exited.then(() => reject(new Error(`exited before listening: ${stdout}${stderr}`)));
  });
  listening.catch(() => undefined); // a test expecting an early exit never awaits it
  return { child, exited, listening, stdout: () => stdout, stderr: () => stderr };
}
