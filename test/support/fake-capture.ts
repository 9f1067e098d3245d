/**
 * The fake upstream's capture endpoint for the events relay tests: `POST /batch/` records every event it is
 * given (with the batch's api_key), answers `{"status": 1}`; a status can be forced for the next batches.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** One event the fake received. */
export interface CapturedEvent {
  readonly token: string;
  readonly event: Record<string, unknown>;
}

/** Create the recorder; `handle` answers /batch/ and returns true, else false. */
export function createFakeCapture() {
  const events: CapturedEvent[] = [];
  const forced: Array<{ status: number; headers?: Record<string, string> }> = [];
  let batches = 0;
  return {
    handle(req: IncomingMessage, res: ServerResponse, url: URL, body: Buffer): boolean {
      if (req.method !== 'POST' || url.pathname.replace(/\/$/, '') !== '/batch') return false;
      batches += 1;
      const next = forced.shift();
      if (next) {
        res.writeHead(next.status, { 'content-type': 'text/plain', ...next.headers });
        res.end('forced');
        return true;
      }
      const parsed = JSON.parse(body.toString('utf8')) as { api_key: string; batch: Array<Record<string, unknown>> };
      for (const event of parsed.batch) events.push({ token: parsed.api_key, event });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":1}');
      return true;
    },
    /** Events received so far. */
    events,
    /** Batches received so far (answered or forced). */
    batches: (): number => batches,
    /** Answer the next batches with these statuses, in order. */
    force(...answers: Array<{ status: number; headers?: Record<string, string> }>): void {
      forced.push(...answers);
    },
  };
}
