/**
 * Sidecar processes (dist/main.js) for the fleet benchmarks (fleet.ts, fleet-scale.ts): started on fixed ports
 * from `basePort` (API on basePort + 2 × index, ops one above), polling project 1 of a stand-in upstream.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
/** The key and token the benchmarks' sidecars use. */
export const ownKey = 'phs_benchown';
export const token = 'phc_bench';

/** One sidecar process. */
export interface Sidecar {
  child: ChildProcess;
  api: string;
  ops: string;
}

/** Start sidecar `index` polling `upstream` with `env` on top of the common settings. */
export function startSidecarProcess(index: number, basePort: number, upstream: string, env: Record<string, string | undefined>): Sidecar {
  const api = basePort + 2 * index;
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'ignore'],
    env: {
      ...process.env,
      FLAG_SIDECAR_UPSTREAM_URL: upstream,
      FLAG_SIDECAR_UPSTREAM_KEY: ownKey,
      FLAG_SIDECAR_PROJECTS: `1:${token}`,
      FLAG_SIDECAR_LISTEN: `127.0.0.1:${api}`,
      FLAG_SIDECAR_OPS_LISTEN: `127.0.0.1:${api + 1}`,
      FLAG_SIDECAR_LOG_LEVEL: 'warn',
      ...env,
    },
  });
  return { child, api: `http://127.0.0.1:${api}`, ops: `http://127.0.0.1:${api + 1}` };
}

/** kill -9 every sidecar still running and wait for each to exit. */
export async function stopAll(sidecars: readonly Sidecar[]): Promise<void> {
  await Promise.all(
    sidecars.map(async (s) => {
      if (s.child.exitCode !== null || s.child.signalCode !== null) return;
      s.child.kill('SIGKILL');
      await once(s.child, 'exit');
    }),
  );
}

/** The benchmarks' stand-in upstream (startStandInUpstream). */
export interface StandInUpstream {
  server: Server;
  url: string;
  /** Every request so far. */
  count: () => number;
  /** When each local_evaluation poll arrived (performance.now()). */
  polls: () => number[];
  /** Edit the definitions (a flag's version); returns the new ETag. */
  change: () => string;
  etag: () => string;
  /** When upstream first answered `etag` with a body. */
  answeredAt: (etag: string) => number | undefined;
  size: () => number;
}

/** local_evaluation of project 1 serving `defs`, with ETag/304; anything else gets upstream's 404 body. */
export function startStandInUpstream(defs: { flags: Array<Record<string, unknown>> }): Promise<StandInUpstream> {
  let version = 1;
  let body = Buffer.from(JSON.stringify(defs));
  let etag = '';
  const rehash = (): void => void (etag = `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`);
  rehash();
  let requests = 0;
  const pollTimes: number[] = [];
  const answered = new Map<string, number>();
  const server = createServer((req, res) => {
    requests += 1;
    if (!(req.url ?? '').includes('/local_evaluation')) {
      return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}');
    }
    pollTimes.push(performance.now());
    if (req.headers['if-none-match'] === etag) return void res.writeHead(304, { etag }).end();
    if (!answered.has(etag)) answered.set(etag, performance.now());
    res.writeHead(200, { 'content-type': 'application/json', etag }).end(body);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        server,
        url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
        count: () => requests,
        polls: () => pollTimes,
        change: () => {
          version += 1;
          (defs.flags[0] as Record<string, unknown>).version = version;
          body = Buffer.from(JSON.stringify(defs));
          rehash();
          return etag;
        },
        etag: () => etag,
        answeredAt: (e) => answered.get(e),
        size: () => body.length,
      });
    });
  });
}
