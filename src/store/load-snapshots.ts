/**
 * Start-up loading: the bootstrap file and the persisted snapshots, before the first poll, so the sidecar is
 * ready at once with upstream down. Per project the newer of the two wins. An unusable file, or a project in it
 * whose token is not the one configured for its id, is reported and ignored. Decides the served project set: the
 * configured one, or offline without one, the files' projects.
 */
import { readFile, stat } from 'node:fs/promises';
import type { ProjectSpec } from '../config/parsers.js';
import type { Logger } from '../logger.js';
import { stripSeal } from '../seal.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Persistence } from './persist.js';
import { parseSnapshotFile } from './snapshot-file.js';
import { emptyProject, withChanges, type ProjectSnapshot } from './snapshot.js';

/** Inputs of loadInitialSnapshots. */
export interface InitialLoadDeps {
  readonly projects: readonly ProjectSpec[] | null;
  readonly bootstrapFile: string | null;
  readonly persistence: Persistence | null;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Whether the projects will be polled (online); offline the stored snapshot is all there is. */
  readonly polling: boolean;
}

async function readBootstrap(deps: InitialLoadDeps): Promise<ProjectSnapshot[]> {
  const file = deps.bootstrapFile;
  if (file === null) return [];
  try {
    const [bytes, info] = await Promise.all([readFile(file), stat(file)]);
    // A persisted file copied out of a pod is a bootstrap file: its seal line is dropped, not checked (this file is configuration).
    const text = stripSeal(bytes).toString('utf8');
    const bareProjectId = deps.projects?.length === 1 ? (deps.projects[0] as ProjectSpec).id : null;
    const projects = parseSnapshotFile(text, { file, source: 'bootstrap', bareProjectId, mtimeMs: info.mtimeMs });
    deps.metrics.snapshotLoads.inc({ source: 'bootstrap', outcome: 'loaded' });
    return projects;
  } catch (error) {
    deps.metrics.snapshotLoads.inc({ source: 'bootstrap', outcome: 'rejected' });
    deps.logger.error({ file, err: (error as Error).message }, 'ignoring unusable bootstrap file');
    return [];
  }
}

const fetchedAt = (p: ProjectSnapshot | undefined): number => p?.cohorts?.fetchedAt ?? -Infinity;

/** The initial snapshot of every served project (empty ones for projects with no usable file). */
export async function loadInitialSnapshots(deps: InitialLoadDeps): Promise<ProjectSnapshot[]> {
  const only = deps.projects ? new Set(deps.projects.map((p) => p.id)) : null;
  const tokens = new Map((deps.projects ?? []).flatMap((p) => (p.token === null ? [] : [[p.id, p.token] as const])));
  const [bootstrap, disk] = await Promise.all([readBootstrap(deps), deps.persistence?.loadAll(only, tokens) ?? []]);
  // A bootstrap project whose token is not the configured one is another project's: never served as this one.
  const foreign = (p: ProjectSnapshot): boolean => p.token !== null && tokens.has(p.projectId) && tokens.get(p.projectId) !== p.token;
  for (const p of bootstrap.filter(foreign)) {
    deps.metrics.snapshotLoads.inc({ source: 'bootstrap', outcome: 'rejected' });
    deps.logger.error(
      { file: deps.bootstrapFile, project: p.projectId, err: `holds the project with token ${(p.token as string).slice(0, 8)}…, not the configured one` },
      'ignoring unusable bootstrap file',
    );
  }
  const fromBootstrap = new Map(bootstrap.filter((p) => !foreign(p)).map((p) => [p.projectId, p]));
  const fromDisk = new Map(disk.map((p) => [p.projectId, p]));
  const specs: ProjectSpec[] = deps.projects
    ? [...deps.projects]
    : [...new Set([...fromBootstrap.keys(), ...fromDisk.keys()])].sort((a, b) => a - b).map((id) => ({ id, token: null }));

  return specs.map((spec) => {
    const a = fromDisk.get(spec.id);
    const b = fromBootstrap.get(spec.id);
    const chosen = fetchedAt(a) >= fetchedAt(b) ? a : b;
    const token = spec.token ?? chosen?.token ?? a?.token ?? b?.token ?? null;
    if (chosen) {
      deps.logger.info(
        { project: spec.id, source: chosen.cohorts?.source, fetchedAt: new Date(fetchedAt(chosen)).toISOString() },
        deps.polling ? 'serving stored snapshot until the first poll' : 'serving stored snapshot (offline: never polled)',
      );
    }
    return chosen ? withChanges(chosen, { token }) : emptyProject(spec.id, token);
  });
}
