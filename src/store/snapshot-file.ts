/**
 * The snapshot file format (docs/snapshot-format.md), pure: text in, project snapshots out, and back.
 * Accepted: the sidecar's own envelope (as persisted: raw bodies with a SHA-256 each), the same envelope
 * written by hand (`local_evaluation` as plain JSON), or a bare local_evaluation body for one project.
 * A file that is truncated, corrupt or inconsistent throws SnapshotFileError and nothing of it is used.
 */
import { createHash } from 'node:crypto';
import { SnapshotFileError } from '../errors.js';
import { parseDefinitionsText, validateDefinitions } from '../upstream/payload.js';
import {
  createVariant,
  emptyProject,
  withChanges,
  type ProjectSnapshot,
  type SnapshotSource,
  type VariantName,
  type VariantSnapshot,
} from './snapshot.js';

/** The format marker and version written into every file. */
export const formatVersion = 1;

/** How to read one file. */
export interface ReadOptions {
  readonly file: string;
  readonly source: Exclude<SnapshotSource, 'upstream'>;
  /** Project a bare local_evaluation body belongs to; null when that cannot be known. */
  readonly bareProjectId: number | null;
  /** Used as fetched-at when the file does not say (a hand-written file). */
  readonly mtimeMs: number;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const sha256 = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

function parseTime(value: unknown, fallback: number, fail: (m: string) => never, where: string): number {
  if (value === undefined || value === null) return fallback;
  const at = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(at)) fail(`${where}.fetched_at is not an ISO date`);
  return at;
}

function variantFromValue(value: unknown, fetchedAt: number, options: ReadOptions, fail: (m: string) => never, where: string): VariantSnapshot {
  const checked = validateDefinitions(value);
  if (!checked.ok) fail(`${where}: ${checked.error}`);
  const body = Buffer.from(JSON.stringify(value));
  return createVariant({ body, definitions: checked.value, upstreamEtag: null, fetchedAt, source: options.source });
}

function variantFromRecord(value: unknown, options: ReadOptions, fail: (m: string) => never, where: string): VariantSnapshot {
  if (!isObject(value) || typeof value.body !== 'string') fail(`${where} has no "body" string`);
  const body = Buffer.from(value.body, 'utf8');
  if (typeof value.sha256 === 'string' && value.sha256 !== sha256(body)) fail(`${where}: body does not match its sha256 (corrupt file)`);
  // Parsed from the string the envelope already holds, not decoded again from `body`: the same text, as long as
  // it has no lone surrogate (which `body` holds as U+FFFD).
  if (loneSurrogate.test(value.body)) fail(`${where}: body is not valid UTF-8 text (a lone surrogate)`);
  const parsed = parseDefinitionsText(value.body);
  if (!parsed.ok) fail(`${where}: ${parsed.error}`);
  const upstreamEtag = value.upstream_etag;
  if (upstreamEtag !== undefined && upstreamEtag !== null && typeof upstreamEtag !== 'string') fail(`${where}.upstream_etag is not a string`);
  const servedEtag = value.served_etag;
  if (servedEtag !== undefined && servedEtag !== null && typeof servedEtag !== 'string') fail(`${where}.served_etag is not a string`);
  return createVariant({
    body,
    definitions: parsed.value,
    upstreamEtag: upstreamEtag ?? null,
    servedEtag: servedEtag ?? null,
    fetchedAt: parseTime(value.fetched_at, options.mtimeMs, fail, where),
    source: options.source,
  });
}

function projectFromEntry(entry: unknown, index: number, options: ReadOptions, fail: (m: string) => never): ProjectSnapshot {
  const where = `projects[${index}]`;
  if (!isObject(entry)) fail(`${where} is not an object`);
  const id = entry.project_id;
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 1) fail(`${where}.project_id is not a positive integer`);
  const token = entry.token ?? null;
  if (token !== null && (typeof token !== 'string' || !token.startsWith('phc_'))) fail(`${where}.token is not a phc_ token`);
  const fetchedAt = parseTime(entry.fetched_at, options.mtimeMs, fail, where);
  const variants: Partial<Record<VariantName, VariantSnapshot>> = {};
  if (entry.variants !== undefined) {
    if (!isObject(entry.variants)) fail(`${where}.variants is not an object`);
    for (const name of ['cohorts', 'plain'] as const) {
      const record = entry.variants[name];
      if (record !== undefined && record !== null) variants[name] = variantFromRecord(record, options, fail, `${where}.variants.${name}`);
    }
  }
  if (entry.local_evaluation !== undefined) {
    if (variants.cohorts) fail(`${where} has both "variants" and "local_evaluation"`);
    variants.cohorts = variantFromValue(entry.local_evaluation, fetchedAt, options, fail, `${where}.local_evaluation`);
  }
  if (entry.local_evaluation_without_cohorts !== undefined) {
    if (variants.plain) fail(`${where} has both "variants.plain" and "local_evaluation_without_cohorts"`);
    variants.plain = variantFromValue(entry.local_evaluation_without_cohorts, fetchedAt, options, fail, `${where}.local_evaluation_without_cohorts`);
  }
  if (!variants.cohorts) fail(`${where} has no local_evaluation body (with cohorts)`);
  return withChanges(emptyProject(id, token), {
    cohorts: variants.cohorts,
    plain: variants.plain ?? null,
    plainWanted: entry.plain_wanted === true || variants.plain !== undefined,
  });
}

/** Parse a snapshot file's text into project snapshots (at least one; project ids unique). */
export function parseSnapshotFile(text: string, options: ReadOptions): ProjectSnapshot[] {
  const fail = (message: string): never => {
    throw new SnapshotFileError(options.file, message);
  };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return fail(`not valid JSON (truncated or corrupt?): ${(error as Error).message}`);
  }
  if (!isObject(value)) return fail('not a JSON object');
  if (Array.isArray(value.flags)) {
    if (options.bareProjectId === null) {
      return fail('a bare local_evaluation body needs exactly one project in FLAG_SIDECAR_PROJECTS to say whose it is');
    }
    const body = Buffer.from(text, 'utf8');
    const checked = validateDefinitions(value);
    if (!checked.ok) return fail(checked.error);
    const cohorts = createVariant({ body, definitions: checked.value, upstreamEtag: null, fetchedAt: options.mtimeMs, source: options.source });
    return [withChanges(emptyProject(options.bareProjectId, null), { cohorts })];
  }
  if (value.flag_sidecar_snapshot !== formatVersion) {
    return fail(`neither a local_evaluation body nor a snapshot file ("flag_sidecar_snapshot": ${formatVersion})`);
  }
  if (!Array.isArray(value.projects) || value.projects.length === 0) return fail('"projects" is not a non-empty array');
  const projects = value.projects.map((entry, index) => projectFromEntry(entry, index, options, fail));
  const ids = new Set(projects.map((p) => p.projectId));
  if (ids.size !== projects.length) fail('a project is listed twice');
  return projects;
}

function variantRecord(variant: VariantSnapshot): Record<string, unknown> {
  return {
    fetched_at: new Date(variant.fetchedAt).toISOString(),
    upstream_etag: variant.upstreamEtag,
    ...(variant.servedEtag === null ? {} : { served_etag: variant.servedEtag }),
    sha256: sha256(variant.body),
    body: variant.body.toString('utf8'),
  };
}

function projectRecord(project: ProjectSnapshot): Record<string, unknown> {
  const variants: Record<string, unknown> = {};
  if (project.cohorts) variants.cohorts = variantRecord(project.cohorts);
  if (project.plain) variants.plain = variantRecord(project.plain);
  return { project_id: project.projectId, token: project.token, plain_wanted: project.plainWanted, variants };
}

/** Serialize projects as one snapshot file (bodies kept byte for byte, each with its SHA-256). */
export function serializeSnapshotFile(projects: readonly ProjectSnapshot[], now: number): string {
  return `${JSON.stringify({ flag_sidecar_snapshot: formatVersion, written_at: new Date(now).toISOString(), projects: projects.map(projectRecord) }, null, 1)}\n`;
}

/** Serialize one project as a snapshot file (the persisted form, one file per project). */
export const serializeProjectFile = (project: ProjectSnapshot, now: number): string => serializeSnapshotFile([project], now);
