/**
 * The pino logger: JSON lines on stdout, credentials redacted wherever they could appear (headers, query
 * strings, config), so a key is never written to a log.
 */
import { pino, type Logger } from 'pino';
import type { LogLevel } from './config/parsers.js';

/** Paths pino censors. Keys are also never passed to the logger on purpose; this is the safety net. */
export const redactPaths = [
  'authorization',
  'headers.authorization',
  '*.headers.authorization',
  'req.headers.authorization',
  'key',
  '*.key',
  'upstreamKey',
  '*.upstreamKey',
  'personal_api_key',
  '*.personal_api_key',
  'query.personal_api_key',
  'secret_api_key',
  '*.secret_api_key',
];

/** Create the root logger. `destination` defaults to stdout (tests pass a stream to read lines back). */
export function createLogger(level: LogLevel, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { service: 'flag-sidecar' },
      redact: { paths: redactPaths, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? pino.destination({ sync: false }),
  );
}

export type { Logger };
