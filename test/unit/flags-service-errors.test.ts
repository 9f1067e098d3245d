import { describe, expect, it } from 'vitest';
import { ApiError, incorrectCredentials, invalidAccessToken, invalidPersonalKey, missingScope, notAuthenticated, permissionDenied, projectNotInKeyScope, unavailable } from '../../src/errors.js';
import { definitionsRefusal } from '../../src/http/flags-service-errors.js';

const body = (error: ApiError) => ({ status: error.status, ...(JSON.parse(error.body().toString()) as Record<string, unknown>) });
const auth = (status: number, code: string, detail: string) => ({ status, type: 'authentication_error', code, detail, attr: null });

describe('definitionsRefusal: the flags service’s answer on /flags/definitions', () => {
  const cases: Array<[string, ApiError, string | undefined, Record<string, unknown>]> = [
    ['no credential', notAuthenticated(), undefined, auth(401, 'not_authenticated', 'Authentication credentials were not provided.')],
    ['another project’s secret key', permissionDenied(), 'Bearer phs_other', auth(401, 'authentication_failed', 'Secret API token is invalid.')],
    ['unknown secret key', invalidPersonalKey('header'), 'Bearer phs_unknown', auth(401, 'authentication_failed', 'Secret API token is invalid.')],
    ['unknown personal key', invalidPersonalKey('header'), 'Bearer phx_unknown', auth(401, 'authentication_failed', 'Personal API key is invalid.')],
    ['OAuth token (read as a personal key)', invalidAccessToken(), 'Bearer pha_x', auth(401, 'authentication_failed', 'Personal API key is invalid.')],
    ['personal key scoped to another project', projectNotInKeyScope(1), 'Bearer phx_other', auth(401, 'authentication_failed', 'Personal API key is invalid.')],
    ['personal key without flag scope', missingScope('feature_flag:read'), 'Bearer phx_x', auth(403, 'permission_denied', 'Personal API key lacks required scopes (feature_flag:read or feature_flag:write).')],
    ['unknown project token', incorrectCredentials(), 'Bearer phs_x', auth(401, 'authentication_failed', 'The provided API key is invalid or has expired. Please check your API key and try again.')],
    ['throttled', new ApiError(429, 'throttled_error', 'throttled', 'Request was throttled.'), 'Bearer phs_x', { status: 429, type: 'validation_error', code: 'rate_limit_exceeded', detail: 'Rate limit exceeded', attr: null }],
    ['the sidecar’s own 503', unavailable('x'), 'Bearer phs_x', { status: 503, type: 'server_error', code: 'service_unavailable', detail: 'x', attr: null }],
  ];
  it.each(cases)('%s', (_name, error, authorization, expected) => {
    expect(body(definitionsRefusal(error, authorization))).toEqual(expected);
  });
});
