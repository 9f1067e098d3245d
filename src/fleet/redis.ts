/**
 * The one Redis client of fleet mode (nothing else talks to Redis): a command connection and a subscriber
 * connection of node-redis (`@redis/client`) built from FLAG_SIDECAR_REDIS_URL (redis:// or rediss:// for TLS;
 * user and password in the URL). Guarantees:
 * - every command settles within `timeoutMs` (node-redis only times out a command until it is written, so each is
 *   raced against a timer here); while disconnected a command fails at once (no offline queue), so no caller ever
 *   waits on Redis longer than the timeout;
 * - the connection is re-made forever with capped, jittered backoff; subscriptions are restored by node-redis and
 *   `onReady` listeners hear of every (re)connection, so the fleet layer can re-read what it missed;
 * - a ping every second marks Redis down after two unanswered pings (a hung server), up again at the next answer;
 * - errors are counted and logged once per change of state, never per command; a password is never logged.
 * Replies are returned raw (RESP2 shapes); callers narrow them, as any input from outside.
 */
import { createClient, RESP_TYPES } from '@redis/client';
import { redactRedisUrl } from '../config/parsers.js';
import type { Logger } from '../logger.js';
import type { FleetMetrics } from '../metrics/fleet-metrics.js';

/** A raw Redis reply: bulk strings as Buffers when asked for, else as strings. */
export type RedisReply = null | number | string | Buffer | RedisReply[];

/** Thrown for a command that Redis did not answer in time, or could not be sent. */
export class RedisUnavailableError extends Error {
  override readonly name = 'RedisUnavailableError';
}

/** Dependencies and settings of createFleetRedis. */
export interface FleetRedisDeps {
  readonly url: URL;
  readonly timeoutMs: number;
  readonly logger: Logger;
  readonly metrics: FleetMetrics;
  readonly random: () => number;
  /** How often the health ping runs (default 1 s). */
  readonly pingIntervalMs?: number;
}

/** What /status shows of Redis. */
export interface RedisStatus {
  readonly up: boolean;
  readonly url: string;
  readonly last_error: string | null;
  readonly last_error_at: string | null;
  readonly ping_ms: number | null;
}

/** Reconnect backoff: 100 ms doubling to 5 s, with equal jitter. Pure. */
export function reconnectDelay(retries: number, random: () => number): number {
  const base = Math.min(5000, 100 * 2 ** Math.min(retries, 10));
  return Math.round(base / 2 + (random() * base) / 2);
}

/** Create the client; call `start()` to connect (it never waits for Redis). */
export function createFleetRedis(deps: FleetRedisDeps) {
  const { logger, metrics, timeoutMs } = deps;
  const options = {
    url: deps.url.href,
    disableOfflineQueue: true,
    commandsQueueMaxLength: 10_000,
    socket: {
      connectTimeout: Math.max(timeoutMs, 1000),
      reconnectStrategy: (retries: number) => reconnectDelay(retries, deps.random),
    },
  };
  const client = createClient(options);
  const subscriber = client.duplicate();
  const bufferOptions = { typeMapping: { [RESP_TYPES.BLOB_STRING]: Buffer } } as const;
  const readyListeners: Array<() => void> = [];
  let connected = false;
  let missedPings = 0;
  let lastError: { message: string; at: number } | null = null;
  let pingMs: number | null = null;
  let pingTimer: NodeJS.Timeout | null = null;
  let closed = false;
  const where = redactRedisUrl(deps.url);

  const up = (): boolean => connected && client.isReady && missedPings < 2;

  function noteError(message: string): void {
    const first = lastError === null || lastError.message !== message;
    lastError = { message, at: Date.now() };
    if (first) logger.warn({ redis: where, err: message }, 'redis unavailable');
  }

  for (const [name, c] of [['command', client], ['subscriber', subscriber]] as const) {
    c.on('error', (error: Error) => {
      metrics.redisErrors.inc({ operation: `connection_${name}` });
      noteError(error.message);
    });
  }
  client.on('ready', () => {
    const wasUp = up();
    connected = true;
    missedPings = 0;
    if (!wasUp) logger.info({ redis: where }, 'redis connected');
    for (const listener of readyListeners) listener();
  });
  client.on('end', () => void (connected = false));
  client.on('reconnecting', () => void (connected = false));

  /** Race `promise` against the timeout; counts the command by outcome and latency. */
  async function timed<T>(operation: string, promise: Promise<T>): Promise<T> {
    const started = performance.now();
    let timer: NodeJS.Timeout | null = null;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new RedisUnavailableError(`redis did not answer ${operation} within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      const result = await Promise.race([promise, timeout]);
      metrics.redisDuration.observe({ operation }, (performance.now() - started) / 1000);
      return result;
    } catch (error) {
      metrics.redisErrors.inc({ operation });
      const message = (error as Error).message;
      if (!(error instanceof RedisUnavailableError)) noteError(message);
      throw error instanceof RedisUnavailableError ? error : new RedisUnavailableError(`redis ${operation} failed: ${message}`);
    } finally {
      if (timer !== null) clearTimeout(timer);
      promise.catch(() => undefined);
    }
  }

  async function ping(): Promise<void> {
    const started = performance.now();
    try {
      await timed('ping', client.sendCommand(['PING']));
      pingMs = performance.now() - started;
      if (missedPings >= 2) logger.info({ redis: where }, 'redis answering again');
      missedPings = 0;
    } catch (error) {
      missedPings += 1;
      if (missedPings === 2) noteError((error as Error).message);
    }
  }

  return {
    /** Connect both connections in the background (retried forever) and start the health ping. */
    start(): void {
      void client.connect().catch((error: Error) => noteError(error.message));
      void subscriber.connect().catch((error: Error) => noteError(error.message));
      pingTimer = setInterval(() => void (client.isReady ? ping() : undefined), deps.pingIntervalMs ?? 1000);
      pingTimer.unref();
    },

    /** Whether Redis is connected and answering. A caller may skip a command while it is not. */
    up,

    /**
     * Send one command (`args[0]` is its name), answered within the timeout or rejected with
     * RedisUnavailableError. `buffers`: bulk strings come back as Buffers (binary-safe), else as strings.
     */
    command(operation: string, args: ReadonlyArray<string | Buffer>, buffers = false): Promise<RedisReply> {
      if (closed || !client.isReady) {
        metrics.redisErrors.inc({ operation });
        return Promise.reject(new RedisUnavailableError(`redis is not connected (${operation})`));
      }
      const sent = client.sendCommand<RedisReply>(args, buffers ? bufferOptions : undefined);
      return timed(operation, sent);
    },

    /** Publish `message` on `channel`; rejects like `command`. */
    async publish(channel: string, message: string | Buffer): Promise<void> {
      await this.command('publish', ['PUBLISH', channel, message]);
    },

    /** Listen to `channel` (binary-safe); kept across reconnections. Resolves once subscribed, or rejects. */
    subscribe(channel: string, listener: (message: Buffer) => void): Promise<void> {
      return subscriber.subscribe(channel, (message: Buffer) => listener(message), true);
    },

    /** Call `listener` after every (re)connection of the command connection. */
    onReady(listener: () => void): void {
      readyListeners.push(listener);
    },

    /** Redis as /status shows it. */
    status(): RedisStatus {
      return {
        up: up(),
        url: where,
        last_error: lastError?.message ?? null,
        last_error_at: lastError === null ? null : new Date(lastError.at).toISOString(),
        ping_ms: pingMs === null ? null : Math.round(pingMs * 100) / 100,
      };
    },

    /** Close both connections (pending commands are rejected); waits at most the timeout for a hung server. Never rejects. */
    async close(): Promise<void> {
      closed = true;
      if (pingTimer !== null) clearInterval(pingTimer);
      let timer: NodeJS.Timeout | null = null;
      const closing = Promise.allSettled([client.isOpen ? client.close() : undefined, subscriber.isOpen ? subscriber.close() : undefined]);
      await Promise.race([closing, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      if (timer !== null) clearTimeout(timer);
      client.destroy();
      subscriber.destroy();
    },
  };
}

/** The client handle. */
export type FleetRedis = ReturnType<typeof createFleetRedis>;
