/**
 * The one Redis client of fleet mode (nothing else talks to Redis): node-redis (`@redis/client`) built from
 * FLAG_SIDECAR_REDIS_URL (redis:// or rediss:// for TLS; user and password in the URL), over one connection to a
 * standalone server (redis-connect.ts). Guarantees:
 * - every command settles within `timeoutMs` (node-redis only times out a command until it is written, so each is
 *   raced against a timer here); while disconnected a command fails at once (no offline queue), so no caller ever
 *   waits on Redis longer than the timeout; an answer that arrived while the process itself was too busy to read
 *   it (a blocked event loop) is taken rather than counted as a timeout;
 * - the connection is re-made forever with capped, jittered backoff; subscriptions are restored by node-redis and
 *   `onReady` listeners hear of every (re)connection, so the fleet layer can re-read what it missed;
 * - liveness comes from the commands the fleet sends anyway: every answer proves Redis alive. A command that
 *   timed out is followed at once by a ping; Redis counts as down (hung) after two timeouts in a row and up again
 *   at the next answer. A ping is sent otherwise only when nothing was answered for `idlePingMs`, so an idle
 *   fleet costs Redis no pings;
 * - scripts go as EVALSHA (40 bytes instead of the script text); when Redis answers NOSCRIPT (its script cache
 *   was flushed, or it restarted) the same call is sent once more as EVAL with the text, which caches it again;
 * - errors are counted and logged once per change of state, never per command; a password is never logged.
 * Replies are returned raw (RESP3 types mapped to plain values); callers narrow them, as any input from outside.
 */
import { createHash } from 'node:crypto';
import { redactRedisUrl, type RedisMode } from '../config/parsers.js';
import type { Logger } from '../logger.js';
import type { FleetMetrics } from '../metrics/fleet-metrics.js';
import { connectRedis, isErrorReply, type RedisReply } from './redis-connect.js';

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
  /** How often the health check runs (default 1 s): it pings after a timeout, or when Redis was idle long enough. */
  readonly pingIntervalMs?: number;
  /** Ping when no command was answered for this long (default 10 s; fleet mode passes the lease). */
  readonly idlePingMs?: number;
}

/** A Lua script of fleet mode: its text and SHA-1 (what EVALSHA names it by). */
export interface RedisScript {
  readonly text: string;
  readonly sha: string;
}

/** Define a script (once, at module load). Pure. */
export function redisScript(text: string): RedisScript {
  return { text, sha: createHash('sha1').update(text).digest('hex') };
}

/** Redis's answer to EVALSHA of a script it does not hold. */
const isNoScript = (error: unknown): boolean => error instanceof Error && error.message.startsWith('NOSCRIPT');

/** What /status shows of Redis. */
export interface RedisStatus {
  readonly up: boolean;
  readonly url: string;
  readonly last_error: string | null;
  readonly last_error_at: string | null;
  /** Round trip of the last command answered, in ms. */
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
  /** Up as last seen: connected and answering (readiness listeners fire on each change to up). */
  let wasUp = false;
  /** Commands (pings included) that timed out in a row: two mean a hung server. */
  let timeouts = 0;
  /** Monotonic time of the last answer (any reply, error replies included: Redis is alive). */
  let answeredAt = performance.now();
  /** Monotonic time Redis was last seen going down; null while up or before it was ever up. */
  let downSince: number | null = null;
  let everUp = false;
  let pinging = false;
  let lastError: { message: string; at: number } | null = null;
  /** Round trip of the last command answered (every command is a ping). */
  let roundTripMs: number | null = null;
  let pingTimer: NodeJS.Timeout | null = null;
  let closed = false;
  const where = redactRedisUrl(deps.url);
  const idlePingMs = deps.idlePingMs ?? 10_000;

  const up = (): boolean => connection.ready() && timeouts < 2;

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
    const was = wasUp;
    wasUp = now;
    if (!now && was) downSince = performance.now();
    if (now && !was) {
      downSince = null;
      everUp = true;
      logger.info({ redis: where }, 'redis connected');
      for (const listener of readyListeners) listener();
    }
  }

  /** Redis answered a command sent at `sentAt`: it is alive (also when the answer is an error reply). */
  function answered(sentAt: number): void {
    answeredAt = performance.now();
    roundTripMs = answeredAt - sentAt;
    if (timeouts === 0) return;
    timeouts = 0;
    observe();
  }

  /** A command timed out: confirm with a ping at once (a second timeout marks Redis down). */
  function timedOut(message: string): void {
    timeouts += 1;
    if (timeouts === 2) noteError(message);
    observe();
    if (timeouts === 1) void ping();
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
    timeouts = 0;
    answeredAt = performance.now();
    observe();
  });

  /** Race `promise` against the timeout; counts the command by outcome and latency, and notes Redis's liveness. */
  async function timed<T>(operation: string, promise: Promise<T>): Promise<T> {
    const started = performance.now();
    let timer: NodeJS.Timeout | null = null;
    let late = false;
    let settled = false;
    const timeout = new Promise<never>((_, reject) => {
      // Decided after the I/O that is already waiting: timers run before the loop reads its sockets, so after the
      // loop was blocked (a CPU-starved process taking in a large snapshot) the timer would otherwise beat an
      // answer that has arrived in time and only not been read yet. That is the process's delay, not Redis's.
      timer = setTimeout(() => setImmediate(() => {
        if (settled) return;
        late = true;
        reject(new RedisUnavailableError(`redis did not answer ${operation} within ${timeoutMs} ms`));
      }), timeoutMs);
    });
    // An answer in time proves Redis alive, an error reply too; a closed connection does not (its state tells).
    promise.then(
      () => void ((settled = true), late || answered(started)),
      (error: unknown) => void ((settled = true), late || !isErrorReply(error) || answered(started)),
    );
    try {
      const result = await Promise.race([promise, timeout]);
      metrics.redisDuration.observe({ operation }, (performance.now() - started) / 1000);
      return result;
    } catch (error) {
      metrics.redisErrors.inc({ operation });
      if (late) {
        timedOut((error as Error).message);
        throw error;
      }
      const message = (error as Error).message;
      noteError(message);
      throw new RedisUnavailableError(`redis ${operation} failed: ${message}`);
    } finally {
      if (timer !== null) clearTimeout(timer);
    }
  }

  async function ping(): Promise<void> {
    if (pinging || closed || !connection.ready()) return observe();
    pinging = true;
    try {
      await timed('ping', connection.send(['PING'], false));
    } catch {
      // counted by timed(); two timeouts in a row mark Redis down
    } finally {
      pinging = false;
    }
    observe();
  }

  /** The health check: a ping while a timeout is unconfirmed (or Redis is hung), or after `idlePingMs` without an answer. */
  function check(): void {
    if (timeouts > 0 || performance.now() - answeredAt >= idlePingMs) void ping();
    else observe();
  }

  /** Whether a command can be sent now; counts it failed when not. */
  function sendable(operation: string): boolean {
    if (!closed && connection.ready()) return true;
    metrics.redisErrors.inc({ operation });
    return false;
  }

  return {
    /** Connect in the background (retried forever) and start the health check. */
    start(): void {
      void connection.connect().catch((error: Error) => noteError(error.message));
      pingTimer = setInterval(check, deps.pingIntervalMs ?? 1000);
      pingTimer.unref();
    },

    /** Whether Redis is connected and answering. A caller may skip a command while it is not. */
    up,

    /** How long Redis has been down (monotonic ms): 0 while up, Infinity when it was never up. */
    downForMs(): number {
      observe(); // a connection may have dropped before its error event: it is down from now
      if (up()) return 0;
      return everUp && downSince !== null ? performance.now() - downSince : Infinity;
    },

    /**
     * Send one command (`args[0]` is its name), answered within the timeout or rejected with
     * RedisUnavailableError. `buffers`: bulk strings come back as Buffers (binary-safe), else as strings.
     */
    command(operation: string, args: ReadonlyArray<string | Buffer>, buffers = false): Promise<RedisReply> {
      if (!sendable(operation)) return Promise.reject(new RedisUnavailableError(`redis is not connected (${operation})`));
      return timed(operation, connection.send(args, buffers));
    },

    /** Run `script` on `keys` with `args` (EVALSHA; EVAL once more on NOSCRIPT); rejects like `command`. */
    script(operation: string, script: RedisScript, keys: readonly string[], args: ReadonlyArray<string | Buffer>, buffers = false): Promise<RedisReply> {
      if (!sendable(operation)) return Promise.reject(new RedisUnavailableError(`redis is not connected (${operation})`));
      const send = (name: 'EVALSHA' | 'EVAL', body: string): Promise<RedisReply> => connection.send([name, body, String(keys.length), ...keys, ...args], buffers);
      return timed(operation, send('EVALSHA', script.sha).catch((error: unknown) => {
        if (!isNoScript(error)) throw error;
        metrics.redisScriptLoads.inc({ operation });
        return send('EVAL', script.text);
      }));
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
        ping_ms: roundTripMs === null ? null : Math.round(roundTripMs * 100) / 100,
      };
    },

    /** Close the connection; waits at most the timeout for a hung server (then drops them). Never rejects. */
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
