/**
 * `flag-sidecar health`: asks the running sidecar's ops listener for /readyz, as a container health check
 * (the image's HEALTHCHECK; the image has no curl or wget). Exit 0 when it answers 200, 1 when it answers
 * anything else, cannot be reached or does not answer within the timeout, 2 when the configuration does not say
 * where to ask. One request, no retries, nothing read beyond the first KiB of the answer. It reads only
 * FLAG_SIDECAR_OPS_LISTEN: a secret file that cannot be read (now) or any other setting has no say, so the check
 * passes exactly when the running sidecar's /readyz does.
 */
import { http } from './http/node-http.js';
import { formatDuration, parseDurationWithin, type ListenAddress } from './config/parsers.js';
import { redactSecrets } from './config/redact.js';
import { spec } from './config/spec.js';

/** The longest answer body kept for the message (a /readyz body is a few dozen bytes). */
const bodyLimit = 1024;

/** `health --timeout`: the default, and the accepted range. */
export const healthTimeout = { defaultMs: 3000, parse: parseDurationWithin(100, 60_000) };

/** `health [--timeout DURATION]`: the options, or why they are wrong. */
export function parseHealthOptions(args: readonly string[]): { readonly timeoutMs: number } | { readonly error: string } {
  let timeoutMs = healthTimeout.defaultMs;
  for (let i = 0; i < args.length; i++) {
    const option = args[i] as string;
    const value = option === '--timeout' ? args[++i] : option.startsWith('--timeout=') ? option.slice('--timeout='.length) : null;
    if (value === null) return { error: `unexpected argument "${option}"` };
    try {
      timeoutMs = healthTimeout.parse(value ?? '');
    } catch (error) {
      return { error: `health --timeout: ${(error as Error).message}` };
    }
  }
  return { timeoutMs };
}

/** What `health` concluded: the exit code and the one line it prints. */
export interface HealthOutcome {
  readonly code: 0 | 1 | 2;
  readonly message: string;
}

/** The ops listener `env` configures (FLAG_SIDECAR_OPS_LISTEN, else its default), or the outcome (code 2) saying why not. */
export function opsListenOf(env: Readonly<Record<string, string | undefined>>): ListenAddress | HealthOutcome {
  const { env: name, parse } = spec.opsListen;
  const given = env[name];
  try {
    return parse(given !== undefined && given.trim() !== '' ? given : spec.opsListen.default);
  } catch (error) {
    return { code: 2, message: redactSecrets(`${name}: ${(error as Error).message}`, []) };
  }
}

/**
 * The /readyz URL of the ops listener the sidecar binds (`FLAG_SIDECAR_OPS_LISTEN`): an unspecified bind address
 * (0.0.0.0, ::) is asked on loopback. Returns an outcome with code 2 instead when the port is 0 (chosen by the OS
 * at start, so no other process can know it).
 */
export function readyzUrl(ops: ListenAddress): string | HealthOutcome {
  if (ops.port === 0) {
    return { code: 2, message: 'FLAG_SIDECAR_OPS_LISTEN has port 0 (any free port): health cannot know it; set a fixed port' };
  }
  const host = ops.host === '0.0.0.0' || ops.host === '' ? '127.0.0.1' : ops.host === '::' ? '::1' : ops.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${ops.port}/readyz`;
}

/**
 * GET `url` once and judge the answer: 200 → 0 (`ready`), any other status → 1 with the status and the start of
 * the body, no connection or no complete answer within `timeoutMs` → 1 naming the cause. Never rejects.
 */
export function probeReadyz(url: string, timeoutMs: number): Promise<HealthOutcome> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: HealthOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(outcome);
    };
    const req = http.request(url, { method: 'GET', agent: false, headers: { accept: 'application/json', connection: 'close' } }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const judge = (): void => {
        const body = Buffer.concat(chunks).toString('utf8').trim().slice(0, 200);
        const status = res.statusCode ?? 0;
        finish(status === 200 ? { code: 0, message: `ready: ${url}` } : { code: 1, message: `not ready: ${url} answered ${status}${body ? ` ${body}` : ''}` });
      };
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= bodyLimit) judge();
      });
      res.on('end', judge);
      res.on('error', (error) => finish({ code: 1, message: `not ready: ${url}: answer cut off (${error.message})` }));
    });
    const timer = setTimeout(() => finish({ code: 1, message: `not ready: ${url} gave no answer within ${formatDuration(timeoutMs)}` }), timeoutMs);
    req.on('error', (error: NodeJS.ErrnoException) => finish({ code: 1, message: `unreachable: ${url}: ${error.code ?? error.message}` }));
    req.end();
  });
}

/** `health` for the ops listener `env` configures: where to ask, then the probe. */
export async function checkHealth(env: Readonly<Record<string, string | undefined>>, timeoutMs: number): Promise<HealthOutcome> {
  const ops = opsListenOf(env);
  if ('code' in ops) return ops;
  const url = readyzUrl(ops);
  return typeof url === 'string' ? probeReadyz(url, timeoutMs) : url;
}
