/**
 * The real entry point (`src/main.ts` under tsx, what `npm start` runs) as a child process, for tests of
 * signals, exit codes and crashes: spawnSidecar (spawn-sidecar.ts) with `listening` taken from the JSON
 * "flag-sidecar listening" log line, which also says whether the sidecar was ready when it began to listen.
 */
import { afterEach } from 'vitest';
import { spawnSidecar } from './spawn-sidecar.js';

/** The "flag-sidecar listening" log line. */
export interface ListeningLine {
  api: string;
  ops: string;
  ready: boolean;
}

/**
 * Start `src/main.ts` (or `entry`'s node arguments: built-entry.ts) with `env` (`listening` needs FLAG_SIDECAR_LOG_LEVEL
 * info or lower); kill the child when done with it (tests that expect an early exit need not await `listening`).
 */
export function startProcess(env: Record<string, string>, entry?: readonly string[]) {
  const proc = spawnSidecar(env, entry ? { entry } : {});
  const { child, exited } = proc;
  const listening = new Promise<ListeningLine>((resolve, reject) => {
    const check = (): void => {
      const line = proc.logs().split('\n').find((l) => l.includes('"flag-sidecar listening"'));
      if (line) resolve(JSON.parse(line) as ListeningLine);
    };
    child.stdout.on('data', check);
    void exited.then(() => reject(new Error(`exited before listening: ${proc.logs()}${proc.stderr()}`)));
  });
  listening.catch(() => undefined); // tests that expect an early exit never await it
  return { child, exited, listening, output: () => proc.logs() + proc.stderr(), logs: proc.logs, stderr: proc.stderr };
}

/** SIGKILL every child still running, wait for all to exit, and empty the list (a test's clean-up). */
export async function killAll(children: Array<ReturnType<typeof startProcess>>): Promise<void> {
  for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  await Promise.all(children.map((c) => c.exited));
  children.length = 0;
}

/**
 * What a test file's tests start — sidecar processes and a fake upstream — stopped after each test. Call at the
 * file's top level: `const started = stopAfterEach();` then `started.children.push(proc)`,
 * `const fake = started.upstream(await startFakeUpstream(…))`.
 */
export function stopAfterEach() {
  const children: Array<ReturnType<typeof startProcess>> = [];
  let running: { close(): Promise<void> } | null = null;
  afterEach(async () => {
    await killAll(children);
    await running?.close();
    running = null;
  });
  return {
    children,
    upstream<T extends { close(): Promise<void> }>(upstream: T): T {
      running = upstream;
      return upstream;
    },
  };
}
