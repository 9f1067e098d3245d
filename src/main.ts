/**
 * Composition root: configuration → logger → sidecar → signal handling. No logic of its own. Exit codes:
 * 0 after a clean SIGTERM/SIGINT shutdown, 2 for a bad configuration, 1 for a failed start.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startSidecar } from './app.js';
import { loadConfig } from './config/load.js';
import { ConfigError } from './errors.js';
import { createLogger } from './logger.js';
import { startupBanner } from './banner.js';

const rootDir = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

let config;
try {
  config = loadConfig(process.env, { readFile: (path) => readFileSync(path, 'utf8'), rootDir });
} catch (error) {
  process.stderr.write(`flag-sidecar: ${error instanceof ConfigError ? error.message : String(error)}\n`);
  process.exit(2);
}

const logger = createLogger(config.logLevel);
try {
  const sidecar = await startSidecar({
    config,
    logger,
    build: { version: pkg.version, commit: process.env.FLAG_SIDECAR_BUILD_COMMIT ?? 'unknown' },
  });
  // Human-readable lines on stderr; stdout carries only JSON log lines for log shippers.
  process.stderr.write(startupBanner(config, sidecar.apiUrl, sidecar.opsUrl, sidecar.store.projectIds()));
  const shutdown = (signal: string): void => {
    logger.info({ signal }, 'shutting down');
    sidecar.stop().then(
      () => logger.flush(() => process.exit(0)),
      (error: unknown) => {
        logger.error({ err: String(error) }, 'shutdown failed');
        logger.flush(() => process.exit(1));
      },
    );
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
} catch (error) {
  logger.fatal({ err: error instanceof Error ? error.message : String(error) }, 'flag-sidecar failed to start');
  logger.flush(() => process.exit(1));
}
