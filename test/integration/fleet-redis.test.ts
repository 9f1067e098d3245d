/**
 * The fleet's Redis client against real servers: commands and binary replies on the run's Redis; on a private
 * one, a killed server fails commands at once and is rejoined by itself, and a paused (hung) server fails every
 * command within the timeout and is reported down; one connection both subscribes and runs commands; answers
 * stand for pings (a ping only when idle), and one timed-out command does not mark Redis down.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parseRedisUrl, redactRedisUrl } from '../../src/config/parsers.js';
import { reconnectDelay, RedisUnavailableError, type FleetRedis } from '../../src/fleet/redis.js';
import { freePort, redisCall, runRedisPort, runRedisUrl, startPrivateRedis, testPrefix } from '../support/redis.js';
import { fleetRedisClient } from '../support/fleet-redis-client.js';
import { waitFor } from '../support/start-sidecar.js';

const connect = (url: string, timeoutMs = 200): FleetRedis => fleetRedisClient(url, { timeoutMs });

/** Calls of `command` on the Redis at `port` so far (INFO commandstats). */
const calls = async (port: number, command: string): Promise<number> =>
  Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(await redisCall(port, 'INFO', 'commandstats'))?.[1] ?? 0);

describe('fleet redis client', () => {
  it('runs commands with binary-safe replies and delivers published messages', async () => {
    const prefix = testPrefix();
    const redis = connect(runRedisUrl);
    await waitFor(() => redis.up(), 'redis up');
    const bytes = Buffer.from([0, 255, 10, 13, 0x80]);
    expect(await redis.command('set', ['SET', `${prefix}:k`, bytes])).toBe('OK');
    expect(await redis.command('get', ['GET', `${prefix}:k`], true)).toEqual(bytes);
    expect(await redis.command('get', ['GET', `${prefix}:missing`], true)).toBeNull();
    const received: string[] = [];
    await redis.subscribe(`${prefix}:ch`, (m) => received.push(m.toString()));
    await redis.publish(`${prefix}:ch`, 'hello');
    await waitFor(() => received.length === 1, 'message received');
    expect(received).toEqual(['hello']);
  });

  it('fails at once while the server is gone, and is back by itself when it returns', async () => {
    const server = await startPrivateRedis();
    const redis = connect(server.url);
    await waitFor(() => redis.up(), 'redis up');
    await server.kill();
    await waitFor(() => !redis.up(), 'redis down');
    const started = Date.now();
    await expect(redis.command('get', ['GET', 'x'])).rejects.toBeInstanceOf(RedisUnavailableError);
    expect(Date.now() - started).toBeLessThan(100);
    await server.restart();
    await waitFor(() => redis.up(), 'redis up again', 15_000);
    expect(await redis.command('set', ['SET', 'x', '1'])).toBe('OK');
  });

  it('keeps a subscription made while Redis was down, and tells onReady listeners when it comes', async () => {
    const port = await freePort();
    const redis = connect(`redis://127.0.0.1:${port}`);
    const received: string[] = [];
    let readies = 0;
    redis.onReady(() => void (readies += 1));
    await redis.subscribe('notices', (m) => received.push(m.toString()));
    const server = await startPrivateRedis([], true, port);
    await waitFor(() => redis.up(), 'redis up', 15_000);
    expect(readies).toBe(1);
    await waitFor(async () => {
      await redis.publish('notices', 'hello');
      return received.length > 0;
    }, 'message received');
    await server.kill();
    await waitFor(() => !redis.up(), 'redis down');
    await server.restart();
    await waitFor(() => redis.up(), 'redis up again', 15_000);
    expect(readies).toBe(2);
    const before = received.length;
    await waitFor(async () => {
      await redis.publish('notices', 'again');
      return received.length > before;
    }, 'message received after the restart');
    // One subscription, not one per connection: a message arrives once.
    await redis.publish('notices', 'once');
    await waitFor(() => received.includes('once'), 'the last message');
    await new Promise((r) => setTimeout(r, 200));
    expect(received.filter((m) => m === 'once')).toHaveLength(1);
  });

  it('answers within the timeout when the server hangs, and reports it down', async () => {
    const server = await startPrivateRedis();
    const redis = connect(server.url, 150);
    await waitFor(() => redis.up(), 'redis up');
    server.pause();
    const started = Date.now();
    await expect(redis.command('get', ['GET', 'x'])).rejects.toBeInstanceOf(RedisUnavailableError);
    expect(Date.now() - started).toBeLessThan(1000);
    await waitFor(() => !redis.up(), 'redis reported down');
    expect(redis.status().last_error).toMatch(/within 150 ms/);
    server.resume();
    await waitFor(() => redis.up(), 'redis up again', 15_000);
  });

  it('takes an answer that arrived while its own event loop was blocked past the timeout: no timeout, no error', async () => {
    const registry = new Registry();
    const redis = fleetRedisClient(runRedisUrl, { timeoutMs: 100, idlePingMs: 60_000, registry });
    await waitFor(() => redis.up(), 'redis up');
    const answer = redis.command('ping', ['PING']);
    // The process is busy (as one taking in a large snapshot on a starved CPU) for three timeouts; Redis is not.
    const busyUntil = performance.now() + 300;
    while (performance.now() < busyUntil);
    expect(await answer).toBe('PONG');
    expect(await registry.getSingleMetricAsString('flag_sidecar_redis_errors_total')).not.toMatch(/operation="ping"/);
    expect(redis.status().last_error).toBeNull();
    expect(redis.up()).toBe(true);
  });

  it('subscribes and runs commands on one connection', async () => {
    const server = await startPrivateRedis();
    const redis = connect(server.url);
    await waitFor(() => redis.up(), 'redis up');
    const received: string[] = [];
    await redis.subscribe('notices', (m) => received.push(m.toString()));
    expect(await redis.command('set', ['SET', 'k', 'v'])).toBe('OK');
    await redis.publish('notices', 'hello');
    await waitFor(() => received.length === 1, 'message received');
    // The client list less this housekeeping connection: the fleet client's one.
    const clients = (await redisCall(server.port, 'CLIENT', 'LIST')).split('\n').filter((line) => line.includes('addr=') && !line.includes('cmd=client|list'));
    expect(clients).toHaveLength(1);
    expect(clients[0]).toMatch(/ sub=1 /);
  });

  it('pings only when no command was answered for the idle time', async () => {
    const server = await startPrivateRedis();
    const redis = fleetRedisClient(server.url, { idlePingMs: 400 });
    await waitFor(() => redis.up(), 'redis up');
    let busy = true;
    const sender = (async () => {
      while (busy) {
        await redis.command('get', ['GET', 'k']);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const gets = await calls(server.port, 'get');
    const pings = await calls(server.port, 'ping');
    await waitFor(async () => (await calls(server.port, 'get')) > gets + 40, 'commands answered for a while');
    busy = false;
    await sender;
    expect(await calls(server.port, 'ping')).toBe(pings);
    // The round trip /status shows is the last command's.
    expect(redis.status().ping_ms).toBeGreaterThan(0);
    await waitFor(async () => (await calls(server.port, 'ping')) > pings, 'a ping once idle', 5000);
    expect(redis.up()).toBe(true);
  });

  it('one command timing out does not mark Redis down: the ping sent at once is answered', async () => {
    const server = await startPrivateRedis();
    // Paused for 1.5 timeouts: the command sent within half a timeout of the pause times out, the ping sent then is answered.
    const redis = fleetRedisClient(server.url, { timeoutMs: 400, idlePingMs: 60_000 });
    await waitFor(() => redis.up(), 'redis up');
    const pings = await calls(server.port, 'ping');
    await redisCall(server.port, 'CLIENT', 'PAUSE', '600', 'ALL');
    await expect(redis.command('get', ['GET', 'x'])).rejects.toBeInstanceOf(RedisUnavailableError);
    const downs: number[] = [];
    await waitFor(async () => {
      downs.push(redis.downForMs());
      return (await calls(server.port, 'ping')) > pings;
    }, 'the confirming ping answered');
    expect(downs.filter((ms) => ms !== 0)).toEqual([]);
    expect(redis.up()).toBe(true);
    expect(redis.status().last_error).toBeNull();
  });

  it('closes within the timeout while the server hangs', async () => {
    const server = await startPrivateRedis();
    const redis = connect(server.url, 150);
    await waitFor(() => redis.up(), 'redis up');
    server.pause();
    void redis.command('get', ['GET', 'x']).catch(() => undefined);
    const started = Date.now();
    await redis.close();
    expect(Date.now() - started).toBeLessThan(1000);
    server.resume();
  });

  it('never shows the password', () => {
    const url = parseRedisUrl('rediss://user:s3cret@redis.example:6380/2');
    expect(redactRedisUrl(url)).toBe('rediss://user:***@redis.example:6380/2');
    expect(redactRedisUrl(parseRedisUrl('redis://s3cret@redis.example'))).toBe('redis://***@redis.example');
    expect(() => parseRedisUrl('http://user:s3cret@x')).toThrow(/redis:\/\//);
    expect(() => parseRedisUrl('redis://user:s3cret@x/abc')).toThrow(/database number/);
    for (const text of ['redis://user:s3cret@x/abc', 'http://user:s3cret@x', 'not a url s3cret']) {
      try {
        parseRedisUrl(text);
      } catch (error) {
        expect((error as Error).message).not.toContain('s3cret');
      }
    }
  });

  it('backs off reconnections from 100 ms to 5 s', () => {
    expect(reconnectDelay(0, () => 1)).toBe(100);
    expect(reconnectDelay(0, () => 0)).toBe(50);
    expect(reconnectDelay(3, () => 1)).toBe(800);
    expect(reconnectDelay(20, () => 1)).toBe(5000);
  });
});

describe('fleet mode wiring', () => {
  it('shows the fleet and Redis in /status and metrics, and never the Redis password', async () => {
    const { startProjectOneUpstream, pollingEnv } = await import('../support/polling-env.js');
    const { startTestSidecar } = await import('../support/start-sidecar.js');
    const upstream = await startProjectOneUpstream();
    const sidecar = await startTestSidecar({
      ...pollingEnv(upstream),
      FLAG_SIDECAR_REDIS_URL: `redis://:nopassword@127.0.0.1:${runRedisPort}`,
      FLAG_SIDECAR_REDIS_PREFIX: testPrefix(),
    });
    try {
      const read = async () => (await (await fetch(`${sidecar.opsUrl}/status`)).json()) as { fleet: { redis: { up: boolean; url: string }; instance_id: string } };
      await waitFor(async () => (await read()).fleet.redis.up, 'redis up in /status');
      const body = await read();
      expect(body.fleet.redis.url).toBe(`redis://:***@127.0.0.1:${runRedisPort}`);
      expect(body.fleet.instance_id).toMatch(/\/\d+\/[0-9a-f]{8}$/);
      const metrics = await (await fetch(`${sidecar.opsUrl}/metrics`)).text();
      expect(metrics).toMatch(/^flag_sidecar_redis_up 1$/m);
      expect(JSON.stringify(sidecar.logs)).not.toContain('nopassword');
    } finally {
      await sidecar.stop();
      await upstream.close();
    }
  });
});
