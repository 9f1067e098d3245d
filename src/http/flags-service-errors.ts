/**
 * The refusals of upstream's flags service (`/flags`, `/decide`, `/flags/definitions`), as its FlagError answers
 * them (rust/feature-flags/src/api/errors.rs): plain text for request errors (bad body, missing distinct_id,
 * missing query token), and Django's `{type, code, detail, attr}` JSON for authentication failures, rate limits
 * and the quota. The sidecar's
 * own Django-shaped refusals are translated here for the /flags/definitions route, whose keys upstream's service
 * checks itself.
 */
import { ApiError, incorrectCredentials } from '../errors.js';
import type { Reply } from './router.js';

/** A refusal the flags service answers in plain text (`text/plain; charset=utf-8`). */
export class PlainTextError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'PlainTextError';
  }
}

/** The reply for a plain-text refusal. */
export function plainTextReply(error: PlainTextError): Reply {
  const body = Buffer.from(error.message);
  return { status: error.status, headers: { 'content-type': 'text/plain; charset=utf-8', 'content-length': String(body.length) }, body };
}

/** 400 RequestDecodingError: `what` is upstream's own reason ("invalid JSON", "JSON nesting too deep", …). */
export const decodingError = (what: string): PlainTextError =>
  new PlainTextError(400, `Failed to decode request: ${what}. Please check your request format and try again.`);

/** 400 MissingDistinctId. */
export const missingDistinctId = (): PlainTextError =>
  new PlainTextError(400, 'The distinct_id field is missing from the request. Please include a valid identifier.');

/** 413 for a body above the accepted size, as the service's body extractor words it. */
export const bodyTooLargeText = (): PlainTextError => new PlainTextError(413, 'Failed to buffer the request body: length limit exceeded');

/** 413 PayloadTooLarge: a compressed body that inflates past `limit` bytes. */
export const inflatedTooLarge = (limit: number): PlainTextError =>
  new PlainTextError(413, `Decompressed request body exceeded ${limit} bytes. If this is a legitimate workload, contact PostHog support.`);

/** 400 for /flags/definitions without `?token=` (the service's query-string rejection). */
export const missingTokenParameter = (): PlainTextError => new PlainTextError(400, 'Failed to deserialize query string: missing field `token`');

/** 401 NoTokenError: a /flags body without a project token. */
export const noProjectToken = (): ApiError =>
  new ApiError(401, 'authentication_error', 'not_authenticated', 'No API token provided. Please include a valid API token in your request.');

/** 401 TokenValidationError: a project token no project has. */
export const unknownProjectToken = (): ApiError =>
  new ApiError(401, 'authentication_error', 'authentication_failed', 'The provided API key is invalid or has expired. Please check your API key and try again.');

/** 401 SecretApiTokenInvalid: an unknown secret key, or another project's. */
export const secretKeyInvalid = (): ApiError =>
  new ApiError(401, 'authentication_error', 'authentication_failed', 'Secret API token is invalid.');

/** 401 PersonalApiKeyInvalid: an unknown personal key, or one without access to the project. */
export const personalKeyInvalid = (): ApiError =>
  new ApiError(401, 'authentication_error', 'authentication_failed', 'Personal API key is invalid.');

/** 403 PersonalApiKeyInsufficientScopes. */
export const personalKeyLacksScope = (): ApiError =>
  new ApiError(403, 'authentication_error', 'permission_denied', 'Personal API key lacks required scopes (feature_flag:read or feature_flag:write).');

/**
 * 402 ClientFacingError::BillingLimit: the project is over its feature-flag quota. The service writes its own
 * body in its field order with `attr`, where Django's local_evaluation writes `{type, detail, code}`.
 */
export const flagsQuotaLimited = (): ApiError =>
  new ApiError(402, 'quota_limited', 'payment_required', 'You have exceeded your feature flag request quota');

/** 429 RateLimited. */
export const flagsRateLimited = (): ApiError => new ApiError(429, 'validation_error', 'rate_limit_exceeded', 'Rate limit exceeded');

/**
 * The flags service's answer for a refusal the sidecar's Django-style authorizer made on /flags/definitions.
 * The service reads only a `Bearer` header: a `phs_` key there is checked as a secret key (every failure is its
 * 401), anything else as a personal key (401, or 403 for a key without the flag scopes). No credential keeps
 * Django's body, which the service answers too; the sidecar's own refusals (503 unverifiable) pass unchanged.
 */
export function definitionsRefusal(error: ApiError, authorization: string | undefined): ApiError {
  if (error.status === 429) return flagsRateLimited();
  if (error.code === 'not_authenticated' || (error.status !== 401 && error.status !== 403)) return error;
  if (error.detail === incorrectCredentials().detail) return unknownProjectToken();
  const secret = authorization !== undefined && /^Bearer\s+phs_/.test(authorization);
  if (secret) return secretKeyInvalid();
  return error.detail.startsWith('API key missing required scope') ? personalKeyLacksScope() : personalKeyInvalid();
}
