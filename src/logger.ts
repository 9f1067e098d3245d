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
  // OFREP's other credential header (a project token or, for FLAG_SIDECAR_OFREP_REQUIRE_KEY projects, a key).
  'headers["x-api-key"]',
  '*.headers["x-api-key"]',
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
   * Before `process.exit()`: write what stdout takes now without waiting, drop the rest, and stop. pino's own
   * exit-time flush retries a full pipe (EAGAIN) without end; after this it has nothing to do, so no state of
   * stdout can hold the exit.
   */
  abandon(): void;
}

/** Create the stdout output for the root logger (a broken pipe, EPIPE, makes pino stop writing; never fatal). */
export function createLogOutput(): LogOutput {
  let exiting = false;
  const stream = pino.destination({ sync: false, retryEAGAIN: () => !exiting });
  return {
    stream,
    abandon: () => {
      exiting = true;
      try {
        stream.flushSync();
      } catch {
        // a full or broken pipe: what it did not take is dropped
      }
      stream.destroy();
    },
  };
}

export type { Logger };
