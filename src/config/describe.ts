/**
 * The effective configuration as check-config prints it: every setting of the spec (src/config/spec.ts), named by
 * its environment variable, its value written as that variable would take it (`30s`, `64MiB`, `1:phc_…`), null
 * when unset. Defaults the loader derives (the example files offline, the events URL) show as derived, paths as
 * resolved. Secret settings are masked: the upstream key by kind and length, the Redis URL's credentials.
 */
import type { Config } from './load.js';
import { parseEnv } from './load.js';
import { formatBytes, formatDuration, redactRedisUrl, type ListenAddress } from './parsers.js';
import { settings, type RawConfig } from './spec.js';

/** A value as check-config shows it: the text the variable would take, or null (unset). */
export type Shown = string | null;

/** A secret shown by kind only: its first four characters (`phx_`, `phs_`) and its length. */
export const maskSecret = (secret: string): string => `${secret.slice(0, 4)}… (${secret.length} characters, masked)`;

const address = (a: ListenAddress): string => (a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`);
const url = (u: URL | null): Shown => (u === null ? null : u.href.replace(/\/$/, ''));
const count = (n: number): string => String(n);
const text = (s: string | null): Shown => s;

/**
 * How each setting is shown, from its parsed value and the loaded configuration. A mapped type over the spec's
 * names: a setting added to the spec and not here does not compile.
 */
const formats: { readonly [K in keyof RawConfig]: (value: RawConfig[K], config: Config) => Shown } = {
  upstreamUrl: url,
  upstreamKey: (key) => (key === null ? null : maskSecret(key)),
  upstreamKeyFile: text,
  projects: (projects) => projects?.map((p) => (p.token === null ? String(p.id) : `${p.id}:${p.token}`)).join(',') ?? null,
  listen: address,
  opsListen: address,
  maxConnections: count,
  opsMaxConnections: count,
  pollInterval: formatDuration,
  snapshotDir: (_, config) => config.snapshotDir,
  bootstrapFile: (_, config) => config.bootstrapFile,
  keysFile: (_, config) => config.keysFile,
  authCacheTtl: formatDuration,
  authNegativeTtl: formatDuration,
  authGrace: formatDuration,
  authCacheMax: count,
  keyChecksMaxInFlight: count,
  keyChecksRate: count,
  cacheMaxBytes: formatBytes,
  cacheMaxEntries: count,
  cacheTtl: formatDuration,
  cacheActivityTtl: formatDuration,
  cacheNotFoundTtl: formatDuration,
  cacheStaleMax: formatDuration,
  endpointRunTtl: formatDuration,
  endpointRunMaxBytes: formatBytes,
  endpointVersionTtl: formatDuration,
  endpointMetricNames: (names) => names.join(','),
  maxRequestBody: formatBytes,
  writeSyncTimeout: formatDuration,
  flagsAnswerCacheMaxBytes: (bytes) => (bytes === 0 ? '0' : formatBytes(bytes)),
  staticCohortMaxPersons: count,
  staticCohortRefresh: formatDuration,
  staticCohortReread: formatDuration,
  staticCohortPullTimeout: formatDuration,
  redisUrl: (redis) => (redis === null ? null : redactRedisUrl(redis)),
  redisUrlFile: text,
  fleetSecret: (secret) => (secret === null ? null : `(${secret.length} characters, masked)`),
  fleetSecretFile: text,
  redisMode: text,
  redisSentinelMaster: text,
  redisPrefix: text,
  redisTimeout: formatDuration,
  fleetLease: formatDuration,
  fleetOutageBudget: count,
  fleetFetchRate: formatBytes,
  eventsUrl: (_, config) => url(config.events.url),
  eventsAnyToken: String,
  eventsQueueMaxBytes: formatBytes,
  eventsSpoolMax: formatBytes,
  eventsIntakeMaxBytes: (bytes) => (bytes === null ? null : formatBytes(bytes)),
  eventsQueueMaxEvents: count,
  eventsBatchSize: count,
  eventsBatchMaxBytes: formatBytes,
  eventsLinger: formatDuration,
  ofrepRequireKey: (selection) => (selection === null ? null : selection === 'all' ? '*' : [...selection].join(',')),
  logLevel: text,
  accessLog: text,
  accessLogRate: count,
  upstreamTimeout: formatDuration,
  upstreamConnectTimeout: formatDuration,
  upstreamMaxBody: formatBytes,
  shutdownTimeout: formatDuration,
};

/**
 * Every setting of the spec, in its order, by environment name, for `env` as loaded into `config` (loadConfig
 * accepted `env`, so every value parses). Never shows a secret.
 */
export function describeConfig(config: Config, env: Readonly<Record<string, string | undefined>>): Record<string, Shown> {
  const { raw } = parseEnv(env);
  const show = <K extends keyof RawConfig>(name: K): Shown => formats[name](raw[name], config);
  return Object.fromEntries(settings.map(([name, setting]) => [setting.env, show(name)]));
}
