/**
 * The flag API (operations 1–18 of docs/api-compatibility.md, except local_evaluation, which sdk.ts serves), each
 * operation served as docs/architecture.md#a-request describes:
 * - read-through with the caller's credential: list (1), retrieve (3), activity (6, 13), remote_config (11),
 *   status (12), my_flags (17);
 * - evaluated locally: evaluation_reasons (15), see evaluate.ts;
 * - forwarded: create (2), update (4, PATCH and PUT), and the POST actions 7–10 and 18;
 * - local: DELETE (5) answers upstream's empty 405 after the auth check; bulk_keys (14) from the snapshot when
 *   every id asked for is in it (else forwarded).
 */
import { unverifiedPrincipal } from '../../auth/authenticate.js';
import { offline } from '../../errors.js';
import type { ProjectSnapshot } from '../../store/snapshot.js';
import type { Store } from '../../store/store.js';
import { isJsonType, parseJsonBody, readBody } from '../body.js';
import { valueReply } from '../respond.js';
import type { Reply, RequestContext, Route } from '../router.js';
import type { Access, Authorized } from './access.js';
import type { WriteRoutes } from './flag-writes.js';
import type { ReadThroughRoutes, RouteTtl } from './read-through.js';

/** Dependencies of flagRoutes. */
export interface FlagRouteDeps {
  readonly access: Access;
  readonly store: Store;
  readonly reads: ReadThroughRoutes;
  readonly writes: WriteRoutes;
  readonly ttl: RouteTtl;
  readonly activityTtl: RouteTtl;
  readonly maxBodyBytes: number;
  readonly online: boolean;
  /** remote_config's handler (remote-config.ts). */
  readonly remoteConfig: Route['handler'];
  /** evaluation_reasons' handler (evaluate.ts). */
  readonly evaluationReasons: Route['handler'];
}

const emptyNotAllowed: Reply = { status: 405, headers: { 'content-length': '0' }, body: null };

/** A Python repr of a JSON scalar, as upstream's bulk_keys warning prints rejected ids; null for other values. */
function pyRepr(value: unknown): string | null {
  if (typeof value === 'string') return value.includes("'") && !value.includes('"') ? `"${value}"` : `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (value === null) return 'None';
  return null;
}

/**
 * bulk_keys (op 14) from the snapshot: `{"keys": {"<id>": "<key>"}}` (plus upstream's warning for ids that are
 * not integers), or null when the snapshot cannot answer exactly (an id it does not hold: a flag it may leave
 * out, such as a remote-configuration flag) and upstream must.
 */
export function bulkKeys(project: ProjectSnapshot, body: unknown): Reply | null {
  if (project.cohorts === null || typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const ids = (body as Record<string, unknown>).ids;
  if (ids === undefined || ids === null || (Array.isArray(ids) && ids.length === 0)) return valueReply(200, { keys: {} });
  if (!Array.isArray(ids)) return null;
  const valid: number[] = [];
  const invalid: string[] = [];
  for (const id of ids) {
    if ((typeof id === 'number' && Number.isInteger(id) && id >= 0) || (typeof id === 'string' && /^\d+$/.test(id))) valid.push(Number(id));
    else {
      const shown = pyRepr(id);
      if (shown === null) return null;
      invalid.push(shown);
    }
  }
  if (valid.length === 0) return valueReply(400, { error: 'Invalid flag IDs provided' });
  const byId = new Map(project.cohorts.definitions.flags.filter((f) => !f.deleted).map((f) => [f.id, f.key]));
  const keys: Record<string, string> = {};
  for (const id of valid) {
    const key = byId.get(id);
    if (key === undefined) return null;
    keys[String(id)] = key;
  }
  return valueReply(200, invalid.length > 0 ? { keys, warning: `Invalid flag IDs ignored: [${invalid.join(', ')}]` } : { keys });
}

/** The flag API routes. Put after sdkRoutes (local_evaluation shares the `:id` position). */
export function flagRoutes(deps: FlagRouteDeps): Route[] {
  const { access, reads, writes, ttl, activityTtl } = deps;
  async function serveBulkKeys(ctx: RequestContext): Promise<Reply> {
    const body = await readBody(ctx.request, deps.maxBodyBytes);
    const { projectId }: Authorized = await access.authorize('flag_bulk_keys', 'local', ctx, ctx.params[0] ?? null);
    const json = isJsonType(ctx.headers['content-type']);
    const project = deps.store.get(projectId as number);
    const local = json && project ? bulkKeys(project, parseJsonBody(body)) : null;
    if (local) return { ...local, headers: { ...local.headers, 'x-flag-sidecar-source': project?.cohorts?.source ?? 'upstream' } };
    if (!deps.online) throw offline();
    return writes.forward('flag_bulk_keys', 'none', ctx, body);
  }

  // DELETE is answered here for keys the sidecar can judge; a key upstream would not describe is sent upstream,
  // which alone knows whether it may write (403) or only gets the 405.
  const forwardDelete = writes.handler('flag_delete', 'none');
  function deleteFlag(ctx: RequestContext): Reply | Promise<Reply> {
    const answer = ({ caller }: Authorized): Reply | Promise<Reply> =>
      caller.principal === unverifiedPrincipal ? forwardDelete(ctx) : emptyNotAllowed;
    const authorized = access.authorize('flag_delete', 'upstream', ctx, ctx.params[0] ?? null);
    return authorized instanceof Promise ? authorized.then(answer) : answer(authorized);
  }

  const base = '/api/projects/:project_id/feature_flags';
  const route = (name: Route['name'], methods: string[], path: string, handler: Route['handler']): Route => ({
    name,
    methods,
    template: base + path,
    handler,
  });
  return [
    route('flag_list', ['GET'], '', reads.handler('flag_list', ttl, true)),
    route('flag_create', ['POST'], '', writes.handler('flag_create', 'definitions')),
    route('flags_activity', ['GET'], '/activity', reads.handler('flags_activity', activityTtl, true)),
    route('flag_bulk_keys', ['POST'], '/bulk_keys', serveBulkKeys),
    route('flag_evaluation_reasons', ['GET'], '/evaluation_reasons', deps.evaluationReasons),
    route('flag_my_flags', ['GET'], '/my_flags', reads.handler('flag_my_flags', ttl)),
    route('flag_user_blast_radius', ['POST'], '/user_blast_radius', writes.handler('flag_user_blast_radius', 'none')),
    route('flag_retrieve', ['GET'], '/:id', reads.handler('flag_retrieve', ttl)),
    route('flag_update', ['PATCH', 'PUT'], '/:id', writes.handler('flag_update', 'definitions')),
    route('flag_delete', ['DELETE'], '/:id', deleteFlag),
    route('flag_activity', ['GET'], '/:id/activity', reads.handler('flag_activity', activityTtl, true)),
    route('flag_create_static_cohort', ['POST'], '/:id/create_static_cohort_for_flag', writes.handler('flag_create_static_cohort', 'none')),
    route('flag_dashboard', ['POST'], '/:id/dashboard', writes.handler('flag_dashboard', 'cached')),
    route('flag_enrich_usage_dashboard', ['POST'], '/:id/enrich_usage_dashboard', writes.handler('flag_enrich_usage_dashboard', 'cached')),
    route('flag_has_active_dependents', ['POST'], '/:id/has_active_dependents', writes.handler('flag_has_active_dependents', 'none')),
    route('flag_remote_config', ['GET'], '/:id/remote_config', deps.remoteConfig),
    route('flag_status', ['GET'], '/:id/status', reads.handler('flag_status', ttl)),
  ];
}
