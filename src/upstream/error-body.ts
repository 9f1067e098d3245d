/**
 * Upstream's error body as a short, safe text for a log line or a message: the `code` and `detail` of a
 * `{type, code, detail, attr}` body when it is one, else the start of the body as text; at most `maxChars`
 * characters, control characters flattened, and anything shaped like a secret key or URL credentials removed
 * (upstream echoes nothing secret today; this holds if a proxy in between ever does).
 */
import { redactSecrets } from '../config/redact.js';

/** Bytes of the body looked at: enough for any error body, so a huge answer costs nothing. */
const scanBytes = 4096;

/** A one-line excerpt of `body` (empty string for an empty body). */
export function errorBodyExcerpt(body: Buffer, maxChars = 200): string {
  const text = body.subarray(0, scanBytes).toString('utf8');
  let shown = text;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
      const { code, detail } = parsed as { code?: unknown; detail?: unknown };
      if (typeof detail === 'string') shown = typeof code === 'string' ? `${code}: ${detail}` : detail;
    }
  } catch {
    // not JSON (or cut at scanBytes): the text itself
  }
  const flat = redactSecrets(shown.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim(), []);
  return flat.length > maxChars ? `${flat.slice(0, maxChars)}…` : flat;
}

/** `upstream answered <status>` with the body's excerpt when it has one. */
export function upstreamAnswered(status: number, body: Buffer): string {
  const excerpt = errorBodyExcerpt(body);
  return excerpt === '' ? `upstream answered ${status}` : `upstream answered ${status}: ${excerpt}`;
}
