/**
 * Redis for tests. The shared server (127.0.0.1:6379, run by the machine and by CI) is used with a random key
 * prefix per test, removed when the test ends. A test that must kill or pause Redis starts a private
 * `redis-server` on a free port (no persistence) and kills only that one, also when the test ends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, createConnection } from 'node:net';
import { onTestFinished } from 'vitest';

/** The shared Redis of these machines and CI. */
export const sharedRedisUrl = 'redis://127.0.0.1:6379';

/** A prefix no other test uses; its keys are deleted when the test ends (call inside a test). */
export function testPrefix(): string {
  const prefix = `fstest-${randomBytes(6).toString('hex')}`;
  onTestFinished(() => deleteKeys(6379, `${prefix}*`));
  return prefix;
}

/** Send raw RESP commands to `port` and resolve with the raw reply text (enough for tests' housekeeping). */
export function redisCall(port: number, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    const payload = `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
    let reply = '';
    socket.setTimeout(2000, () => socket.destroy(new Error('redis call timed out')));
    socket.on('connect', () => socket.write(payload));
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8');
      if (reply.endsWith('\r\n')) socket.end();
    });
    socket.on('close', () => resolve(reply));
    socket.on('error', reject);
  });
}

async function deleteKeys(port: number, pattern: string): Promise<void> {
  const script = "for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) end return 0";
  await redisCall(port, 'EVAL', script, '0', pattern).catch(() => undefined);
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** A private redis-server. */
export interface PrivateRedis {
  readonly port: number;
  readonly url: string;
  /** kill -9 the server (no-op when not running). */
  kill(): Promise<void>;
  /** Start it again on the same port (empty: no persistence). */
  restart(): Promise<void>;
  /** SIGSTOP / SIGCONT: a server that accepts connections but answers nothing. */
  pause(): void;
  resume(): void;
}

/** Start a private redis-server on a free port; killed when the test ends (call inside a test). */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async (): Promise<void> => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const deadline = Date.now() + 10_000;
    for (;;) {
      const reply = await redisCall(port, 'PING').catch(() => '');
      if (reply.startsWith('+PONG')) return;
      if (Date.now() > deadline) throw new Error(`private redis-server on ${port} did not start`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const kill = async (): Promise<void> => {
    const running = child;
    child = null;
    if (running === null || running.exitCode !== null) return;
    running.kill('SIGCONT');
    const exited = new Promise((r) => running.once('exit', r));
    running.kill('SIGKILL');
    await exited;
  };
  await start();
  onTestFinished(kill);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    kill,
    restart: start,
    pause: () => void child?.kill('SIGSTOP'),
    resume: () => void child?.kill('SIGCONT'),
  };
}
