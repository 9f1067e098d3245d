/**
 * The real Helm 4 binary (test/support/tools.ts) on a copy of helm/ in a temporary directory, with Helm's own
 * cache, config and data directories there too, so a run reads no user state and leaves nothing behind. The app
 * example gets its file:// dependency with `helm dependency update`, as a user would.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { rootDir } from './start-sidecar.js';
import { runTool, type ToolRun } from './tools.js';

/** A rendered Kubernetes object (only the fields every object has are typed). */
export interface KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly labels?: Record<string, string> };
  readonly [field: string]: unknown;
}

/** A private copy of helm/ (charts and examples) and the helm command run against it. */
export interface HelmWorkspace {
  /** helm/flag-sidecar in the copy. */
  readonly chart: string;
  /** helm/examples in the copy. */
  readonly examples: string;
  /** Write `values` to a values file in the copy; returns `-f <file>` for a helm command. */
  values(values: object): string[];
  /** Run helm with `args` in the copy's directory; never throws on a non-zero exit. */
  run(args: readonly string[]): ToolRun;
  /** `helm template` of `chart`; throws with Helm's message when it fails. */
  template(chart: string, args?: readonly string[]): KubeObject[];
  /** Remove the copy. */
  close(): void;
}

/** Copy helm/ into a temporary directory and fetch the app example's dependency (the chart itself, by path). */
export function createHelmWorkspace(): HelmWorkspace {
  const dir = mkdtempSync(join(tmpdir(), 'flag-sidecar-helm-'));
  cpSync(join(rootDir, 'helm'), join(dir, 'helm'), { recursive: true, filter: (source) => !source.endsWith('/charts') });
  const env = { ...process.env, HELM_CACHE_HOME: join(dir, 'cache'), HELM_CONFIG_HOME: join(dir, 'config'), HELM_DATA_HOME: join(dir, 'data') };
  const run = (args: readonly string[]): ToolRun => runTool('helm', args, { cwd: dir, env });
  const examples = join(dir, 'helm/examples');
  const dependency = run(['dependency', 'update', join(examples, 'app-with-sidecar')]);
  if (dependency.status !== 0) throw new Error(`helm dependency update failed: ${dependency.stderr}`);
  let files = 0;
  return {
    chart: join(dir, 'helm/flag-sidecar'),
    examples,
    values(values) {
      const file = join(dir, `values-${(files += 1)}.yaml`);
      writeFileSync(file, JSON.stringify(values));
      return ['-f', file];
    },
    run,
    template(chart, args = []) {
      const rendered = run(['template', 'flags', chart, '--namespace', 'shop', ...args]);
      if (rendered.status !== 0) throw new Error(`helm template ${args.join(' ')} failed: ${rendered.stderr}`);
      return parseAllDocuments(rendered.stdout)
        .map((doc) => {
          if (doc.errors.length > 0) throw new Error(`helm template printed invalid YAML: ${doc.errors[0]?.message ?? ''}`);
          return doc.toJSON() as KubeObject | null;
        })
        .filter((o): o is KubeObject => o !== null);
    },
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}
