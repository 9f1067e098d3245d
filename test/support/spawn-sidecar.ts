/**
 * The real entry point (src/main.ts) as a child process, for tests and scripts about signals, exit codes and
 * what the process writes: stdout is the JSON log stream, stderr the human-readable banner.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { childEnv } from './child-env.js';
import { rootDir } from './start-sidecar.js';

/** A started sidecar process. */
export interface SidecarProcess {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  /** Exit code and signal, once it exited. */
  readonly exited: Promise<[number | null, NodeJS.Signals | null]>;
  /** The API and ops URLs once listening. */
  readonly listening: Promise<{ api: string; ops: string }>;
  /** Everything read from stdout so far (empty when stdout was dropped). */
  logs(): string;
  /** Parsed JSON log lines so far. */
  logLines(): Array<Record<string, unknown>>;
  stderr(): string;
}

/**
 * Start `src/main.ts` with `env` (listeners on 127.0.0.1:0 unless given). `stdout: 'dropped'` closes the read
 * end of the stdout pipe at once, as a log shipper that died leaves it: every write gets EPIPE. The URLs come
 * from the "flag-sidecar listening" log line on stdout; with stdout not read, `env` must give both listeners a
 * port (see free-port.ts), and they are known listening once the ops one answers /healthz. `entry`: other node
 * arguments to start it with (built-entry.ts's build).
 */
export function spawnSidecar(env: Record<string, string>, options: { stdout?: 'read' | 'dropped' | 'blocked'; entry?: readonly string[] } = {}): SidecarProcess {
  const reading = options.stdout === undefined || options.stdout === 'read';
  if (!reading && (env.FLAG_SIDECAR_LISTEN === undefined || env.FLAG_SIDECAR_OPS_LISTEN === undefined)) {
    throw new Error('spawnSidecar: with stdout not read, give FLAG_SIDECAR_LISTEN and FLAG_SIDECAR_OPS_LISTEN a port');
  }
  const child = spawn(process.execPath, options.entry ?? ['--import', 'tsx', 'src/main.ts'], {
    cwd: rootDir,
    env: childEnv({ FLAG_SIDECAR_LISTEN: '127.0.0.1:0', FLAG_SIDECAR_OPS_LISTEN: '127.0.0.1:0', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  if (options.stdout === 'dropped') child.stdout.destroy();
  else if (options.stdout === 'blocked') child.stdout.pause(); // never read: once the pipe is full, writes wait
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const listening = new Promise<{ api: string; ops: string }>((resolve, reject) => {
    void exited.then(() => reject(new Error(`exited before listening: ${stdout}${stderr}`)));
    if (reading) {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const line = stdout.split('\n').find((l) => l.includes('"flag-sidecar listening"'));
        if (line) resolve(JSON.parse(line) as { api: string; ops: string });
      });
      return;
    }
    const urls = { api: `http://${env.FLAG_SIDECAR_LISTEN}`, ops: `http://${env.FLAG_SIDECAR_OPS_LISTEN}` };
    const poll = (): void => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      fetch(`${urls.ops}/healthz`).then(
        (res) => (res.status === 200 ? resolve(urls) : setTimeout(poll, 20)),
        () => setTimeout(poll, 20),
      );
    };
    poll();
  });
  listening.catch(() => undefined); // a test expecting an early exit never awaits it
  const logLines = (): Array<Record<string, unknown>> =>
    stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { child, exited, listening, logs: () => stdout, logLines, stderr: () => stderr };
}
