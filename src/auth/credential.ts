/**
 * Credential extraction as upstream does it (`PersonalAPIKeyAuthentication` in PostHog's `posthog/auth.py`):
 * `Authorization: Bearer <key>` (spacing tolerated, keyword case-sensitive), then the `personal_api_key` field of a
 * JSON request body, then the `personal_api_key` query parameter. Only the first candidate found is used. A `phc_`
 * project token is never a credential.
 */
import type { KeySource } from '../errors.js';
import type { Query } from '../http/query.js';

/** A presented key and where it was found. */
export interface Credential {
  readonly key: string;
  readonly source: KeySource;
}

const bearer = /^Bearer\s+(\S.*)$/;

/** The caller's credential, or null when none was presented. */
export function extractCredential(authorization: string | undefined, query: Query | null, bodyKey?: string): Credential | null {
  if (authorization !== undefined) {
    const match = bearer.exec(authorization.trim());
    if (match) return { key: (match[1] as string).trim(), source: 'header' };
  }
  if (bodyKey) return { key: bodyKey.trim(), source: 'body' };
  const fromQuery = query?.get('personal_api_key');
  if (fromQuery) return { key: fromQuery.trim(), source: 'query' };
  return null;
}

/** The kind of key, from its prefix: project secret (`phs_`), OAuth (`pha_`) or personal (anything else). */
export function keyKind(key: string): 'secret' | 'oauth' | 'personal' {
  if (key.startsWith('phs_')) return 'secret';
  if (key.startsWith('pha_')) return 'oauth';
  return 'personal';
}
