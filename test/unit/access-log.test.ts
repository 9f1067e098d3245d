/** The access log's pure parts: which lines at which level, key fields, and the token bucket. */
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AccessLogMode } from '../../src/config/parsers.js';
import { createAccessLog, keyFields } from '../../src/http/access-log.js';
import { parseQuery } from '../../src/http/query.js';
import { createLogger } from '../../src/logger.js';
import type { LogLevel } from '../../src/config/parsers.js';

function capture(level: LogLevel) {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  return { logger: createLogger(level, stream), lines };
}

const entry = (status: number, extra: Partial<Parameters<ReturnType<typeof createAccessLog>['write']>[0]> = {}) => ({
  requestId: 1,
  route: 'local_evaluation',
  method: 'GET',
  status,
  durationMs: 1.234,
  headers: {},
  query: null,
  reason: status >= 400 ? 'authentication_failed' : null,
  body: null,
  ...extra,
});

const sha8 = (key: string): string => createHash('sha256').update(key).digest('hex').slice(0, 8);

afterEach(() => vi.useRealTimers());

describe('which requests are logged, at which level', () => {
  it.each<[AccessLogMode, 'api' | 'ops', LogLevel, { refusals: boolean; successes: boolean }]>([
    ['refusals', 'api', 'info', { refusals: true, successes: false }],
    ['refusals', 'api', 'debug', { refusals: true, successes: true }],
    ['refusals', 'api', 'warn', { refusals: false, successes: false }],
    ['all', 'api', 'info', { refusals: true, successes: true }],
    ['off', 'api', 'debug', { refusals: false, successes: false }],
    ['refusals', 'ops', 'info', { refusals: false, successes: false }],
    ['all', 'ops', 'info', { refusals: false, successes: false }],
    ['refusals', 'ops', 'debug', { refusals: true, successes: true }],
  ])('mode %s on the %s listener at log level %s → %j', (mode, listener, level, expected) => {
    const log = createAccessLog({ logger: capture(level).logger, mode, ratePerSecond: 10, listener, now: () => 0 });
    expect({ refusals: log.refusals, successes: log.successes }).toEqual(expected);
  });

  it('a refusal at info with its reason, a success at debug (refusals mode), with the route and never the URL', () => {
    const { logger, lines } = capture('debug');
    const log = createAccessLog({ logger, mode: 'refusals', ratePerSecond: 10, listener: 'api', now: () => 0 });
    log.write(entry(401));
    log.write(entry(200));
    log.write(entry(402, { reason: null, body: Buffer.from('{"type":"quota_limited","code":"payment_required","detail":"x"}') }));
    log.write(entry(502, { reason: null, body: Buffer.from('<html>') }));
    expect(lines.map((l) => [l.level, l.msg, l.status, l.reason])).toEqual([
      ['info', 'request refused', 401, 'authentication_failed'],
      ['debug', 'request', 200, undefined],
      ['info', 'request refused', 402, 'payment_required'],
      ['info', 'request refused', 502, 'status_502'],
    ]);
    expect(lines[0]).toMatchObject({ access: true, route: 'local_evaluation', method: 'GET', durationMs: 1.23, keyKind: 'none' });
  });
});

describe('keyFields', () => {
  it.each([
    [{ authorization: 'Bearer phx_personal123' }, '', { keyKind: 'personal', keySha256: sha8('phx_personal123') }],
    [{ authorization: 'Bearer phs_secret123' }, '', { keyKind: 'secret', keySha256: sha8('phs_secret123') }],
    [{ authorization: 'Bearer pha_oauth123' }, '', { keyKind: 'oauth', keySha256: sha8('pha_oauth123') }],
    [{ authorization: 'Bearer phc_token123' }, '', { keyKind: 'project_token', keySha256: sha8('phc_token123') }],
    [{}, 'personal_api_key=phx_inquery1', { keyKind: 'personal', keySha256: sha8('phx_inquery1') }],
    [{}, 'token=phc_abc', { keyKind: 'none' }],
    [{ authorization: 'Basic dXNlcjpwdw==' }, '', { keyKind: 'none' }],
  ])('%j ?%s → %j', (headers, query, expected) => {
    expect(keyFields(headers, query === '' ? null : parseQuery(query))).toEqual(expected);
  });
});

describe('rate limit', () => {
  it('a burst past the bucket is suppressed and counted in one warning a second later; the bucket refills with time', () => {
    vi.useFakeTimers();
    let now = 0;
    const { logger, lines } = capture('info');
    const log = createAccessLog({ logger, mode: 'refusals', ratePerSecond: 3, listener: 'api', now: () => now });
    for (let i = 0; i < 10; i++) log.write(entry(401));
    expect(lines).toHaveLength(3);
    vi.advanceTimersByTime(1000);
    expect(lines).toHaveLength(4);
    expect(lines[3]).toMatchObject({ level: 'warn', suppressed: 7, msg: 'access log lines suppressed (FLAG_SIDECAR_ACCESS_LOG_RATE)' });
    now += 1000; // three more lines' worth
    for (let i = 0; i < 4; i++) log.write(entry(401));
    expect(lines.filter((l) => l.msg === 'request refused')).toHaveLength(6);
  });
});
