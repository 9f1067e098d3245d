/**
 * What a project's snapshot says of one flag's definition, as a mark that changes whenever the flag's remote
 * config may have changed upstream: the remote-config warmer (remote-config-warmer.ts) asks upstream again only
 * then.
 *
 * Upstream's remote_config action (posthog/api/feature_flag.py, now products/feature_flags/backend/api/,
 * FeatureFlagViewSet.remote_config) answers from the flag row alone: 404 for no such flag or one that is not `is_remote_configuration`, else its
 * `filters.payloads.true` (decrypted for personal keys when encrypted). local_evaluation does not carry
 * `is_remote_configuration` (MinimalFeatureFlagSerializer) and leaves encrypted remote configs out (older
 * upstreams: every remote config), but it does carry `filters` and `version`, which every update through upstream's
 * API bumps (FeatureFlagSerializer.update: `version = locked_version + 1`). So a flag the snapshot holds is marked
 * by its version (by the definitions' ETag when it has none); a flag it does not hold — missing, deleted, or a
 * remote config upstream leaves out — by the definitions' ETag, the only change the sidecar can see of it.
 */
import type { ProjectSnapshot } from '../store/snapshot.js';

/** The mark of one flag's definition in a snapshot. */
export interface DefinitionMark {
  /** Whether the snapshot holds the flag: then its mark follows every change of its definition. */
  readonly described: boolean;
  /** Equal for two snapshots in which the flag's remote config cannot have changed. */
  readonly value: string;
}

/**
 * The mark of `flag` (a flag id when it is all digits, else a key, as upstream's remote_config reads it) in
 * `project`'s snapshot (the variant with cohorts). Pure; never throws.
 */
export function definitionMark(project: ProjectSnapshot | undefined, flag: string): DefinitionMark {
  const variant = project?.cohorts ?? null;
  if (variant === null) return { described: false, value: 'none' };
  const definitions = `defs:${variant.upstreamEtag ?? variant.etagValue}`;
  const id = /^\d+$/.test(flag) ? Number(flag) : null;
  const found = variant.definitions.flags.find((f) => (id !== null ? f.id === id : f.key === flag));
  if (found === undefined) return { described: false, value: definitions };
  return { described: true, value: found.version === null ? definitions : `flag:${found.id ?? found.key}:v${found.version}` };
}
