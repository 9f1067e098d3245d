/**
 * Paging links of upstream's list and activity bodies (`next`, `previous`: absolute URLs built from upstream's
 * own address) rewritten to the sidecar's address as the caller reached it, so a client that follows them stays
 * on the sidecar. The body is edited in place as text (upstream's bytes otherwise kept exactly, numbers and key
 * order included); only when the link text cannot be found verbatim is the body re-serialized.
 */

/** The link fields rewritten, at the top level of the body. */
const linkFields = ['next', 'previous'] as const;

/**
 * `url` (absolute, upstream's) → the same path and query under `base` (e.g. `http://127.0.0.1:8010`), with
 * upstream's base path (`upstreamPath`, '' when upstream is at the root) taken off. Non-URLs are left alone.
 */
export function rewriteLink(url: string, base: string, upstreamPath: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  const path = upstreamPath !== '' && parsed.pathname.startsWith(`${upstreamPath}/`) ? parsed.pathname.slice(upstreamPath.length) : parsed.pathname;
  return `${base}${path}${parsed.search}`;
}

/** The body with its `next`/`previous` links rewritten; the same buffer when there is nothing to rewrite. */
export function rewriteLinks(body: Buffer, base: string, upstreamPath: string): Buffer {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return body;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return body;
  const record = value as Record<string, unknown>;
  let text = body.toString('utf8');
  let verbatim = true;
  let changed = false;
  for (const field of linkFields) {
    const link = record[field];
    if (typeof link !== 'string') continue;
    const rewritten = rewriteLink(link, base, upstreamPath);
    if (rewritten === link) continue;
    changed = true;
    record[field] = rewritten;
    const pattern = new RegExp(`("${field}"\\s*:\\s*)${escapeRegExp(JSON.stringify(link))}`);
    if (pattern.test(text)) text = text.replace(pattern, (_m, prefix: string) => prefix + JSON.stringify(rewritten));
    else verbatim = false;
  }
  if (!changed) return body;
  return Buffer.from(verbatim ? text : JSON.stringify(record));
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
