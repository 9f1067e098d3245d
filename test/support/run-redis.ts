/**
 * The test run's own Redis: a private `redis-server` on a free 127.0.0.1 port, without persistence, that the
 * tests share (each test on its own key prefix, see redis.ts) and that lives exactly as long as the run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findOnPath } from './find-on-path.js';
import { MissingToolError } from './missing-tool.js';
import { freePort } from './free-port.js';
import { guardAgainstParentDeath, type ParentDeathGuard } from './parent-death-guard.js';
import { redisCall } from './redis-call.js';

/** The one line a run fails with when redis-server is not installed. */
export const redisServerMissing = 'redis-server not found on PATH: install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)';

/** The run's started Redis. */
export interface RunRedis {
  readonly port: number;
  /** redis://127.0.0.1:<port> */
  readonly url: string;
  /** SIGKILL the server and wait until it is gone; idempotent. */
  stop(): Promise<void>;
}

/** Throw a MissingToolError whose message is `redisServerMissing` unless redis-server is on PATH. */
export function requireRedisServer(): void {
  if (findOnPath('redis-server') === null) throw new MissingToolError(redisServerMissing);
}

/**
 * Start redis-server on a free port with `--save '' --appendonly no`, its working dir and log file in `dir`
 * (which must exist), and resolve once it answers PING. It never outlives this process: it is killed on
 * process exit, and a watchdog (parent-death-guard.ts) kills it and removes `removeOnDeath` when this process
 * dies without exiting normally. Rejects with a MissingToolError (`redisServerMissing`) when redis-server is not
 * on PATH, and with the end of its log when it does not come up (a port taken in between is retried with
 * another one, up to 5 times).
 */
export async function startRunRedis(dir: string, removeOnDeath: readonly string[] = []): Promise<RunRedis> {
  requireRedisServer();
  for (let attempt = 1; ; attempt += 1) {
    const port = await freePort();
    const log = join(dir, `redis-${port}.log`);
    const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', log], { stdio: 'ignore' });
    const guard = child.pid === undefined ? null : guardAgainstParentDeath(child.pid, removeOnDeath);
    const onExit = (): void => void child.kill('SIGKILL');
    process.on('exit', onExit);
    const stop = async (): Promise<void> => {
      guard?.release();
      process.off('exit', onExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    };
    if (await answers(port, child)) return { port, url: `redis://127.0.0.1:${port}`, stop };
    await stop();
    const text = existsSync(log) ? readFileSync(log, 'utf8') : '';
    if (attempt < 5 && /address already in use/i.test(text)) continue;
    const last = text.trim().split('\n').slice(-3).join(' | ');
    throw new Error(`the test run's redis-server (port ${port}) did not start: ${last || `no log in ${log}`}`);
  }
}

/** Whether the server on `port` answers PING within 10 s (false at once when `child` exits first). */
async function answers(port: number, child: ChildProcess): Promise<boolean> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) return false;
    const reply = await redisCall(port, 'PING').catch(() => '');
    if (reply.startsWith('+PONG')) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}
