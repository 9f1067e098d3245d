/**
 * Whether a presented key has a shape upstream could ever have issued. Pure; checked only after the sidecar's
 * own key and the static keys file were matched (those may have any shape), and before anything is asked
 * upstream, so a key that cannot be one costs upstream nothing.
 *
 * What upstream issues (PostHog `posthog/models/utils.py`, every version read):
 * - personal keys `phx_` + a random integer written in base 62 (32, later 35 bytes: at most 48 characters), now
 *   base 57 (35 bytes, top bit set: 48 or 49 characters) — letters and digits only;
 * - project secret keys `phs_` + the same; upstream's own authenticator takes a `phs_` key only when it matches
 *   `^phs_[a-zA-Z0-9]+$`;
 * - legacy personal keys, before the prefix: `secrets.token_urlsafe` text (`[A-Za-z0-9_-]`), stored in a column of
 *   at most 50 characters, which upstream still accepts (it looks keys up by hash, whatever their shape);
 * - OAuth access tokens `pha_` + `generate_random_token()` (32 bytes, base 62 then base 57 with the top bit set:
 *   at most 44 characters), letters and digits only (`generate_random_oauth_access_token`, the
 *   `ACCESS_TOKEN_GENERATOR` of posthog/settings); upstream's OAuthAccessTokenAuthentication takes any Bearer token
 *   starting `pha_` as one and looks it up as given, answering an unknown one 401 "Invalid access token.";
 * - JWTs (impersonation, ID-JAG access tokens), which are not keys but reach upstream's API as Bearer tokens.
 * The check errs towards accepting: a bound is never tighter than what upstream's generators could produce.
 */

/** Characters after `phx_`/`phs_`/`pha_` upstream's generators can produce, with room to spare on length. */
const prefixedBody = /^[A-Za-z0-9]{1,64}$/;
/** A key of the era before prefixes (any text of its alphabet that fits the 50-character column). */
const legacy = /^[A-Za-z0-9_-]{1,50}$/;
/** RFC 6750 b64token (what a JWT or any other Bearer token is made of), bounded well above any JWT upstream mints. */
const bearerToken = /^[A-Za-z0-9\-._~+/]+=*$/;
const maxTokenLength = 4096;

/**
 * Whether `key` could have been issued by upstream. `kind` is how the sidecar treats it (a `phs_` key in the
 * Authorization header is a project secret key, a `pha_` one an OAuth access token; anywhere else, as upstream
 * reads it, a personal key). Never throws.
 */
export function plausibleKey(key: string, kind: 'secret' | 'oauth' | 'personal'): boolean {
  if (kind === 'secret') return key.startsWith('phs_') && prefixedBody.test(key.slice(4));
  if (kind === 'oauth') return key.startsWith('pha_') && prefixedBody.test(key.slice(4));
  if (legacy.test(key)) return true;
  if (key.startsWith('phx_') || key.startsWith('phs_')) return prefixedBody.test(key.slice(4));
  return key.length <= maxTokenLength && bearerToken.test(key);
}
