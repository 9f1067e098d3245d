#!/usr/bin/env node
/**
 * Composition root and the `flag-sidecar` command (src/cli.ts): configuration → logger → sidecar → signal
 * handling, or one of the one-shot commands. No logic of its own. Exit codes: 0 after a clean SIGTERM/SIGINT
 * shutdown (or a one-shot command that succeeded), 2 for a bad configuration or usage, 1 for a failure.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { checkFiles, helpText, parseCommand, pullSnapshot } from './cli.js';
import { describeConfig } from './config/describe.js';
import { loadConfig } from './config/load.js';
import { configErrorText } from './config/error-text.js';
import { ConfigError } from './errors.js';
import { checkHealth } from './health.js';
import { holdTickShape, raiseInliningBudget, scheduleStartupCollections } from './release-memory.js';

// Before anything that makes V8 collect (src/release-memory.ts).
holdTickShape();
// Before the request path is optimized (src/release-memory.ts, inliningBudget).
raiseInliningBudget(process.execArgv);

const rootDir = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
// The image sets these from its VERSION and COMMIT build arguments.
const build = { version: process.env.FLAG_SIDECAR_BUILD_VERSION || pkg.version, commit: process.env.FLAG_SIDECAR_BUILD_COMMIT || 'unknown' };

const command = parseCommand(process.argv.slice(2));
if (command.kind === 'help') {
  process.stdout.write(helpText);
  process.exit(0);
}
if (command.kind === 'version') {
  process.stdout.write(`flag-sidecar ${build.version} (commit ${build.commit}, node ${process.version})\n`);
  process.exit(0);
}
if (command.kind === 'usage-error') {
  process.stderr.write(`flag-sidecar: ${command.message}\n\n${helpText}`);
  process.exit(2);
}

// Only FLAG_SIDECAR_OPS_LISTEN: the whole configuration (secret files included) is the running sidecar's business.
if (command.kind === 'health') {
  const outcome = await checkHealth(process.env, command.timeoutMs);
  (outcome.code === 0 ? process.stdout : process.stderr).write(`flag-sidecar: ${outcome.message}\n`);
  process.exit(outcome.code);
}

// Signals are handled from here on when serving, before the configuration is read: as PID 1 in a container, a
// SIGTERM with no handler is ignored. One that arrives while starting stops the sidecar as soon as it is up
// (start-up is bounded: no request waits on it). Handled for good, not once: under `npm start` a Ctrl-C reaches
// the process twice (from the terminal, and as npm forwards it), and a second signal must not end the drain the
// first began; it is logged. A third exits at once, for a user who will not wait (the shutdown deadline bounds
// the drain anyway).
const forceAfterSignals = 3;
let signals = 0;
let firstSignal: string | null = null;
let stopSidecar: ((signal: string) => void) | null = null;
/** Set once the logger exists; before that a signal is only counted. */
let onLaterSignal: ((signal: string, count: number) => void) | null = null;
const onSignal = (signal: string): void => {
  signals += 1;
  if (signals === 1) {
    firstSignal = signal;
    stopSidecar?.(signal);
  } else if (onLaterSignal) onLaterSignal(signal, signals);
  else if (signals >= forceAfterSignals) {
    process.stderr.write('flag-sidecar: exiting at once on a repeated signal\n');
    process.exit(1);
  }
};
if (command.kind === 'serve') {
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

let config;
try {
  config = loadConfig(process.env, { readFile: (path) => readFileSync(path, 'utf8'), rootDir });
} catch (error) {
  process.stderr.write(error instanceof ConfigError ? configErrorText(error.problems) : `flag-sidecar: ${String(error)}\n`);
  process.exit(2);
}

if (command.kind === 'check-config') {
  const problems = await checkFiles(config);
  process.stdout.write(`${JSON.stringify(describeConfig(config, process.env), null, 2)}\n`);
  if (problems.length > 0) {
    process.stderr.write(configErrorText(problems));
    process.exit(2);
  }
  process.stderr.write('flag-sidecar: configuration OK\n');
  process.exit(0);
}

if (command.kind === 'snapshot-pull') {
  try {
    const pulled = await pullSnapshot(config, command.out, build);
    process.stderr.write(`flag-sidecar: wrote ${command.out}: ${pulled.map((p) => `project ${p.id} (${p.flags} flags)`).join(', ')}\n`);
    process.exit(0);
  } catch (error) {
    process.stderr.write(`flag-sidecar: snapshot pull failed: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

// The server's modules are loaded only to serve: the one-shot commands above (`health` is the image's
// HEALTHCHECK, run every 30 s) start without them.
const [{ startSidecar }, { createLogOutput, createLogger }] = await Promise.all([import('./app.js'), import('./logger.js')]);
const output = createLogOutput();
const logger = createLogger(config.logLevel, output.stream);
const shutdownTimeoutMs = config.shutdownTimeoutMs;
/** Exit now: log lines not yet written are given up, so no state of stdout can hold the exit. */
const exitNow = (code: number): never => {
  output.abandon();
  process.exit(code);
};
/** Exit after the log lines are written, or after `waitMs` whatever stdout does. */
const exitAfterFlush = (code: number, waitMs: number): void => {
  setTimeout(() => exitNow(code), waitMs).unref();
  logger.flush(() => exitNow(code));
};
onLaterSignal = (signal: string, count: number): void => {
  if (count < forceAfterSignals) {
    logger.warn({ signal, signals: count }, `signal ignored: already shutting down (signal ${forceAfterSignals} times to exit at once)`);
    return;
  }
  logger.error({ signal, signals: count }, 'exiting at once on a repeated signal: requests still open are closed unanswered');
  exitAfterFlush(1, 200);
};
try {
  // Once listening it has logged so, in one line (src/banner.ts).
  const sidecar = await startSidecar({ config, logger, build });
  stopSidecar = (signal: string): void => {
    stopSidecar = null;
    logger.info({ signal, timeoutMs: shutdownTimeoutMs }, 'shutting down');
    // The hard deadline: whatever is still running (a slow client, a stuck disk, a blocked log pipe), the
    // process is gone by FLAG_SIDECAR_SHUTDOWN_TIMEOUT. stop() itself finishes earlier (see drainBudgetMs).
    const deadline = setTimeout(() => {
      logger.error({ timeoutMs: shutdownTimeoutMs }, 'shutdown deadline reached; exiting');
      exitNow(1);
    }, shutdownTimeoutMs);
    const started = Date.now();
    const leftMs = (): number => Math.max(0, shutdownTimeoutMs - (Date.now() - started));
    sidecar.stop().then(
      () => {
        clearTimeout(deadline);
        exitAfterFlush(0, Math.min(1000, leftMs()));
      },
      (error: unknown) => {
        clearTimeout(deadline);
        logger.error({ err: String(error) }, 'shutdown failed');
        exitAfterFlush(1, Math.min(1000, leftMs()));
      },
    );
  };
  if (firstSignal !== null) stopSidecar(firstSignal);
  // Once up: the young generation that loading grew, given back (src/release-memory.ts).
  else scheduleStartupCollections(process.version, undefined, undefined, sidecar.apiRequests);
} catch (error) {
  // A configuration the sidecar cannot run with exits 2, said as check-config and loadConfig's refusals are
  // (src/config/error-text.ts); anything else (a listener that cannot be had: src/http/listen-error.ts) 1, with
  // one line on stderr saying why.
  const badConfig = error instanceof ConfigError;
  if (badConfig) process.stderr.write(configErrorText(error.problems));
  else process.stderr.write(`flag-sidecar: failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  exitAfterFlush(badConfig ? 2 : 1, 1000);
}
