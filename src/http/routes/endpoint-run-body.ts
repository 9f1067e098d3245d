/**
 * A named-endpoint run request's body as read: parsed, the personal key it carries and its plan, memoized so apps
 * repeating a run skip the JSON parse and the canonical key, and carrying what the run handler worked out for its
 * last request with that body (endpoint-run.ts).
 */
import { LRUCache } from 'lru-cache';
import { entryBound } from '../../store/entry-bound.js';
import { ApiError } from '../../errors.js';
import type { EndpointRunCounts } from '../../metrics/metrics.js';
import type { Served } from '../../store/read-through.js';
import { bodyKeyOf, isJsonType, parseJsonBody } from '../body.js';
import type { Reply, RequestContext } from '../router.js';
import { planRun, type RunPlan } from './endpoint-run-plan.js';

/**
 * A run request's body as read, with what its last request worked out: the endpoint's metric tally, the entry key
 * (valid while no endpoint's generation moved) and the caller's grant (valid while no grant changed).
 */
export interface RunRead {
  /** undefined: not JSON, upstream judges it. */
  readonly parsed: unknown;
  readonly bodyKey: string | undefined;
  readonly plan: RunPlan;
  /** The endpoint's metric tally, as labelled at the name labels' `epoch`. */
  counts: { readonly epoch: number; readonly tally: EndpointRunCounts } | null;
  lastServed: Served | null;
  lastReply: Reply | null;
  lastKey: { readonly projectId: number; readonly endpointKey: string; readonly generation: number; epoch: number; readonly key: string } | null;
  lastGrant: { readonly projectId: number; readonly digest: string; readonly kind: string; readonly key: string; epoch: number; until: number } | null;
}

/** Largest body memoized (a larger one is read afresh every time). */
const maxMemoBytes = 2_048;

/**
 * `read(name, ctx, raw)`: the run body `raw` of endpoint `name` (undefined for GET) as read, or the ApiError its
 * JSON earned. Memoized by what decides it (name, `?version`, Content-Type, the body bytes; bounded, small bodies
 * only), and per keep-alive connection (by its auth memo) the last body, to skip even the memo's hashing. A body
 * carrying a key is never kept past its request.
 */
export function createRunBodies(): { read(name: string, ctx: RequestContext, raw: Buffer | undefined): RunRead | ApiError } {
  const bodies = new LRUCache<string, RunRead>(entryBound(2_000));
  const lastBodies = new WeakMap<object, { name: string; version: string | undefined; type: string | undefined; raw: Buffer; read: RunRead }>();

  function readRun(name: string, ctx: RequestContext, raw: Buffer | undefined): RunRead | ApiError {
    const memoKey = raw === undefined || raw.length > maxMemoBytes ? null : `${name}\u0000${ctx.query.get('version') ?? '\u0001'}\u0000${ctx.headers['content-type'] ?? ''}\u0000${raw.toString('latin1')}`;
    const known = memoKey === null ? undefined : bodies.get(memoKey);
    if (known !== undefined) return known;
    let parsed: unknown = null;
    if (raw !== undefined && raw.length > 0) {
      if (isJsonType(ctx.headers['content-type'])) {
        try {
          parsed = parseJsonBody(raw);
        } catch (error) {
          return error as ApiError;
        }
        // A literal `null` body is not the empty body: upstream's request model refuses it, so upstream says so.
        if (parsed === null) parsed = undefined;
      } else parsed = undefined; // not declared JSON (upstream answers 415 to a body without a type): upstream judges it
    }
    const bodyKey = bodyKeyOf(parsed);
    const plan: RunPlan = parsed === undefined || bodyKey !== undefined ? { kind: 'uncached' } : planRun(name, parsed, ctx.query.get('version'));
    const read: RunRead = { parsed, bodyKey, plan, counts: null, lastServed: null, lastReply: null, lastKey: null, lastGrant: null };
    // A body carrying a key is never kept past its request (as the listener treats a query carrying one).
    if (memoKey !== null && bodyKey === undefined) bodies.set(memoKey, read);
    return read;
  }

  return {
    read(name, ctx, raw) {
      if (raw === undefined) return readRun(name, ctx, raw);
      const version = ctx.query.get('version');
      const type = ctx.headers['content-type'];
      const last = lastBodies.get(ctx.authMemo);
      if (last !== undefined && last.name === name && last.version === version && last.type === type && last.raw.equals(raw)) return last.read;
      const read = readRun(name, ctx, raw);
      // A copy: the body may be a slice of the socket's whole read buffer, which must not be kept alive with it.
      if (!(read instanceof ApiError) && read.bodyKey === undefined && raw.length <= maxMemoBytes) lastBodies.set(ctx.authMemo, { name, version, type, raw: Buffer.from(raw), read });
      return read;
    },
  };
}
