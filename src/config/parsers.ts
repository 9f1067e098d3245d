/**
 * Pure parsers for configuration values. Each returns the parsed value or throws an Error whose message
 * says what was wrong with the value (the loader prefixes the variable name).
 */
import { plausibleKey } from '../auth/key-shape.js';

/** A host and port to listen on. */
export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

/** One project the sidecar serves: its id and, when known, its project token (`phc_…`). */
export interface ProjectSpec {
  readonly id: number;
  readonly token: string | null;
}

const durationUnits: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `500ms`, `30s`, `5m`, `1h` (also `1.5s`) → milliseconds. A bare number is refused: units are required. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text.trim());
  if (!match) throw new Error(`"${text}" is not a duration (use e.g. 500ms, 30s, 5m, 1h)`);
  const ms = Number(match[1]) * (durationUnits[match[2] as string] as number);
  if (!Number.isFinite(ms) || ms > 2 ** 31 - 1) throw new Error(`"${text}" is too long`);
  return Math.round(ms);
}

/** A duration that must lie within [min, max] milliseconds. */
export function parseDurationWithin(min: number, max: number): (text: string) => number {
  return (text) => {
    const ms = parseDuration(text);
    if (ms < min || ms > max) {
      throw new Error(`"${text}" must be between ${formatDuration(min)} and ${formatDuration(max)}`);
    }
    return ms;
  };
}

/** Milliseconds → the shortest exact duration text (`30s`, `1500ms`). */
export function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0 && ms > 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** `host:port`, `[v6]:port` or `:port` (all interfaces). Port 0 asks the OS for a free one. */
export function parseListen(text: string): ListenAddress {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text.trim());
  if (!match) throw new Error(`"${text}" is not host:port`);
  const port = Number(match[3]);
  if (port > 65535) throw new Error(`port ${port} is out of range`);
  const host = match[1] ?? (match[2] === '' || match[2] === undefined ? '0.0.0.0' : match[2]);
  return { host, port };
}

/** An http(s) base URL; a trailing slash is dropped so paths can be appended. */
export function parseBaseUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw new Error(`"${text}" is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`"${text}" must be an http:// or https:// URL`);
  }
  if (url.search || url.hash) throw new Error(`"${text}" must not carry a query or fragment`);
  if (url.username || url.password) throw new Error('credentials do not belong in the URL; use FLAG_SIDECAR_UPSTREAM_KEY');
  url.pathname = url.pathname.replace(/\/+$/, '');
  return url;
}

/**
 * A Redis URL: redis:// or rediss:// with a host; user and password may be in it. The text is never repeated in
 * an error (it may hold a password).
 */
export function parseRedisUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw new Error('is not a URL (expected redis://[user:password@]host:port[/db] or rediss://…)');
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw new Error(`must be a redis:// or rediss:// URL, not ${url.protocol}//`);
  if (url.hostname === '') throw new Error('has no host');
  if (url.hash) throw new Error('must not carry a fragment');
  const db = url.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d{1,5}$/.test(db)) throw new Error('the path must be a database number (e.g. /0)');
  return url;
}

/** A Redis URL without its password, for logs, /status and check-config. */
export function redactRedisUrl(url: URL): string {
  const copy = new URL(url.href);
  if (copy.password) copy.password = '***';
  // `redis://secret@host`: a lone user part is often the password (Redis before ACLs has no users).
  else if (copy.username) copy.username = '***';
  return copy.href;
}

/** How the Redis URL is read: one server, a node of a Redis Cluster, or a Sentinel. */
export type RedisMode = 'standalone' | 'cluster' | 'sentinel';

/** `standalone`, `cluster` or `sentinel`. */
export function parseRedisMode(text: string): RedisMode {
  const mode = text.trim().toLowerCase();
  if (mode !== 'standalone' && mode !== 'cluster' && mode !== 'sentinel') throw new Error(`"${text}" is not standalone, cluster or sentinel`);
  return mode;
}

/** A Redis key prefix: 1–64 of letters, digits and `-_.:`. */
export function parseRedisPrefix(text: string): string {
  const prefix = text.trim();
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(prefix)) throw new Error(`"${prefix.slice(0, 80)}" must be 1–64 letters, digits or -_.:`);
  return prefix;
}

/** `1,2:phc_abc` → projects. Ids are positive integers, tokens start with `phc_`; duplicates are refused. */
export function parseProjects(text: string): ProjectSpec[] {
  const projects: ProjectSpec[] = [];
  for (const raw of text.split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    const [idText, token, ...rest] = item.split(':');
    if (rest.length > 0 || idText === undefined || !/^\d+$/.test(idText) || Number(idText) < 1) {
      throw new Error(`"${item}" is not "id" or "id:phc_token"`);
    }
    if (token !== undefined && !/^phc_[A-Za-z0-9_-]+$/.test(token)) {
      throw new Error(`"${item}": the project token must look like phc_…`);
    }
    const id = Number(idText);
    if (projects.some((p) => p.id === id)) throw new Error(`project ${id} is listed twice`);
    projects.push({ id, token: token ?? null });
  }
  if (projects.length === 0) throw new Error('lists no project');
  return projects;
}

/** `*` (every project) or a comma list of project ids, as `FLAG_SIDECAR_OFREP_REQUIRE_KEY` takes it. */
export function parseProjectSelection(text: string): 'all' | ReadonlySet<number> {
  if (text.trim() === '*') return 'all';
  const ids = new Set<number>();
  for (const raw of text.split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    if (!/^\d+$/.test(item) || Number(item) < 1) throw new Error(`"${item}" is not a project id (or use * for every project)`);
    ids.add(Number(item));
  }
  return ids;
}

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/** A pino log level. */
export type LogLevel = (typeof logLevels)[number];

/** One of pino's levels. */
export function parseLogLevel(text: string): LogLevel {
  const level = text.trim().toLowerCase();
  if (!(logLevels as readonly string[]).includes(level)) {
    throw new Error(`"${text}" is not one of ${logLevels.join(', ')}`);
  }
  return level as LogLevel;
}

const accessLogModes = ['off', 'refusals', 'all'] as const;
/** FLAG_SIDECAR_ACCESS_LOG: which answered requests get a line. */
export type AccessLogMode = (typeof accessLogModes)[number];

/** off, refusals or all. */
export function parseAccessLogMode(text: string): AccessLogMode {
  const mode = text.trim().toLowerCase();
  if (!(accessLogModes as readonly string[]).includes(mode)) throw new Error(`"${text}" is not one of ${accessLogModes.join(', ')}`);
  return mode as AccessLogMode;
}

/** A non-empty path (file or directory); existence is checked by whoever opens it. */
export function parsePath(text: string): string {
  const path = text.trim();
  if (path === '') throw new Error('is empty');
  return path;
}

/** A byte size: `65536`, `512KiB`, `64MiB`, `1GiB`. */
export function parseBytes(text: string): number {
  const match = /^(\d+)\s*(B|KiB|MiB|GiB)?$/.exec(text.trim());
  if (!match) throw new Error(`"${text}" is not a size (use e.g. 512KiB, 64MiB)`);
  const factor = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 }[match[2] ?? 'B'] as number;
  const bytes = Number(match[1]) * factor;
  if (bytes < 1024) throw new Error(`"${text}" is below the minimum of 1KiB`);
  return bytes;
}

/** Bytes → the shortest exact size text parseBytes reads back (`64MiB`, `1536B`). */
export function formatBytes(bytes: number): string {
  for (const [unit, factor] of [['GiB', 1024 ** 3], ['MiB', 1024 ** 2], ['KiB', 1024]] as const) {
    if (bytes > 0 && bytes % factor === 0) return `${bytes / factor}${unit}`;
  }
  return `${bytes}B`;
}

/** A byte size as parseBytes, or `0` (off). */
export const parseBytesOrOff = (text: string): number => (text.trim() === '0' ? 0 : parseBytes(text));

/**
 * The upstream key: printable, no spaces, not a project token, and of a shape upstream issues (auth/key-shape.ts:
 * a `phs_` key strictly, as upstream's authenticator takes it). Throws a message that never quotes the key.
 */
export function parseKey(text: string): string {
  const key = text.trim();
  if (!/^[\x21-\x7e]+$/.test(key)) throw new Error('must be a single printable token without spaces');
  if (key.startsWith('phc_')) throw new Error('is a project token (phc_…); the sidecar needs a secret (phs_…) or personal (phx_…) key');
  // Upstream would answer every poll 401: refused here, once, instead (the key itself is never quoted).
  if (!plausibleKey(key, key.startsWith('phs_') ? 'secret' : 'personal')) {
    throw new Error(
      'is not a key PostHog issues (a project secret key is phs_ then letters and digits, a personal key phx_ then letters and digits); check for quotes or other characters copied with it',
    );
  }
  return key;
}

/** A secret to derive keys from: printable, no spaces, 32 to 4096 characters. Throws a message that never quotes it. */
export function parseSecret(text: string): string {
  const secret = text.trim();
  if (!/^[\x21-\x7e]+$/.test(secret)) throw new Error('must be a single printable token without spaces');
  if (secret.length < 32 || secret.length > 4096) throw new Error(`must be 32 to 4096 characters (it has ${secret.length})`);
  return secret;
}

/** A whole number within [min, max]. */
export function parseCount(min: number, max: number): (text: string) => number {
  return (text) => {
    const value = text.trim();
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
      throw new Error(`"${text}" must be a whole number from ${min} to ${max}`);
    }
    return Number(value);
  };
}

/** A switch: `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`). */
export function parseBool(text: string): boolean {
  const value = text.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(value)) return true;
  if (['false', '0', 'no', 'off'].includes(value)) return false;
  throw new Error(`"${text}" must be true or false`);
}
