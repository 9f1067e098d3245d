/**
 * Secrets out of configuration messages: a parser's error may quote the value it refused, and that value may be
 * a key or a Redis password put in the wrong variable. Every message shown for the configuration goes through
 * `redactSecrets`, which removes the values of the secret settings and anything shaped like a PostHog secret
 * (`phx_…`, `phs_…`, `pha_…`) or like credentials in a URL.
 */

const keyShaped = /ph[a-bd-z]_[A-Za-z0-9_-]+/g;
const urlCredentials = /\/\/[^/@\s"]*@/g;

/** `text` with every secret in `secrets` (values of secret settings) and every key- or credential-shaped part replaced. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    const value = secret.trim();
    if (value.length >= 4) out = out.split(value).join('[redacted]');
  }
  return out.replace(keyShaped, '[redacted key]').replace(urlCredentials, '//[redacted]@');
}
