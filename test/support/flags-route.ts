/**
 * The /flags route driven without a socket (unit tests): a request whose body arrives in chunks, and what the
 * route answered through the request context.
 */
import { PassThrough } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { parseQuery } from '../../src/http/query.js';
import type { Reply, RequestContext, Route } from '../../src/http/router.js';

export interface RouteOutcome {
  readonly returned: unknown;
  readonly answers: Array<Reply | Promise<Reply>>;
  readonly errors: unknown[];
}

/** Run `route` on a request whose body arrives as `chunks` (then ends, unless `fail` errors the stream). */
export async function runFlagsRoute(
  route: Route | undefined,
  chunks: Buffer[],
  options: { readonly headers?: Record<string, string>; readonly fail?: Error; readonly path?: string; readonly rawQuery?: string } = {},
): Promise<RouteOutcome> {
  const headers = options.headers ?? {};
  const rawQuery = options.rawQuery ?? 'v=2';
  const request = Object.assign(new PassThrough(), { headers }) as unknown as IncomingMessage & PassThrough;
  const answers: Array<Reply | Promise<Reply>> = [];
  const errors: unknown[] = [];
  const ctx = {
    method: 'POST',
    path: options.path ?? '/flags',
    query: parseQuery(rawQuery),
    rawQuery,
    headers,
    params: [],
    requestId: 1,
    request,
    answer: (reply: Reply | Promise<Reply>) => void answers.push(reply),
    answerError: (error: unknown) => void errors.push(error),
  } as unknown as RequestContext;
  const returned = route?.handler(ctx);
  for (const chunk of chunks) request.write(chunk);
  if (options.fail) request.destroy(options.fail);
  else request.end();
  await new Promise((resolve) => setTimeout(resolve, 20));
  return { returned, answers, errors };
}
