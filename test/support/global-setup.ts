/**
 * The vitest globalSetup (vitest.config.ts): everything `npm test` needs beyond Node and redis-server, provided
 * once per run, so that `npm ci && npm test` passes on a fresh machine:
 * - helm and promtool, provisioned into node_modules/.cache/flag-sidecar-tools (provision-*.ts);
 * - a private redis-server on a free port for the run (run-redis.ts), killed at the end;
 * - a private, initially empty TMPDIR for the workers and the processes they spawn (run-temp-dir.ts), which must
 *   be empty again at the end of the run, but for tsx's compile cache (shared by the sidecars the tests start).
 * Values reach the test files through provide/inject (provided-context.ts); TMPDIR through the environment,
 * which the forks of `pool: 'forks'` inherit because they are started after this setup.
 */
import { writeSync } from 'node:fs';
import type { TestProject } from 'vitest/node';
import { MissingToolError } from './missing-tool.js';
import './provided-context.js';
import { provisionHelm } from './provision-helm.js';
import { provisionPromtool } from './provision-promtool.js';
import { requireRedisServer, startRunRedis, type RunRedis } from './run-redis.js';
import { createRunTempDir, leftoversMessage, type RunTempDir } from './run-temp-dir.js';
import { toolsDir } from './tools-dir.js';

let runDir: RunTempDir | undefined;
let redis: RunRedis | undefined;
let restoreEnv: (() => void) | undefined;

/**
 * Provision the tools, the run's temp dir and its Redis, and provide them to the tests. When redis-server or
 * promtool is missing and cannot be had, ends the process at once (exit code 1) after printing one line naming
 * what to install; other failures throw (failing the run before any test), and `teardown` stops what was started.
 */
export async function setup(project: TestProject): Promise<void> {
  let tools: { helm: string; promtool: string };
  try {
    requireRedisServer();
    tools = { promtool: provisionPromtool(toolsDir), helm: provisionHelm(toolsDir) };
  } catch (error) {
    if (!(error instanceof MissingToolError)) throw error;
    // Exactly one line, not vitest's "Unhandled Error" banner, stack and code frame (nothing is started yet).
    writeSync(2, `${error.message}\n`);
    process.exit(1);
  }
  runDir = createRunTempDir();
  redis = await startRunRedis(runDir.redis, [runDir.root]);
  const previous = { TMPDIR: process.env.TMPDIR };
  restoreEnv = () => {
    for (const [name, value] of Object.entries(previous)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  process.env.TMPDIR = runDir.tmp;
  project.provide('runRedisPort', redis.port);
  project.provide('runRedisUrl', redis.url);
  project.provide('tools', tools);
}

/**
 * Stop the run's Redis and remove the run's temp dir. When the tests left anything in their TMPDIR, it is
 * removed too and the run fails: exit code 1 and one message naming the leftover paths (a teardown error alone
 * does not fail a vitest run, hence the exit code).
 */
export async function teardown(): Promise<void> {
  await redis?.stop();
  redis = undefined;
  restoreEnv?.();
  restoreEnv = undefined;
  if (runDir === undefined) return;
  const left = runDir.leftovers();
  runDir.remove();
  runDir = undefined;
  if (left.length > 0) {
    process.exitCode = 1;
    const error = new Error(leftoversMessage(left));
    error.stack = `Error: ${error.message}`; // the message is the point, not where teardown threw it
    throw error;
  }
}
