/**
 * Starts a real sidecar on port 0 for a test, with its logs captured as parsed JSON lines.
 */
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { startSidecar, type Sidecar } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/logger.js';

/** The repository root. */
export const rootDir = fileURLToPath(new URL('../..', import.meta.url));

/** A started test sidecar plus its captured logs. */
export type TestSidecar = Sidecar & { logs: Array<Record<string, unknown>> };

/**
 * The sidecar's random source in tests that pass none: uniform over [0, 0.001) instead of [0, 1), so every jitter
 * sits at the low end of its range. Above all the first poll: drawn over up to a tenth of the interval (1 s at the
 * default 30 s), it held each test that waits for readiness ~0.5 s on average (~90 s per pass over ~185 starts).
 * Every draw is one Math.random can make, so no code path is taken that production cannot take; tokens drawn
 * from it (fleet run tokens) stay distinct. Tests about jitter or the schedule pass their own `random`.
 */
export const lowJitter = (): number => Math.random() / 1000;

/** Start a sidecar with `env` (listeners default to 127.0.0.1:0, log level debug; `random` defaults to lowJitter). */
export async function startTestSidecar(
  env: Record<string, string>,
  options: { now?: () => number; random?: () => number } = {},
): Promise<TestSidecar> {
  const config = loadConfig(
    { FLAG_SIDECAR_LISTEN: '127.0.0.1:0', FLAG_SIDECAR_OPS_LISTEN: '127.0.0.1:0', FLAG_SIDECAR_LOG_LEVEL: 'debug', ...env },
    { readFile: (path) => readFileSync(path, 'utf8'), rootDir },
  );
  const logs: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  const sidecar = await startSidecar({ config, logger: createLogger(config.logLevel, stream), build: { version: 'test', commit: 'test' }, random: lowJitter, ...options });
  return Object.assign(sidecar, { logs });
}

/** Poll `check` every 10 ms until it returns true or `timeoutMs` passes (then throws with `what`, or what it returns then). */
export async function waitFor(check: () => boolean | Promise<boolean>, what: string | (() => string), timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
