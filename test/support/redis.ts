/**
 * Redis for tests. The run's Redis (a private redis-server started for the whole `npm test` run by the
 * globalSetup, global-setup.ts) is shared by the tests, each on a random key prefix removed when the test ends.
 * A test that must kill or pause Redis starts a private `redis-server` on a free port (no persistence) and kills
 * only that one, also when the test ends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { inject, onTestFinished } from 'vitest';
import { freePort } from './free-port.js';
import './provided-context.js';
import { redisCall } from './redis-call.js';

export { freePort } from './free-port.js';
export { redisCall } from './redis-call.js';

/** The port of the run's Redis on 127.0.0.1 (provided by the globalSetup; throws at import without it). */
export const runRedisPort: number = providedRedisPort();

/** The URL of the run's Redis: redis://127.0.0.1:<runRedisPort>. */
export const runRedisUrl = `redis://127.0.0.1:${runRedisPort}`;

function providedRedisPort(): number {
  const port: unknown = inject('runRedisPort');
  if (typeof port !== 'number') throw new Error("the run's Redis was not provided: run the tests with vitest.config.ts (npm test), whose globalSetup (test/support/global-setup.ts) starts it");
  return port;
}

/** A prefix no other test uses; its keys are deleted from the run's Redis when the test ends (call inside a test). */
export function testPrefix(): string {
  const prefix = `fstest-${randomBytes(6).toString('hex')}`;
  onTestFinished(() => deleteKeys(runRedisPort, `${prefix}*`));
  return prefix;
}

async function deleteKeys(port: number, pattern: string): Promise<void> {
  const script = "for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) end return 0";
  await redisCall(port, 'EVAL', script, '0', pattern).catch(() => undefined);
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

/** Start a private redis-server on a free port (with `extraArgs`); killed when the test ends (call inside a test). */
export async function startPrivateRedis(extraArgs: readonly string[] = [], ping = true, atPort?: number): Promise<PrivateRedis> {
  const port = atPort ?? (await freePort());
  let child: ChildProcess | null = null;
  const start = async (): Promise<void> => {
    const args = extraArgs[0]?.endsWith('.conf') ? [...extraArgs, '--port', String(port)] : ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extraArgs];
    child = spawn('redis-server', args, { stdio: 'ignore' });
    const deadline = Date.now() + 10_000;
    for (;;) {
      const reply = await redisCall(port, 'PING').catch(() => '');
      if (reply.startsWith('+PONG') || (!ping && reply !== '')) return;
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

/** Three private redis-servers joined into a Redis Cluster (slots split in three); the URL names the first. */
export async function startPrivateCluster(dir: string, firstPort?: number): Promise<{ url: string; nodes: PrivateRedis[] }> {
  const nodes: PrivateRedis[] = [];
  for (let i = 0; i < 3; i++) {
    const args = ['--cluster-enabled', 'yes', '--cluster-config-file', `${dir}/nodes-${i}.conf`, '--dir', dir];
    nodes.push(await startPrivateRedis(args, true, i === 0 ? firstPort : undefined));
  }
  const ranges = [[0, 5460], [5461, 10922], [10923, 16383]] as const;
  for (const [i, node] of nodes.entries()) {
    const [from, to] = ranges[i] as readonly [number, number];
    await redisCall(node.port, 'CLUSTER', 'ADDSLOTSRANGE', String(from), String(to));
  }
  const first = nodes[0] as PrivateRedis;
  for (const node of nodes.slice(1)) await redisCall(first.port, 'CLUSTER', 'MEET', '127.0.0.1', String(node.port));
  const deadline = Date.now() + 20_000;
  for (;;) {
    const states = await Promise.all(nodes.map((n) => redisCall(n.port, 'CLUSTER', 'INFO')));
    if (states.every((s) => s.includes('cluster_state:ok') && s.includes('cluster_known_nodes:3'))) break;
    if (Date.now() > deadline) throw new Error('the private cluster did not come up');
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url: first.url, nodes };
}

/** A private master and one Sentinel monitoring it as `master`; the URL names the Sentinel. */
export async function startPrivateSentinel(dir: string, master = 'fsmaster'): Promise<{ url: string; master: PrivateRedis; sentinel: PrivateRedis }> {
  const data = await startPrivateRedis();
  const conf = `${dir}/sentinel.conf`;
  writeFileSync(conf, `bind 127.0.0.1\nsentinel monitor ${master} 127.0.0.1 ${data.port} 1\nsentinel down-after-milliseconds ${master} 1000\n`);
  const sentinel = await startPrivateRedis([conf, '--sentinel'], false);
  const deadline = Date.now() + 20_000;
  for (;;) {
    const reply = await redisCall(sentinel.port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', master).catch(() => '');
    if (reply.includes(String(data.port))) break;
    if (Date.now() > deadline) throw new Error('the private sentinel did not come up');
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url: `redis://127.0.0.1:${sentinel.port}`, master: data, sentinel };
}
