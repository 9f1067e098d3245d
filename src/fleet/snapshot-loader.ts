/**
 * The follower's side of the snapshot relay: read a project's published head from Redis (small), and only when a
 * variant's body differs from the one served, read the head again together with the bodies in one MGET (so
 * they match); decompress them (bounded: snapshot-body.ts) and validate exactly as an upstream answer (size
 * bound, SHA-256 against the head, parseDefinitions)
 * and hand the result to the store (the single writer). Head and bodies must verify (seal.ts, under their Redis
 * key); what does not is refused and counted as unverifiable (integrity.ts). A head that only moved fetched-at (a 304 at the
 * leader) refreshes fetched-at, so Age and serving-stale stay true.
 *
 * Guarantees: nothing invalid reaches the store (refused copies are counted and logged once per reason);
 * never throws; data this sidecar fetched itself is replaced only by fleet data fetched later.
 */
import type { Integrity } from '../integrity.js';
import type { Logger } from '../logger.js';
import type { FleetMetrics } from '../metrics/fleet-metrics.js';
import { createVariant, withChanges, type ProjectSnapshot, type VariantName, type VariantSnapshot } from '../store/snapshot.js';
import type { Store } from '../store/store.js';
import { parseDefinitions, type Definitions } from '../upstream/payload.js';
import type { FleetKeys } from './keys.js';
import type { FleetRedis } from './redis.js';
import { sealHeaderBytes } from '../seal.js';
import { decodeBody } from './snapshot-body.js';
import { bodyContext, headContext, maxHeadBytes, parseHead, type BodyDigest, type HeadVariant, type SnapshotHead } from './snapshot-head.js';

/** What one load ended with. `changed`: the head differs from the one seen before; `fresh`: the store took new data or a newer fetched-at. */
export type LoadResult =
  | { readonly kind: 'none' }
  | { readonly kind: 'failed' }
  | { readonly kind: 'rejected'; readonly error: string }
  | { readonly kind: 'loaded'; readonly head: SnapshotHead; readonly changed: boolean; readonly fresh: boolean };

/** Dependencies of createSnapshotLoader. */
export interface LoaderDeps {
  readonly redis: FleetRedis;
  readonly keys: FleetKeys;
  readonly store: Store;
  readonly digest: BodyDigest;
  readonly integrity: Integrity;
  readonly maxBodyBytes: number;
  readonly metrics: FleetMetrics;
  readonly logger: Logger;
  readonly now: () => number;
}

type Fetched = ReadonlyMap<VariantName, { body: Buffer; definitions: Definitions }>;
const variants: readonly VariantName[] = ['cohorts', 'plain'];

/** Create the loader. */
export function createSnapshotLoader(deps: LoaderDeps) {
  const { redis, keys, store, digest, metrics, now } = deps;
  const { sealer } = deps.integrity;
  const lastHead = new Map<number, Buffer>();
  const lastRefusal = new Map<number, string>();

  function refuse(projectId: number, error: string): LoadResult {
    metrics.snapshotsReceived.inc({ project: String(projectId), source: 'rejected' });
    if (lastRefusal.get(projectId) !== error) deps.logger.warn({ project: projectId, cause: error }, 'fleet snapshot in redis refused; keeping the current one');
    lastRefusal.set(projectId, error);
    return { kind: 'rejected', error };
  }

  /** The head sealed in `raw`, parsed; or why it is refused. */
  function openHead(projectId: number, raw: Buffer): ReturnType<typeof parseHead> {
    const name = keys.snapshotHead(projectId);
    if (raw.length > maxHeadBytes + sealHeaderBytes) return { ok: false, error: `head is larger than ${maxHeadBytes} bytes` };
    const text = sealer.open(raw, headContext(name));
    if (text === null) {
      deps.integrity.unverifiable('snapshot_head', name, raw);
      return { ok: false, error: 'head does not verify (not sealed with this fleet\'s secret)' };
    }
    return parseHead(text, deps.maxBodyBytes);
  }

  /** Whether the head's variant should replace `ours` (content), given whether ours was fetched by this sidecar. */
  const wantsBody = (ours: VariantSnapshot | null, theirs: HeadVariant, own: boolean): boolean =>
    ours === null || (digest(ours.body) !== theirs.sha256 && (!own || ours.source !== 'upstream' || theirs.fetchedAt > ours.fetchedAt));

  function merge(project: ProjectSnapshot, head: SnapshotHead, fetched: Fetched, own: boolean): ProjectSnapshot {
    const changes: { -readonly [K in VariantName]?: VariantSnapshot } = {};
    for (const name of variants) {
      const theirs = head[name];
      const ours = project[name];
      if (theirs === null) continue;
      const fetchedAt = Math.min(theirs.fetchedAt, now());
      const meta = { upstreamEtag: theirs.upstreamEtag, servedEtag: theirs.servedEtag, fetchedAt, source: 'upstream' as const };
      const got = fetched.get(name);
      if (got !== undefined) {
        changes[name] = createVariant({ ...got, ...meta });
      } else if (ours !== null && digest(ours.body) === theirs.sha256 && (fetchedAt > ours.fetchedAt || ours.source !== 'upstream' || ours.servedEtag !== theirs.servedEtag || ours.upstreamEtag !== theirs.upstreamEtag)) {
        if (own && fetchedAt < ours.fetchedAt) continue;
        changes[name] = createVariant({ body: ours.body, definitions: ours.definitions, ...meta });
      }
    }
    const plainWanted = project.plainWanted || head.plainWanted;
    const quotaSame = head.quotaBody === null ? project.quotaBody === null : project.quotaBody !== null && head.quotaBody.equals(project.quotaBody);
    if (Object.keys(changes).length === 0 && plainWanted === project.plainWanted && quotaSame) return project;
    return withChanges(project, { ...changes, plainWanted, ...(quotaSame ? {} : { quotaBody: head.quotaBody }) });
  }

  async function readBodies(projectId: number, needed: readonly VariantName[]): Promise<{ head: SnapshotHead; fetched: Fetched } | string | null> {
    const reply = await redis.command('snapshot_read', ['MGET', keys.snapshotHead(projectId), ...needed.map((v) => keys.snapshot(projectId, v))], true);
    if (!Array.isArray(reply) || reply.length !== needed.length + 1) return 'unexpected reply to MGET';
    const [rawHead, ...bodies] = reply;
    if (rawHead === null) return null;
    if (!Buffer.isBuffer(rawHead)) return 'head is not a string';
    const parsed = openHead(projectId, rawHead);
    if (!parsed.ok) return parsed.error;
    const fetched = new Map<VariantName, { body: Buffer; definitions: Definitions }>();
    for (const [i, name] of needed.entries()) {
      const sealed = bodies[i];
      const described = parsed.head[name];
      if (described === null) continue;
      if (!Buffer.isBuffer(sealed)) return `${name} body is missing`;
      if (sealed.length > deps.maxBodyBytes + sealHeaderBytes) return `${name} body is larger than FLAG_SIDECAR_UPSTREAM_MAX_BODY`;
      const bodyKey = keys.snapshot(projectId, name);
      const opened = sealer.open(sealed, bodyContext(bodyKey));
      if (opened === null) {
        deps.integrity.unverifiable('snapshot_body', bodyKey, sealed);
        return `${name} body does not verify (not sealed with this fleet's secret)`;
      }
      const body = await decodeBody(opened, described.encoding, deps.maxBodyBytes);
      if (typeof body === 'string') return `${name} body ${body}`;
      if (body.length > deps.maxBodyBytes) return `${name} body is larger than FLAG_SIDECAR_UPSTREAM_MAX_BODY`;
      if (body.length !== described.bytes || digest(body) !== described.sha256) return `${name} body does not match its SHA-256`;
      const definitions = parseDefinitions(body);
      if (!definitions.ok) return `${name} body is invalid: ${definitions.error}`;
      fetched.set(name, { body, definitions: definitions.value });
    }
    lastHead.set(projectId, rawHead);
    return { head: parsed.head, fetched };
  }

  return {
    /**
     * Load the fleet's snapshot of a project into the store. `own`: the data served now was fetched by this
     * sidecar itself, so only fleet data fetched later replaces it. Never rejects.
     */
    async load(projectId: number, own: boolean): Promise<LoadResult> {
      try {
        const rawHead = await redis.command('snapshot_head', ['GET', keys.snapshotHead(projectId)], true);
        if (rawHead === null) return { kind: 'none' };
        if (!Buffer.isBuffer(rawHead)) return refuse(projectId, 'head is not a string');
        const changed = !(lastHead.get(projectId)?.equals(rawHead) ?? false);
        const parsed = openHead(projectId, rawHead);
        if (!parsed.ok) return refuse(projectId, parsed.error);
        lastHead.set(projectId, rawHead);
        let head = parsed.head;
        let fetched: Fetched = new Map();
        const current = store.get(projectId);
        if (current === undefined) return { kind: 'none' };
        const needed = variants.filter((v) => {
          const theirs = head[v];
          return theirs !== null && wantsBody(current[v], theirs, own);
        });
        if (needed.length > 0) {
          const read = await readBodies(projectId, needed);
          if (read === null) return { kind: 'none' };
          if (typeof read === 'string') return refuse(projectId, read);
          ({ head, fetched } = read);
        }
        lastRefusal.delete(projectId);
        const before = store.get(projectId) as ProjectSnapshot;
        const after = store.update(projectId, (p) => merge(p, head, fetched, own));
        const fresh = variants.some((v) => after[v] !== before[v]);
        if (fetched.size > 0) metrics.snapshotsReceived.inc({ project: String(projectId), source: 'redis' }, fetched.size);
        return { kind: 'loaded', head, changed, fresh };
      } catch {
        return { kind: 'failed' }; // counted and logged by the client
      }
    },
  };
}

/** The loader handle. */
export type SnapshotLoader = ReturnType<typeof createSnapshotLoader>;
