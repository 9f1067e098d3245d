/**
 * Errors with a stable `code`, and the one map from an API error to upstream's HTTP status and
 * `{type, code, detail, attr}` body (drf-exceptions-hog's `exceptions_hog/handler.py`, which PostHog's
 * API uses; docs/api-compatibility.md). Bodies are serialized here and
 * nowhere else, so every refusal the sidecar makes looks exactly like upstream's.
 */

/** The `type` values of upstream's error bodies (drf-exceptions-hog's, and the quota refusal's own). */
export type ApiErrorType =
  | 'authentication_error'
  | 'invalid_request'
  | 'validation_error'
  | 'throttled_error'
  | 'server_error'
  | 'quota_limited';

/** An error the HTTP layer turns into an upstream-style response. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: ApiErrorType,
    readonly code: string,
    readonly detail: string,
    readonly attr: string | null = null,
    /** Headers the reply carries besides its content headers (a `Retry-After`), or null. */
    readonly headers: Readonly<Record<string, string>> | null = null,
  ) {
    super(detail);
    this.name = 'ApiError';
  }

  /** The auth denial reason when auth/authenticate.ts `deny` threw it (the access log's reason), else null. */
  denial: string | null = null;

  /** Upstream's JSON body for this error, key order as upstream renders it. */
  body(): Buffer {
    return Buffer.from(
      JSON.stringify({ type: this.type, code: this.code, detail: this.detail, attr: this.attr }),
    );
  }
}

/**
 * The sidecar's own throttle: too many unknown keys are being verified upstream at once (auth/verify-queue.ts).
 * Upstream's throttled body (DRF `Throttled`: "Request was throttled. Expected available in N seconds.") with
 * the reason in between, and a `Retry-After` (which upstream's 429s lack; SDKs back off on the status alone).
 */
export class VerifierBusyError extends ApiError {
  constructor(readonly retryAfterSeconds: number) {
    const wait = `${retryAfterSeconds} second${retryAfterSeconds === 1 ? '' : 's'}`;
    super(
      429,
      'throttled_error',
      'throttled',
      `Request was throttled: too many API keys are being verified at once. Expected available in ${wait}.`,
      null,
      { 'retry-after': String(retryAfterSeconds) },
    );
    this.name = 'VerifierBusyError';
  }
}

/** Configuration problems: every problem found, reported together. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** A snapshot file that cannot be used; never served. */
export class SnapshotFileError extends Error {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(`${file}: ${message}`);
    this.name = 'SnapshotFileError';
  }
}

/** Upstream's 401 when no credential was presented. */
export const notAuthenticated = (): ApiError =>
  new ApiError(401, 'authentication_error', 'not_authenticated', 'Authentication credentials were not provided.');

/** Where a rejected personal API key was found; upstream names it in the detail. */
export type KeySource = 'header' | 'query' | 'body';

const keySourceText: Record<KeySource, string> = {
  header: 'Authorization header',
  query: 'query string',
  body: 'request body',
};

/** Upstream's 401 for a personal API key it does not know. */
export const invalidPersonalKey = (source: KeySource): ApiError =>
  new ApiError(
    401,
    'authentication_error',
    'authentication_failed',
    `Personal API key found in request ${keySourceText[source]} is invalid.`,
  );

/** Upstream's 401 for an OAuth access token (`pha_…`) it does not know. */
export const invalidAccessToken = (): ApiError =>
  new ApiError(401, 'authentication_error', 'authentication_failed', 'Invalid access token.');

/** Upstream's 401 for a `?token=` that matches no project. */
export const incorrectCredentials = (): ApiError =>
  new ApiError(401, 'authentication_error', 'authentication_failed', 'Incorrect authentication credentials.');

/** Upstream's 403 for a key without the scope a route needs (write implies read). */
export const missingScope = (scope: string): ApiError =>
  new ApiError(403, 'authentication_error', 'permission_denied', `API key missing required scope '${scope}'`);

/** Upstream's 403 for a key scoped to other projects. */
export const projectNotInKeyScope = (projectId: number): ApiError =>
  new ApiError(
    403,
    'authentication_error',
    'permission_denied',
    `API key does not have access to the requested project: ID ${projectId}.`,
  );

/** Upstream's 403 for an operation that declares no scope, called with a personal API key. */
export const personalKeyNotSupported = (): ApiError =>
  new ApiError(403, 'authentication_error', 'permission_denied', 'This action does not support Personal API Key access');

/** DRF's default 403, which upstream gives a secret key used outside its project or endpoints. */
export const permissionDenied = (): ApiError =>
  new ApiError(403, 'authentication_error', 'permission_denied', 'You do not have permission to perform this action.');

/** Upstream's 404 for a project that does not exist (or that the sidecar does not serve). */
export const projectNotFound = (): ApiError =>
  new ApiError(404, 'invalid_request', 'not_found', 'Project not found.');

/** DRF's generic 404. */
export const notFound = (): ApiError => new ApiError(404, 'invalid_request', 'not_found', 'Not found.');

/** DRF's 405 for a method a route does not map. */
export const methodNotAllowed = (method: string): ApiError =>
  new ApiError(405, 'invalid_request', 'method_not_allowed', `Method "${method}" not allowed.`);

/** Unhandled failure, upstream's generic 500 body. */
export const serverError = (): ApiError =>
  new ApiError(500, 'server_error', 'error', 'A server error occurred.');

/** The sidecar cannot answer yet (no snapshot), upstream-style. */
export const unavailable = (detail: string): ApiError =>
  new ApiError(503, 'server_error', 'service_unavailable', detail);

/** 503 for a request that arrives, or a write that would start, while the sidecar is shutting down. */
export const shuttingDown = (): ApiError =>
  unavailable('The sidecar is shutting down and took no action on this request; send it again.');

/**
 * 503 for a request still unanswered when the drain's grace ran out. Unlike `shuttingDown`, something may have
 * been done: a write may have reached upstream, so the caller checks before sending it again.
 */
export const shutDownFirst = (): ApiError =>
  unavailable('The sidecar shut down before this request finished; a read can be sent again, a write may have reached upstream.');

/**
 * 408 for a request whose body was still arriving when its listener, at its connection cap, needed the connection
 * for a new client (src/http/connection-cap.ts). Nothing was done with it.
 */
export const requestCut = (): ApiError =>
  new ApiError(408, 'invalid_request', 'request_timeout', 'The request body did not arrive in time: the sidecar needed the connection for another client. Nothing was done; send it again.');

/** 413 for a request body above the configured limit, in upstream's error shape. */
export const bodyTooLarge = (limit: number): ApiError =>
  new ApiError(413, 'invalid_request', 'request_too_large', `Request body is larger than the ${limit} bytes accepted.`);

/** DRF's 400 for a body that is not valid JSON. */
export const parseError = (reason: string): ApiError =>
  new ApiError(400, 'invalid_request', 'parse_error', `JSON parse error - ${reason}`);

/** Why upstream gave no answer, as the client classifies it. */
export type UpstreamFailureCause = 'timeout' | 'connect' | 'reset' | 'too_large' | 'aborted' | 'other';

/** 504 when upstream timed out, 502 for every other failure to get an answer; the detail names the cause class. */
export function upstreamFailure(cause: UpstreamFailureCause): ApiError {
  if (cause === 'timeout') return new ApiError(504, 'server_error', 'upstream_timeout', 'Upstream did not answer in time (timeout).');
  const what: Record<Exclude<UpstreamFailureCause, 'timeout'>, string> = {
    connect: 'could not be reached (connect)',
    reset: 'closed the connection (reset)',
    too_large: 'sent a response above the size limit (too_large)',
    aborted: 'request was aborted (aborted)',
    other: 'request failed (other)',
  };
  return new ApiError(502, 'server_error', 'upstream_unavailable', `Upstream ${what[cause]}.`);
}

/** 503 for an operation that needs upstream while the sidecar runs offline. */
export const offline = (): ApiError =>
  unavailable('This operation needs upstream, and the sidecar runs offline (no FLAG_SIDECAR_UPSTREAM_URL).');
