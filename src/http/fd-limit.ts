/**
 * The process's file-handle limit, to check the connection caps against it: past the limit every accept, snapshot
 * write and upstream connection fails with EMFILE, so the caps only protect the process when they fit under it.
 */

/** Head room kept for everything but client connections: snapshot files, upstream sockets, stdio, node itself. */
export const reservedFileHandles = 100;

/** The soft "Max open files" of a /proc/<pid>/limits text; null when absent or unlimited. */
export function parseOpenFileLimit(limitsText: string): number | null {
  const line = limitsText.split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
  return soft !== undefined && /^\d+$/.test(soft) ? Number(soft) : null;
}

/** A warning when the two caps plus the reserve do not fit under `limit`; null when they fit (or no limit). */
export function capsOverLimit(limit: number | null, caps: { readonly api: number; readonly ops: number }): string | null {
  if (limit === null) return null;
  const needed = caps.api + caps.ops + reservedFileHandles;
  return needed <= limit
    ? null
    : `the file-handle limit (${limit}) is below FLAG_SIDECAR_MAX_CONNECTIONS + FLAG_SIDECAR_OPS_MAX_CONNECTIONS + ${reservedFileHandles} (${needed}): enough open connections would make snapshot writes and upstream requests fail (EMFILE); lower the caps or raise the limit`;
}
