/**
 * The pino logger: JSON lines on stdout, credentials redacted wherever they could appear (headers, query
 * strings, config), so a key is never written to a log.
 */
import { pino, type DestinationStream, type Logger } from 'pino';
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
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
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

/** Where the process's log lines go: stdout, written asynchronously. */
export interface LogOutput {
  readonly stream: DestinationStream;
  /**
   * Stop writing: pending lines are dropped and the exit-time synchronous flush is skipped, so a full or
   * blocked stdout pipe cannot hold `process.exit()` (pino's exit flush retries EAGAIN without end).
   */
  abandon(): void;
}

/** Create the stdout output for the root logger (a broken pipe, EPIPE, makes pino stop writing; never fatal). */
export function createLogOutput(): LogOutput {
  const stream = pino.destination({ sync: false });
  return { stream, abandon: () => stream.destroy() };
}

export type { Logger };
