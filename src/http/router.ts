/**
 * The route table: method + path template → named handler. Paths match with or without a trailing slash, as
 * upstream's router does. Route names are the metric labels (never raw paths). Fixed paths are one Map lookup;
 * templated ones a walk down a tree of path segments, literal segments before parameters, with no regex. As in
 * upstream's URL resolver (list actions registered before detail routes), the most literal template matching
 * the path decides: a method it does not map is a 405, not a match further down (`PATCH
 * …/feature_flags/activity` is not an update of a flag with id "activity").
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
  /**
   * Complete a route handler that returned `later`: call exactly one of these, once. (A hot path that waits for
   * a callback, such as a request body, answers through these instead of chaining promises.)
   */
  answer(reply: Reply | Promise<Reply>): void;
  answerError(error: unknown): void;
}

/** A handler; may be async. Throwing an ApiError answers with upstream's error body. */
export type Handler = (ctx: RequestContext) => Reply | Promise<Reply>;

/** What a route handler returns when it answers later through `ctx.answer` / `ctx.answerError`. */
export const later: unique symbol = Symbol('answered later');

/** A route's handler: a Handler, or one that may answer later. */
export type RouteHandler = (ctx: RequestContext) => Reply | Promise<Reply> | typeof later;

/** One row of the table. */
export interface Route {
  readonly name: string;
  readonly methods: readonly string[];
  readonly template: string;
  readonly handler: RouteHandler;
}

/** Result of matching a request. */
export type Match =
  | { readonly kind: 'found'; readonly route: Route; readonly params: readonly string[] }
  | { readonly kind: 'method_not_allowed'; readonly route: Route }
  | { readonly kind: 'not_found' };

const trimSlash = (path: string): string => (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);

/** A node of the segment tree: children by literal segment, one parameter child, the routes ending here. */
interface Node {
  readonly literal: Map<string, Node>;
  param: Node | null;
  /** Routes whose template ends at this node, by method (HEAD added wherever GET is). */
  readonly byMethod: Map<string, Route>;
  first: Route | null;
}

const newNode = (): Node => ({ literal: new Map(), param: null, byMethod: new Map(), first: null });

/** Build the matcher. */
export function createRouter(routes: readonly Route[]) {
  // Fixed routes answer with one prebuilt Match each: nothing is allocated to find them.
  const fixed = new Map<string, Map<string, Match>>();
  const fixedFirst = new Map<string, Route>();
  const root = newNode();
  for (const route of routes) {
    const methods = route.methods.includes('GET') ? [...route.methods, 'HEAD'] : route.methods;
    const segments = trimSlash(route.template).split('/');
    if (!route.template.includes(':')) {
      const key = segments.join('/');
      const byMethod = fixed.get(key) ?? new Map<string, Match>();
      const found: Match = Object.freeze({ kind: 'found', route, params: Object.freeze([]) as readonly string[] });
      for (const method of methods) if (!byMethod.has(method)) byMethod.set(method, found);
      fixed.set(key, byMethod);
      if (!fixedFirst.has(key)) fixedFirst.set(key, route);
      continue;
    }
    let node = root;
    for (const segment of segments) {
      if (segment.charCodeAt(0) === 58 /* : */) node = node.param ??= newNode();
      else {
        let next = node.literal.get(segment);
        if (next === undefined) node.literal.set(segment, (next = newNode()));
        node = next;
      }
    }
    for (const method of methods) if (!node.byMethod.has(method)) node.byMethod.set(method, route);
    node.first ??= route;
  }

  /** The node where `parts[i…]` ends, literal branches first; collects parameter values into `params`. */
  function walk(node: Node, parts: readonly string[], i: number, params: string[]): Node | null {
    if (i === parts.length) return node.first === null ? null : node;
    const part = parts[i] as string;
    const literal = node.literal.get(part);
    if (literal !== undefined) {
      const found = walk(literal, parts, i + 1, params);
      if (found !== null) return found;
    }
    if (node.param !== null && part !== '') {
      params.push(part);
      const found = walk(node.param, parts, i + 1, params);
      if (found !== null) return found;
      params.pop();
    }
    return null;
  }

  // Templated paths recently matched (SDKs and apps repeat the same few), answered without a walk; bounded by
  // clearing when full, so odd traffic can at worst cost the walk again.
  const recent = new Map<string, Match>();
  const recentMax = 512;

  function walkMatch(method: string, trimmed: string): Match {
    const params: string[] = [];
    const node = walk(root, trimmed.split('/'), 0, params);
    if (node === null) return { kind: 'not_found' };
    const route = node.byMethod.get(method);
    if (route === undefined) return { kind: 'method_not_allowed', route: node.first as Route };
    for (let i = 0; i < params.length; i++) params[i] = decodeURIComponent(params[i] as string);
    return Object.freeze({ kind: 'found', route, params: Object.freeze(params) });
  }

  return function match(method: string, path: string): Match {
    const trimmed = trimSlash(path);
    const exact = fixed.get(trimmed);
    if (exact !== undefined) {
      return exact.get(method) ?? { kind: 'method_not_allowed', route: fixedFirst.get(trimmed) as Route };
    }
    const key = `${method} ${trimmed}`;
    let found = recent.get(key);
    if (found === undefined) {
      found = walkMatch(method, trimmed);
      if (recent.size >= recentMax) recent.clear();
      recent.set(key, found);
    }
    return found;
  };
}
