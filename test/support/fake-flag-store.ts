/**
 * The flag store behind fake-flag-api.ts: full flag objects per project (as PostHog's `FeatureFlagSerializer` renders
 * them) seeded from each project's local_evaluation flags, upstream's write rules for create and update (soft delete,
 * versions), and the activity log of ops 6 and 13.
 */
import { randomUUID } from 'node:crypto';
import type { FakePersonalKey, FakeProject } from './fake-upstream.js';

/** The user behind every write of the fake (UserBasic). */
export const fakeUser = {
  id: 17,
  uuid: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
  distinct_id: 'fake-user-17',
  first_name: 'Ann',
  last_name: '',
  email: 'ann@example.com',
  is_email_verified: true,
  hedgehog_config: null,
  role_at_organization: 'engineering',
};

/** A flag as the management API returns it (`FeatureFlagSerializer`). */
export interface FakeFlag {
  id: number;
  name: string;
  key: string;
  filters: Record<string, unknown>;
  deleted: boolean;
  active: boolean;
  created_by: typeof fakeUser;
  created_at: string;
  updated_at: string;
  version: number;
  last_modified_by: typeof fakeUser;
  is_simple_flag: boolean;
  rollout_percentage: number | null;
  ensure_experience_continuity: boolean;
  experiment_set: number[];
  surveys: unknown[];
  features: unknown[];
  rollback_conditions: unknown;
  performed_rollback: boolean;
  can_edit: boolean;
  tags: unknown[];
  evaluation_tags: unknown[];
  usage_dashboard: number | null;
  analytics_dashboards: unknown[];
  has_enriched_analytics: boolean;
  user_access_level: string;
  is_remote_configuration: boolean;
  has_encrypted_payloads: boolean;
  status: string;
  evaluation_runtime: string;
  bucketing_identifier: string;
  last_called_at: string | null;
}

/** A flag as the store keeps it: the serialized flag without the derived and per-caller fields, plus its team. */
export type StoredFlag = Omit<FakeFlag, 'is_simple_flag' | 'rollout_percentage' | 'can_edit' | 'status'> & { team_id: number };

/** One activity log entry (op 6). */
export interface FakeActivity {
  id: string;
  user: { first_name: string; email: string };
  activity: 'created' | 'updated' | 'deleted' | 'restored';
  scope: 'FeatureFlag';
  item_id: string;
  detail: { changes: Array<{ type: 'FeatureFlag'; action: 'changed'; field: string; before: unknown; after: unknown }> | null; trigger: null; type: null; name: string; short_id: null };
  created_at: string;
}

/** A refusal: the status and JSON body to answer. */
export interface Refusal {
  status: number;
  body: unknown;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const canonical = (v: unknown): string =>
  Array.isArray(v)
    ? `[${v.map(canonical).join(',')}]`
    : isObject(v)
      ? `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`
      : JSON.stringify(v ?? null);
const same = (a: unknown, b: unknown): boolean => canonical(a) === canonical(b);
const invalid = (code: string, detail: string, attr: string | null): Refusal => ({ status: 400, body: { type: 'validation_error', code, detail, attr } });
/** DRF's datetime format: ISO-8601 UTC with microseconds. */
export const now = (): string => new Date().toISOString().replace('Z', '000Z');

type Kind = 'bool' | 'str' | 'list' | 'any' | readonly string[];
const writable: Record<string, Kind> = {
  name: 'str',
  active: 'bool',
  deleted: 'bool',
  ensure_experience_continuity: 'bool',
  rollback_conditions: 'any',
  tags: 'list',
  evaluation_tags: 'list',
  analytics_dashboards: 'list',
  is_remote_configuration: 'bool',
  has_encrypted_payloads: 'bool',
  evaluation_runtime: ['server', 'client', 'all'],
  bucketing_identifier: ['distinct_id', 'device_id'],
};

/** A field value as DRF would accept it, or a refusal. */
function coerce(field: string, kind: Kind, value: unknown): { value: unknown } | Refusal {
  if (kind === 'any') return { value };
  if (value === null) return invalid('null', 'This field may not be null.', field);
  if (kind === 'bool') {
    if (value === true || value === 'true' || value === 'True' || value === 1 || value === '1') return { value: true };
    if (value === false || value === 'false' || value === 'False' || value === 0 || value === '0') return { value: false };
    return invalid('invalid_input', 'Must be a valid boolean.', field);
  }
  if (kind === 'list') return Array.isArray(value) ? { value } : invalid('not_a_list', `Expected a list of items but got type "${typeof value}".`, field);
  if (typeof value !== 'string' && typeof value !== 'number') return invalid('invalid_input', 'Not a valid string.', field);
  const text = String(value).trim();
  if (kind === 'str') return { value: text };
  return kind.includes(text) ? { value: text } : invalid('invalid_choice', `"${text}" is not a valid choice.`, field);
}

/** Payload values are stored as JSON strings (as upstream stores them): objects sent through the API are serialized. */
function normalizeFilters(filters: Json): Json {
  const copy = structuredClone(filters);
  if (isObject(copy.payloads)) copy.payloads = Object.fromEntries(Object.entries(copy.payloads).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
  return copy;
}

/** The flag store of every project. */
export function createFlagStore(projects: Map<number, FakeProject>) {
  const flags = new Map<number, Map<number, StoredFlag>>();
  const activity = new Map<number, FakeActivity[]>();
  let nextId = 1;

  function seed(projectId: number, definitions: Json): void {
    const store = new Map<number, StoredFlag>();
    for (const raw of Array.isArray(definitions.flags) ? definitions.flags : []) {
      if (!isObject(raw) || typeof raw.id !== 'number' || typeof raw.key !== 'string') continue;
      store.set(raw.id, {
        ...blank(projectId, raw.id, raw.key, '2026-01-01T00:00:00.000000Z'),
        team_id: typeof raw.team_id === 'number' ? raw.team_id : projectId,
        name: typeof raw.name === 'string' ? raw.name : '',
        filters: isObject(raw.filters) ? structuredClone(raw.filters) : { groups: [] },
        deleted: raw.deleted === true,
        active: raw.active !== false,
        version: typeof raw.version === 'number' ? raw.version : 1,
        ensure_experience_continuity: raw.ensure_experience_continuity === true,
        has_encrypted_payloads: raw.has_encrypted_payloads === true,
        evaluation_runtime: typeof raw.evaluation_runtime === 'string' ? raw.evaluation_runtime : 'all',
        bucketing_identifier: typeof raw.bucketing_identifier === 'string' ? raw.bucketing_identifier : 'distinct_id',
        evaluation_tags: Array.isArray(raw.evaluation_tags) ? [...raw.evaluation_tags] : [],
      });
      nextId = Math.max(nextId, raw.id + 1);
    }
    flags.set(projectId, store);
    activity.set(projectId, []);
  }

  function blank(projectId: number, id: number, key: string, at: string): StoredFlag {
    return {
      id, team_id: projectId, name: '', key, filters: { groups: [{ properties: [], rollout_percentage: null }] }, deleted: false, active: true,
      created_by: fakeUser, created_at: at, updated_at: at, version: 1, last_modified_by: fakeUser, ensure_experience_continuity: false,
      experiment_set: [], surveys: [], features: [], rollback_conditions: null, performed_rollback: false, tags: [], evaluation_tags: [],
      usage_dashboard: null, analytics_dashboards: [], has_enriched_analytics: false, user_access_level: 'manager',
      is_remote_configuration: false, has_encrypted_payloads: false, evaluation_runtime: 'all', bucketing_identifier: 'distinct_id', last_called_at: null,
    };
  }

  const all = (projectId: number): StoredFlag[] => [...(flags.get(projectId)?.values() ?? [])];

  function log(flag: StoredFlag, kind: FakeActivity['activity'], changes: FakeActivity['detail']['changes']): void {
    const entry: FakeActivity = {
      id: randomUUID(), user: { first_name: fakeUser.first_name, email: fakeUser.email }, activity: kind, scope: 'FeatureFlag', item_id: String(flag.id),
      detail: { changes, trigger: null, type: null, name: flag.key, short_id: null }, created_at: now(),
    };
    activity.get(flag.team_id)?.unshift(entry);
  }

  /** The key's validation on create (op 2), or a refusal. */
  function checkKey(projectId: number, value: unknown, selfId: number | null): string | Refusal {
    if (value === undefined) return invalid('required', 'This field is required.', 'key');
    if (value === null) return invalid('null', 'This field may not be null.', 'key');
    if (typeof value !== 'string' && typeof value !== 'number') return invalid('invalid_input', 'Not a valid string.', 'key');
    const key = String(value).trim();
    if (key === '') return invalid('blank', 'This field may not be blank.', 'key');
    if (key.length > 400) return invalid('max_length', 'Ensure this field has no more than 400 characters.', 'key');
    if (!/^[a-zA-Z0-9_-]+$/.test(key)) return invalid('invalid_key', 'Only letters, numbers, hyphens (-) & underscores (_) are allowed.', 'key');
    if (all(projectId).some((f) => f.key === key && !f.deleted && f.id !== selfId)) return invalid('unique', 'There is already a feature flag with this key.', 'key');
    return key;
  }

  /** The writable fields of a body, coerced, or a refusal. */
  function fields(body: Json): { values: Json } | Refusal {
    const out: Json = {};
    for (const [field, kind] of Object.entries(writable)) {
      if (!(field in body)) continue;
      const got = coerce(field, kind, body[field]);
      if (!('value' in got)) return got;
      out[field] = got.value;
    }
    if (isObject(body.filters)) out.filters = normalizeFilters(body.filters);
    return { values: out };
  }

  /** Active, non-deleted flags of the project with a flag property on this flag's id (op 10). */
  function dependents(flag: StoredFlag): StoredFlag[] {
    return all(flag.team_id).filter((f) => {
      if (!f.active || f.deleted || f.id === flag.id) return false;
      const groups = Array.isArray(f.filters.groups) ? f.filters.groups : [];
      return groups.some((g) => isObject(g) && Array.isArray(g.properties) && g.properties.some((p) => isObject(p) && p.type === 'flag' && String(p.key) === String(flag.id)));
    });
  }

  function dependentsRefusal(flag: StoredFlag, verb: 'delete' | 'disable'): Refusal | null {
    const found = dependents(flag);
    if (found.length === 0) return null;
    const named = found.slice(0, 5).map((f) => `${f.key} (ID: ${f.id})`).join(', ') + (found.length > 5 ? ` and ${found.length - 5} more` : '');
    return invalid('invalid_input', `Cannot ${verb} this feature flag because other flags depend on it: ${named}. Please update or ${verb} the dependent flags first.`, null);
  }

  for (const [id, project] of projects) seed(id, project.definitions);

  return {
    /** Re-seed a project from its (new) local_evaluation definitions, dropping its activity. */
    seed,
    /** Every flag of a project, soft-deleted ones included, in insertion order. */
    all,
    /** A flag of a project by numeric id or (remote_config) key; live flags win over deleted ones. */
    find(projectId: number, idOrKey: string | number): StoredFlag | undefined {
      const list = all(projectId);
      if (typeof idOrKey === 'number' || /^\d+$/.test(idOrKey)) return list.find((f) => f.id === Number(idOrKey));
      return list.find((f) => f.key === idOrKey && !f.deleted) ?? list.find((f) => f.key === idOrKey);
    },
    /** A flag of any project by id (op 12 does not filter by project). */
    findAnywhere: (id: number): StoredFlag | undefined => [...flags.keys()].map((p) => flags.get(p)?.get(id)).find((f) => f !== undefined),
    /** The serialized flag for a caller. */
    present(flag: StoredFlag, canEdit: boolean): FakeFlag {
      const f = structuredClone(flag);
      const groups = Array.isArray(f.filters.groups) ? f.filters.groups : [];
      const first: unknown = groups[0];
      const plain = isObject(first) && !(Array.isArray(first.properties) && first.properties.length > 0);
      const simple = groups.length === 1 && plain && f.filters.aggregation_group_type_index == null;
      const rollout = simple && isObject(first) && typeof first.rollout_percentage === 'number' ? first.rollout_percentage : null;
      return {
        id: f.id, name: f.name, key: f.key, filters: f.filters, deleted: f.deleted, active: f.active, created_by: f.created_by,
        created_at: f.created_at, updated_at: f.updated_at, version: f.version, last_modified_by: f.last_modified_by,
        is_simple_flag: simple, rollout_percentage: rollout, ensure_experience_continuity: f.ensure_experience_continuity,
        experiment_set: f.experiment_set, surveys: f.surveys, features: f.features, rollback_conditions: f.rollback_conditions,
        performed_rollback: f.performed_rollback, can_edit: canEdit, tags: f.tags, evaluation_tags: f.evaluation_tags,
        usage_dashboard: f.usage_dashboard, analytics_dashboards: f.analytics_dashboards, has_enriched_analytics: f.has_enriched_analytics,
        user_access_level: f.user_access_level, is_remote_configuration: f.is_remote_configuration, has_encrypted_payloads: f.has_encrypted_payloads,
        status: f.deleted ? 'DELETED' : 'ACTIVE', evaluation_runtime: f.evaluation_runtime, bucketing_identifier: f.bucketing_identifier,
        last_called_at: f.last_called_at,
      };
    },
    /** The minimal object (`MinimalFeatureFlagSerializer`). */
    minimal: (f: StoredFlag): Json => ({
      id: f.id, team_id: f.team_id, name: f.name, key: f.key, filters: structuredClone(f.filters), deleted: f.deleted, active: f.active,
      ensure_experience_continuity: f.ensure_experience_continuity, has_encrypted_payloads: f.has_encrypted_payloads, version: f.version,
      evaluation_runtime: f.evaluation_runtime, bucketing_identifier: f.bucketing_identifier, evaluation_tags: [...f.evaluation_tags],
    }),
    dependents,
    /** Op 2: create a flag, or refuse. */
    create(projectId: number, body: Json): StoredFlag | Refusal {
      const key = checkKey(projectId, body.key, null);
      if (typeof key !== 'string') return key;
      const checked = fields(body);
      if (!('values' in checked)) return checked;
      const store = flags.get(projectId) ?? new Map<number, StoredFlag>();
      for (const old of all(projectId)) if (old.key === key && old.deleted) store.delete(old.id);
      const flag: StoredFlag = { ...blank(projectId, nextId++, key, now()), ...(checked.values as Partial<StoredFlag>) };
      store.set(flag.id, flag);
      flags.set(projectId, store);
      log(flag, 'created', null);
      return flag;
    },
    /** Op 4: update a flag (PATCH when partial, PUT otherwise), or refuse (400, 409). */
    update(flag: StoredFlag, body: Json, partial: boolean): StoredFlag | Refusal {
      const key = partial && body.key === undefined ? flag.key : checkKey(flag.team_id, body.key, flag.id);
      if (typeof key !== 'string') return key;
      const checked = fields(body);
      if (!('values' in checked)) return checked;
      const values = checked.values;
      if (body.key !== undefined) values.key = key;
      if (isObject(values.filters) && !('groups' in values.filters)) delete values.filters;
      const current = flag as unknown as Json;
      const original = body.original_flag;
      if (typeof body.version === 'number' && body.version !== flag.version && isObject(original)) {
        const clash = Object.entries(values).some(([field, mine]) => !same(mine, original[field]) && !same(original[field], current[field]) && !same(mine, current[field]));
        if (clash) {
          const detail = `The feature flag was updated by ${flag.last_modified_by.email} since you started editing it. Please refresh and try again.`;
          return { status: 409, body: { type: 'server_error', code: 'conflict', detail, attr: null } };
        }
      }
      if (values.deleted === true && !flag.deleted) {
        const refusal = dependentsRefusal(flag, 'delete');
        if (refusal) return refusal;
      }
      if (values.active === false && flag.active) {
        const refusal = dependentsRefusal(flag, 'disable');
        if (refusal) return refusal;
      }
      const changes = Object.entries(values)
        .filter(([field, after]) => !same(current[field], after))
        .map(([field, after]) => ({ type: 'FeatureFlag' as const, action: 'changed' as const, field, before: current[field], after }));
      const flipped = values.deleted !== undefined && values.deleted !== flag.deleted;
      Object.assign(flag, values, { version: flag.version + 1, updated_at: now(), last_modified_by: fakeUser });
      if (values.active === true) flag.performed_rollback = false;
      log(flag, flipped ? (flag.deleted ? 'deleted' : 'restored') : 'updated', changes);
      return flag;
    },
    /** The activity of a project, newest first, optionally of one flag. */
    activity: (projectId: number, flagId?: number): FakeActivity[] => (activity.get(projectId) ?? []).filter((a) => flagId === undefined || a.item_id === String(flagId)),
  };
}

/** The store's handle. */
export type FlagStore = ReturnType<typeof createFlagStore>;

/**
 * The key a request presents, where upstream's authenticators look, in their order: a Bearer Authorization
 * header, then a JSON body's `personal_api_key`, then the query's; with where it was found (upstream names it in
 * its "invalid" detail). `body` parses the request body, or answers the parse error, which is passed back; none:
 * undefined. Shared by the fake flag and endpoint APIs.
 */
export function presentedKey<Failure>(
  authorization: string | undefined,
  url: URL,
  raw: Buffer,
  body: () => { data: unknown } | Failure,
): [key: string, source: string] | Failure | undefined {
  const header = /^Bearer\s+(\S.*)$/.exec((authorization ?? '').trim())?.[1]?.trim();
  if (header !== undefined) return [header, 'Authorization header'];
  if (raw.length > 0) {
    const got = body();
    if (!isObject(got) || !('data' in got)) return got;
    if (isObject(got.data) && typeof got.data.personal_api_key === 'string') return [got.data.personal_api_key, 'body'];
  }
  const fromQuery = url.searchParams.get('personal_api_key');
  return fromQuery === null ? undefined : [fromQuery, 'query string'];
}

/**
 * Upstream's refusal of a personal key on a project and scope, in its checking order (scoped teams, scoped
 * organizations, the scope with write implying read, then project membership), or null. `scope` undefined: only
 * whether the key reaches the project. Shared by the fake flag and endpoint APIs.
 */
export function personalKeyRefusal(scopes: readonly string[] | null, record: FakePersonalKey | undefined, projectId: number, scope: string | undefined): string | null {
  if (scopes !== null && scopes.length > 0) {
    const teams = record?.scoped_teams ?? [];
    if (teams.length > 0 && !teams.includes(projectId)) return `API key does not have access to the requested project: ID ${projectId}.`;
    const orgs = record?.scoped_organizations ?? [];
    if (orgs.length > 0 && !orgs.includes(`org-${projectId}`)) return `API key does not have access to the requested organization: ID org-${projectId}.`;
    const writeOf = scope?.replace(/:read$/, ':write');
    if (scope !== undefined && !scopes.some((s) => s === '*' || s === scope || s === writeOf)) return `API key missing required scope '${scope}'`;
  }
  if (record?.member_of && !record.member_of.includes(projectId)) return "You don't have access to the project.";
  return null;
}
