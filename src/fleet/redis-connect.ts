/**
 * The three deployments of Redis that fleet mode speaks to, behind one small interface for src/fleet/redis.ts:
 * - `standalone`: the server in the URL, over one connection: node-redis speaks RESP3 (HELLO 3; Redis 6+), where
 *   published messages arrive as push replies, so the connection that subscribes keeps running commands;
 *   node-redis subscribes again after each reconnection;
 * - `cluster`: the URL names one node of a Redis Cluster; node-redis discovers the others and routes each command
 *   by its first key (every multi-key script of fleet mode keeps its keys on one hash tag); node-redis keeps one
 *   connection per master and one more for pub/sub;
 * - `sentinel`: the URL names one Sentinel, FLAG_SIDECAR_REDIS_SENTINEL_MASTER the monitored master's name;
 *   node-redis follows failovers (its master connection, plus one to the Sentinel and one for pub/sub).
 * The URL's user and password (and rediss:// for TLS) apply to every node. No offline queue in any mode: while a
 * connection is down a command fails at once.
 */
import { createClient, createCluster, createSentinel, ErrorReply, RESP_TYPES } from '@redis/client';
import type { RedisMode } from '../config/parsers.js';

/** A raw Redis reply: bulk strings as Buffers when asked for, else as strings. */
export type RedisReply = null | number | string | Buffer | RedisReply[];

/** Connection settings. */
export interface RedisConnectOptions {
  readonly url: URL;
  readonly mode: RedisMode;
  /** The master's name (sentinel mode only). */
  readonly sentinelMaster: string | null;
  readonly connectTimeoutMs: number;
  readonly reconnectDelay: (retries: number) => number;
}

/** What redis.ts needs of a deployment. */
export interface RedisConnection {
  connect(): Promise<void>;
  /** Send a command; rejects when it cannot be sent (not connected) or Redis answers an error. */
  send(args: ReadonlyArray<string | Buffer>, buffers: boolean): Promise<RedisReply>;
  subscribe(channel: string, listener: (message: Buffer) => void): Promise<void>;
  /** Whether commands can be sent now. */
  ready(): boolean;
  onError(listener: (message: string) => void): void;
  /** Called when the connection (re)becomes ready, where the client tells (standalone); else never. */
  onReady(listener: () => void): void;
  /** Close gracefully (pending commands are answered first). */
  close(): Promise<void>;
  /** Close at once (pending commands are rejected); after close() too. */
  destroy(): void;
}

/** Whether `error` is Redis's error reply to a command (Redis answered), not a failure to reach it. */
export const isErrorReply = (error: unknown): boolean => error instanceof ErrorReply;

const bufferOptions = { typeMapping: { [RESP_TYPES.BLOB_STRING]: Buffer } } as const;

/** The key a command is routed by in a cluster (undefined: any node). Pure. */
export function firstKey(args: ReadonlyArray<string | Buffer>): string | Buffer | undefined {
  const name = String(args[0]).toUpperCase();
  if (name === 'EVAL' || name === 'EVALSHA' || name === 'FCALL') return Number(String(args[2])) > 0 ? args[3] : undefined;
  if (name === 'PUBLISH' || name === 'PING' || name === 'SCRIPT' || name === 'INFO') return undefined;
  return args[1];
}

/** Node options shared by every mode: credentials and TLS from the URL, timeouts, reconnection, no offline queue. */
function nodeOptions(options: RedisConnectOptions) {
  const { url } = options;
  return {
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    disableOfflineQueue: true,
    commandsQueueMaxLength: 10_000,
    socket: {
      connectTimeout: options.connectTimeoutMs,
      reconnectStrategy: options.reconnectDelay,
      ...(url.protocol === 'rediss:' ? { tls: true as const, servername: url.hostname } : {}),
    },
  };
}

function standalone(options: RedisConnectOptions): RedisConnection {
  const client = createClient({ url: options.url.href, ...nodeOptions(options) });
  return {
    connect: async () => void (await client.connect()),
    send: (args, buffers) => client.sendCommand<RedisReply>(args, buffers ? bufferOptions : undefined),
    subscribe: (channel, listener) => client.subscribe(channel, (message: Buffer) => listener(message), true),
    ready: () => client.isReady,
    onError: (listener) => void client.on('error', (error: Error) => listener(error.message)),
    onReady: (listener) => void client.on('ready', listener),
    async close() {
      if (client.isOpen) await client.close();
    },
    destroy() {
      if (client.isOpen) client.destroy();
    },
  };
}

/** Whether a cluster client knows a node for every slot (else it connected to a cluster still forming). */
function coversAllSlots(slots: ReadonlyArray<{ readonly master?: unknown } | undefined>): boolean {
  if (slots.length !== 16384) return false;
  // An indexed loop: the array may have holes, which every() would skip.
  for (let i = 0; i < slots.length; i++) if (slots[i]?.master === undefined) return false;
  return true;
}

function cluster(options: RedisConnectOptions): RedisConnection {
  const defaults = nodeOptions(options);
  const root = new URL(options.url.href);
  root.username = '';
  root.password = '';
  const create = () => createCluster({ rootNodes: [{ url: root.href, ...defaults }], defaults });
  let client = create();
  const errorListeners: Array<(message: string) => void> = [];
  const subscriptions = new Map<string, (message: Buffer) => void>();
  const report = (message: string): void => {
    for (const listener of errorListeners) listener(message);
  };
  client.on('error', (error: Error) => report(error.message));
  let closed = false;
  let covered = false;
  return {
    // A cluster client gives up when no root node answers, and never learns slots it did not see at start: a
    // fresh client is made until one connects to a cluster serving every slot.
    async connect() {
      for (let retries = 0; !closed; retries++) {
        try {
          await client.connect();
          if (coversAllSlots(client.slots)) {
            covered = true;
            for (const [channel, listener] of subscriptions) await client.subscribe(channel, listener, true);
            return;
          }
          report('the cluster does not serve every slot yet');
        } catch (error) {
          report((error as Error).message);
        }
        client.destroy();
        client = create();
        client.on('error', (error: Error) => report(error.message));
        await new Promise((resolve) => setTimeout(resolve, options.reconnectDelay(retries)).unref());
      }
    },
    send: (args, buffers) => client.sendCommand<RedisReply>(firstKey(args), false, [...args], buffers ? bufferOptions : undefined),
    async subscribe(channel, listener) {
      const dispatch = (message: Buffer): void => listener(message);
      await client.subscribe(channel, dispatch, true);
      subscriptions.set(channel, dispatch);
    },
    ready: () => covered && client.isReady,
    onError: (listener) => void errorListeners.push(listener),
    onReady: () => undefined,
    async close() {
      closed = true;
      if (client.isOpen) await client.close().catch(() => client.destroy());
    },
    destroy() {
      closed = true;
      if (client.isOpen) client.destroy();
    },
  };
}

function sentinel(options: RedisConnectOptions): RedisConnection {
  const node = nodeOptions(options);
  const client = createSentinel({
    name: options.sentinelMaster ?? 'mymaster',
    sentinelRootNodes: [{ host: options.url.hostname, port: Number(options.url.port || 26379) }],
    nodeClientOptions: node,
    sentinelClientOptions: node,
  });
  return {
    connect: async () => void (await client.connect()),
    send: (args, buffers) => client.sendCommand<RedisReply>(false, [...args], buffers ? bufferOptions : undefined),
    subscribe: async (channel, listener) => void (await client.subscribe(channel, (message: Buffer) => listener(message), true)),
    ready: () => client.isReady,
    onError: (listener) => void client.on('error', (error: unknown) => listener(error instanceof Error ? error.message : String(error))),
    onReady: () => undefined,
    async close() {
      if (client.isOpen) await client.close().catch(() => client.destroy());
    },
    destroy() {
      if (client.isOpen) client.destroy();
    },
  };
}

/** The connection for `options.mode`; nothing is sent before `connect()`. */
export function connectRedis(options: RedisConnectOptions): RedisConnection {
  if (options.mode === 'cluster') return cluster(options);
  if (options.mode === 'sentinel') return sentinel(options);
  return standalone(options);
}
