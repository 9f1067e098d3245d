/**
 * Names of every Redis key and channel of fleet mode, in one place. Pure. Everything lives under
 * `<prefix>:<upstream id>:`, so several fleets (prefixes) and several upstreams share one Redis without meeting;
 * the upstream id is the first 16 hex digits of SHA-256 of the upstream URL. A project's keys share the hash tag
 * `{<upstream id>:<project>}`, so scripts that touch several of them stay on one slot of a Redis Cluster. Keys
 * and grants are named by the SHA-256 digest of the key, never the key.
 */
import { createHash } from 'node:crypto';

/** The upstream id of an upstream base URL. */
export const upstreamId = (upstream: URL): string => createHash('sha256').update(upstream.href.replace(/\/+$/, '')).digest('hex').slice(0, 16);

/** Create the names for `prefix` and `upstream`. */
export function fleetKeys(prefix: string, upstream: URL) {
  const root = `${prefix}:${upstreamId(upstream)}`;
  const project = (projectId: number): string => `${prefix}:{${upstreamId(upstream)}:${projectId}}`;
  return {
    /** Everything of this fleet and upstream starts with this. */
    root,
    /** The leader lease of a project: holder id, with a TTL. */
    lease: (projectId: number): string => `${project(projectId)}:lease`,
    /** The fencing generation of a project, incremented by each new leader. */
    generation: (projectId: number): string => `${project(projectId)}:generation`,
    /** A project's published snapshot variant (`cohorts` or `plain`): the raw body bytes. */
    snapshot: (projectId: number, variant: string): string => `${project(projectId)}:snapshot:${variant}`,
    /** A project's published snapshot without the bodies (JSON: digests, ETags, fetched-at, quota state). */
    snapshotHead: (projectId: number): string => `${project(projectId)}:snapshot-head`,
    /** Set by a follower that was asked for a project's plain variant, so that every leader polls it too. */
    plainWanted: (projectId: number): string => `${project(projectId)}:plain-wanted`,
    /** A project's shared static cohort lists (JSON, fleet/static-cohort-share.ts) and their head (SHA-256, bytes). */
    staticCohorts: (projectId: number): string => `${project(projectId)}:static-cohorts`,
    staticCohortsHead: (projectId: number): string => `${project(projectId)}:static-cohorts-head`,
    /** Notices of new snapshots and released leases (JSON: kind, project, generation). */
    snapshotChannel: `${root}:snapshots`,
    /** Requests to a project's leader to poll now (after a write through another sidecar; JSON: project, plain). */
    pollChannel: `${root}:poll`,
    /** Fleet-wide invalidations (project, resource). */
    invalidationChannel: `${root}:invalidate`,
    /** What upstream said about a key (principal, refused, invalid). */
    keyRecord: (digest: string): string => `${root}:key:${digest}`,
    /** Upstream's answer for a key on one project (grant or refusal). */
    grant: (digest: string, projectId: number): string => `${root}:grant:${digest}:${projectId}`,
    /** A shared endpoint run result of a project (`id`: a digest of what the run's local cache key is built from). */
    endpointRun: (projectId: number, id: string): string => `${project(projectId)}:run:${id}`,
    /** The generation token of a named endpoint's shared runs (`id`: digest of its name), replaced by each write. */
    endpointGeneration: (projectId: number, id: string): string => `${project(projectId)}:rungen:${id}`,
    /** A key's grant to a named endpoint's shared runs (`id`: digest of the key's digest and the endpoint name). */
    endpointGrant: (projectId: number, id: string): string => `${project(projectId)}:rungrant:${id}`,
  };
}

/** The key and channel names of one fleet. */
export type FleetKeys = ReturnType<typeof fleetKeys>;
