/**
 * The access log: one pino line per answered request — route name (never the raw path or query, which may carry a
 * key or a token), method, status, duration, the kind of key presented and the first 8 hex digits of its SHA-256
 * (`keySha256`, the digest the keys file uses; never the key), and for a refusal its reason. Refusals (4xx/5xx) are logged at
 * info, successes at debug (`all`: info); `off` logs nothing. Lines are rate-limited by a token bucket, so a
 * flood cannot fill the disk; what was suppressed is counted and said in one line a second later. Whether a
 * status is logged at all is decided by two booleans fixed at start: a request that is not logged costs nothing.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { extractCredential, keyKind } from '../auth/credential.js';
import type { AccessLogMode } from '../config/parsers.js';
import type { Logger } from '../logger.js';
import type { Query } from './query.js';

/** Options of createAccessLog. */
export interface AccessLogOptions {
  readonly logger: Logger;
  readonly mode: AccessLogMode;
  /** Lines per second (and the burst), FLAG_SIDECAR_ACCESS_LOG_RATE. */
  readonly ratePerSecond: number;
  /** The listener: `ops` logs everything at debug (probes and scrapes, no keys). */
  readonly listener: 'api' | 'ops';
  readonly now: () => number;
}

/** One answered request. */
export interface AccessEntry {
  readonly requestId: number;
  readonly route: string;
  readonly method: string;
  readonly status: number;
  readonly durationMs: number;
  readonly headers: IncomingHttpHeaders;
  readonly query: Query | null;
  /** Why it was refused (an error's code or auth denial reason), when it was. */
  readonly reason: string | null;
  /** The reply's body: a refusal relayed as a reply (upstream's answer) gives its reason by its `code`. */
  readonly body: Buffer | null;
}

/** The `code` (else `type`) of a small JSON error body, or null. Only for refusals being logged. */
function codeOf(body: Buffer | null): string | null {
  if (body === null || body.length === 0 || body.length > 4096) return null;
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { code?: unknown; type?: unknown } | null;
    const code = typeof parsed?.code === 'string' ? parsed.code : typeof parsed?.type === 'string' ? parsed.type : null;
    return code !== null && /^[A-Za-z0-9_.:-]{1,64}$/.test(code) ? code : null;
  } catch {
    return null;
  }
}

/** The kind of the presented key (`none` without one) and the first 8 hex digits of its SHA-256. */
export function keyFields(headers: IncomingHttpHeaders, query: Query | null): { keyKind: string; keySha256?: string } {
  const credential = extractCredential(headers.authorization, query);
  if (credential === null) return { keyKind: 'none' };
  const kind = credential.key.startsWith('phc_') ? 'project_token' : keyKind(credential.key);
  return { keyKind: kind, keySha256: createHash('sha256').update(credential.key).digest('hex').slice(0, 8) };
}

/** Create the access log of one listener. */
export function createAccessLog(options: AccessLogOptions) {
  const { logger, mode, now } = options;
  const capacity = Math.max(1, options.ratePerSecond);
  const refusalLevel = options.listener === 'ops' ? 'debug' : 'info';
  const successLevel = options.listener === 'api' && mode === 'all' ? 'info' : 'debug';
  let tokens = capacity;
  let filledAt = now();
  let suppressed = 0;

  function take(): boolean {
    const at = now();
    tokens = Math.min(capacity, tokens + ((at - filledAt) / 1000) * options.ratePerSecond);
    filledAt = at;
    if (tokens >= 1) {
      tokens -= 1;
      return true;
    }
    if (suppressed++ === 0) setTimeout(report, 1000).unref();
    return false;
  }

  function report(): void {
    const count = suppressed;
    suppressed = 0;
    if (count > 0) logger.warn({ access: true, suppressed: count, ratePerSecond: options.ratePerSecond }, 'access log lines suppressed (FLAG_SIDECAR_ACCESS_LOG_RATE)');
  }

  return {
    /** Whether refusals (status ≥ 400) are logged. */
    refusals: mode !== 'off' && logger.isLevelEnabled(refusalLevel),
    /** Whether successes are logged. */
    successes: mode !== 'off' && logger.isLevelEnabled(successLevel),
    /** Log one request (the caller checked `refusals` / `successes` first). */
    write(entry: AccessEntry): void {
      if (!take()) return;
      const refused = entry.status >= 400;
      const line = {
        access: true,
        requestId: entry.requestId,
        route: entry.route,
        method: entry.method,
        status: entry.status,
        durationMs: Math.round(entry.durationMs * 100) / 100,
        ...keyFields(entry.headers, entry.query),
        ...(refused ? { reason: entry.reason ?? codeOf(entry.body) ?? `status_${entry.status}` } : {}),
      };
      logger[refused ? refusalLevel : successLevel](line, refused ? 'request refused' : 'request');
    },
  };
}

/** A listener's access log. */
export type AccessLog = ReturnType<typeof createAccessLog>;
