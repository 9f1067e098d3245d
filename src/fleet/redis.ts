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
import { redactRedisUrl, type RedisMode } from '../config/parsers.js';
import type { Logger } from '../logger.js';
import type { FleetMetrics } from '../metrics/fleet-metrics.js';
import { connectRedis, type RedisReply } from './redis-connect.js';

export type { RedisReply } from './redis-connect.js';

/** Thrown for a command that Redis did not answer in time, or could not be sent. */
export class RedisUnavailableError extends Error {
  override readonly name = 'RedisUnavailableError';
}

/** Dependencies and settings of createFleetRedis. */
export interface FleetRedisDeps {
  readonly url: URL;
  /** What the URL names (default standalone) and, for a Sentinel, the master's name. */
  readonly mode?: RedisMode;
  readonly sentinelMaster?: string | null;
  readonly timeoutMs: number;
  readonly logger: Logger;
  readonly metrics: FleetMetrics;
  readonly random: () => number;
  /** The clock of /status's last_error_at (default Date.now). */
  readonly now?: () => number;
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
  const connection = connectRedis({
    url: deps.url,
    mode: deps.mode ?? 'standalone',
    sentinelMaster: deps.sentinelMaster ?? null,
    connectTimeoutMs: Math.max(timeoutMs, 1000),
    reconnectDelay: (retries: number) => reconnectDelay(retries, deps.random),
  });
  const readyListeners: Array<() => void> = [];
  /** Up as last seen: connected and answering pings (readiness listeners fire on each change to up). */
  let wasUp = false;
  let missedPings = 0;
  let lastError: { message: string; at: number } | null = null;
  let pingMs: number | null = null;
  let pingTimer: NodeJS.Timeout | null = null;
  let closed = false;
  const where = redactRedisUrl(deps.url);

  const up = (): boolean => connection.ready() && missedPings < 2;

  /** Listeners per channel; a channel is subscribed on the connection once, when Redis is up. */
  const channels = new Map<string, Array<(message: Buffer) => void>>();
  const subscribed = new Map<string, Promise<void>>();

  /** Subscribe every channel not subscribed yet (a failed one is tried again at the next call). */
  function subscribeAll(): void {
    for (const channel of channels.keys()) {
      if (subscribed.has(channel)) continue;
      const dispatch = (message: Buffer): void => {
        for (const listener of channels.get(channel) ?? []) listener(message);
      };
      const done = connection.subscribe(channel, dispatch).catch((error: Error) => {
        subscribed.delete(channel);
        noteError(`subscribe ${channel}: ${error.message}`);
      });
      subscribed.set(channel, done);
    }
  }

  /** Note the current state; on a change to up, subscribe, log it and tell the readiness listeners. */
  function observe(): void {
    const now = up();
    if (now) subscribeAll();
    if (now && !wasUp) {
      logger.info({ redis: where }, 'redis connected');
      for (const listener of readyListeners) listener();
    }
    wasUp = now;
  }

  function noteError(message: string): void {
    const first = lastError === null || lastError.message !== message;
    lastError = { message, at: (deps.now ?? Date.now)() };
    if (first) logger.warn({ redis: where, err: message }, 'redis unavailable');
  }

  connection.onError((message) => {
    metrics.redisErrors.inc({ operation: 'connection' });
    noteError(message);
    observe();
  });
  connection.onReady(() => {
    missedPings = 0;
    observe();
  });

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
      await timed('ping', connection.send(['PING'], false));
      pingMs = performance.now() - started;
      missedPings = 0;
    } catch (error) {
      missedPings += 1;
      if (missedPings === 2) noteError((error as Error).message);
    }
    observe();
  }

  return {
    /** Connect both connections in the background (retried forever) and start the health ping. */
    start(): void {
      void connection.connect().catch((error: Error) => noteError(error.message));
      pingTimer = setInterval(() => void (connection.ready() ? ping() : observe()), deps.pingIntervalMs ?? 1000);
      pingTimer.unref();
    },

    /** Whether Redis is connected and answering. A caller may skip a command while it is not. */
    up,

    /**
     * Send one command (`args[0]` is its name), answered within the timeout or rejected with
     * RedisUnavailableError. `buffers`: bulk strings come back as Buffers (binary-safe), else as strings.
     */
    command(operation: string, args: ReadonlyArray<string | Buffer>, buffers = false): Promise<RedisReply> {
      if (closed || !connection.ready()) {
        metrics.redisErrors.inc({ operation });
        return Promise.reject(new RedisUnavailableError(`redis is not connected (${operation})`));
      }
      return timed(operation, connection.send(args, buffers));
    },

    /** Publish `message` on `channel`; rejects like `command`. */
    async publish(channel: string, message: string | Buffer): Promise<void> {
      await this.command('publish', ['PUBLISH', channel, message]);
    },

    /**
     * Listen to `channel` (binary-safe), from now on and across reconnections: subscribed as soon as Redis is up.
     * Resolves once subscribed, or at once while Redis is down (messages sent meanwhile are missed: re-read state
     * in an `onReady` listener). Never rejects.
     */
    subscribe(channel: string, listener: (message: Buffer) => void): Promise<void> {
      channels.set(channel, [...(channels.get(channel) ?? []), listener]);
      if (up()) subscribeAll();
      return subscribed.get(channel) ?? Promise.resolve();
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

    /** Close the connections; waits at most the timeout for a hung server (then drops them). Never rejects. */
    async close(): Promise<void> {
      closed = true;
      if (pingTimer !== null) clearInterval(pingTimer);
      // A hung server would hold a graceful close: it gets the timeout, then the connections are dropped.
      let timer: NodeJS.Timeout | null = null;
      const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
      await Promise.race([connection.close().catch(() => undefined), waited]);
      if (timer !== null) clearTimeout(timer);
      connection.destroy();
    },
  };
}

/** The client handle. */
export type FleetRedis = ReturnType<typeof createFleetRedis>;
