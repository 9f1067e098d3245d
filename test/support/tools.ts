/**
 * The external tools some tests run — Helm 4 and Prometheus's promtool — as installed by
 * `.ci/install-test-tools` into node_modules/.cache/flag-sidecar-tools. A missing tool fails the test that needs it
 * with a message naming that script: these tests never skip (CI installs the tools before `npm test`).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { rootDir } from './start-sidecar.js';

const toolsDir = join(rootDir, 'node_modules/.cache/flag-sidecar-tools');

/** The path of `name` (helm, promtool); throws naming the install script when it is not installed. */
export function toolPath(name: 'helm' | 'promtool'): string {
  const path = join(toolsDir, name);
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`bash .ci/install-test-tools\` (after npm ci) to install helm and promtool`);
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
