/**
 * The API URL of a sidecar a benchmark started with FLAG_SIDECAR_LOG_LEVEL=info, from its "flag-sidecar listening"
 * log line on stdout; rejects when the process exits first.
 */
import type { ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';

export function listeningApi(child: ChildProcessByStdio<null, Readable, null>): Promise<string> {
  let out = '';
  return new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.includes('"flag-sidecar listening"'));
      if (line) resolve((JSON.parse(line) as { api: string }).api);
    });
    child.on('exit', () => reject(new Error(`sidecar exited: ${out}`)));
  });
}
