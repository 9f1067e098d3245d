/**
 * The route table: method + path template → named handler. Paths match with or without a trailing slash, as
 * upstream's router does. Route names are the metric labels (never raw paths). Fixed paths are one Map lookup;
 * templated ones a segment walk over the table, with no regex. As in upstream's URL resolver, the first
 * template that matches the path decides: a method it does not map is a 405, not a match further down
 * (`PATCH …/feature_flags/activity` is not an update of a flag with id "activity").
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { AuthMemo } from '../auth/authenticate.js';
import type { Query } from './query.js';

/** What a handler answers; only respond.ts writes it to the socket. */
export interface Reply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** null: no body (and no Content-Length unless the headers carry one). */
  readonly body: Buffer | null;
}

/** One request as handlers see it. */
export interface RequestContext {
  readonly method: string;
  readonly path: string;
  readonly query: Query;
  /** The query string as sent (after `?`, '' when none), forwarded upstream verbatim. */
  readonly rawQuery: string;
  readonly headers: IncomingHttpHeaders;
  /** Values of the template's `:params`, in order. */
  readonly params: readonly string[];
  readonly requestId: number;
  /** The connection's authentication memo (see auth/authenticate.ts). */
  readonly authMemo: AuthMemo;
  /** The request itself, for handlers that read a body (see body.ts). */
  readonly request: IncomingMessage;
}

/** A handler; may be async. Throwing an ApiError answers with upstream's error body. */
export type Handler = (ctx: RequestContext) => Reply | Promise<Reply>;

/** One row of the table. */
export interface Route {
  readonly name: string;
  readonly methods: readonly string[];
  readonly template: string;
  readonly handler: Handler;
}

/** Result of matching a request. */
export type Match =
  | { readonly kind: 'found'; readonly route: Route; readonly params: readonly string[] }
  | { readonly kind: 'method_not_allowed'; readonly route: Route }
  | { readonly kind: 'not_found' };

const splitPath = (path: string): string[] => {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  return trimmed.split('/');
};

/** Build the matcher. Routes without parameters are found in a Map; the others in table order (put specific first). */
export function createRouter(routes: readonly Route[]) {
  const compiled = routes.map((route) => ({
    route,
    segments: splitPath(route.template),
    methods: new Set(route.methods.includes('GET') ? [...route.methods, 'HEAD'] : route.methods),
  }));
  // Fixed routes answer with one prebuilt Match each: nothing is allocated to find them.
  const fixed = new Map<string, Array<{ methods: Set<string>; found: Match }>>();
  for (const c of compiled) {
    if (c.route.template.includes(':')) continue;
    const key = c.segments.join('/');
    const found: Match = Object.freeze({ kind: 'found', route: c.route, params: Object.freeze([]) as readonly string[] });
    fixed.set(key, [...(fixed.get(key) ?? []), { methods: c.methods, found }]);
  }
  const dynamic = compiled.filter((c) => c.route.template.includes(':'));

  return function match(method: string, path: string): Match {
    let wrongMethod: Route | null = null;
    const exact = fixed.get(path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);
    if (exact !== undefined) {
      for (const { methods, found } of exact) {
        if (methods.has(method)) return found;
        wrongMethod ??= (found as { route: Route }).route;
      }
    }
    if (wrongMethod !== null) return { kind: 'method_not_allowed', route: wrongMethod };
    const parts = splitPath(path);
    for (const { route, segments, methods } of dynamic) {
      if (segments.length !== parts.length) continue;
      if (wrongMethod !== null && route.template !== wrongMethod.template) continue;
      const params: string[] = [];
      let ok = true;
      for (let i = 0; i < segments.length; i++) {
        const segment = segments[i] as string;
        const part = parts[i] as string;
        if (segment.charCodeAt(0) === 58 /* : */) {
          if (part === '') {
            ok = false;
            break;
          }
          params.push(decodeURIComponent(part));
        } else if (segment !== part) {
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      if (methods.has(method)) return { kind: 'found', route, params };
      wrongMethod ??= route;
    }
    return wrongMethod ? { kind: 'method_not_allowed', route: wrongMethod } : { kind: 'not_found' };
  };
}
