/**
 * The CORS headers upstream's capture service puts on its v0 paths: rust/capture/src/router.rs wraps them in
 * tower-http's `CorsLayer::new().allow_methods([GET, POST, OPTIONS]).allow_headers(AllowHeaders::mirror_request())
 * .allow_credentials(true).allow_origin(AllowOrigin::mirror_request())`, and tower-http's `Cors::call`
 * (tower-http/src/cors/mod.rs) answers every OPTIONS itself, before the route's handler: 200, an empty body, the
 * credentials, methods and mirrored headers and origin. Every other answer gets the credentials header and the
 * mirrored origin. (No `Vary`: tower-http's default list is empty.) Pure.
 */
import type { IncomingHttpHeaders } from 'node:http';

const header = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

/** The headers for an answer to a request with `headers`; `preflight` for an OPTIONS. */
export function captureCorsHeaders(headers: IncomingHttpHeaders, preflight: boolean): Record<string, string> {
  const cors: Record<string, string> = { 'access-control-allow-credentials': 'true' };
  if (preflight) {
    cors['access-control-allow-methods'] = 'GET,POST,OPTIONS';
    const requested = header(headers['access-control-request-headers']);
    if (requested !== undefined) cors['access-control-allow-headers'] = requested;
  }
  const origin = header(headers.origin);
  if (origin !== undefined) cors['access-control-allow-origin'] = origin;
  return cors;
}
