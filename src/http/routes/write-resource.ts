/**
 * What a forwarded write may have changed, as fleet mode tells the other sidecars (src/fleet/invalidation.ts).
 * Pure. `flags`: a flag write (the project's cached reads, and its definitions: re-poll); `reads`: only the
 * project's cached reads (a new endpoint); `endpoint:<name>`: the cached reads and every cached run of that named
 * endpoint. An endpoint name is upstream's (`^[a-zA-Z][a-zA-Z0-9_-]*$`, at most 128 characters): a write to any
 * other name cannot have changed an endpoint, so it changes only the project's reads.
 */
import type { ScopedRoute } from '../../auth/scopes.js';

/** A resource a write changed. */
export type WrittenResource = 'flags' | 'reads' | `endpoint:${string}`;

const endpointName = /^[a-zA-Z][a-zA-Z0-9_-]{0,127}$/;

/** Whether `value` names a resource (the check applied to what comes from Redis). */
export function isWrittenResource(value: unknown): value is WrittenResource {
  if (value === 'flags' || value === 'reads') return true;
  return typeof value === 'string' && value.startsWith('endpoint:') && endpointName.test(value.slice(9));
}

/** The endpoint a resource names, or null. */
export const endpointOf = (resource: WrittenResource): string | null => (resource.startsWith('endpoint:') ? resource.slice(9) : null);

/** The resource a write on `route` changed; `name`: the endpoint name in its path (for endpoint routes). */
export function writtenResource(route: ScopedRoute, name: string | undefined): WrittenResource {
  if (!route.startsWith('endpoint_')) return 'flags';
  return name !== undefined && endpointName.test(name) ? `endpoint:${name}` : 'reads';
}
