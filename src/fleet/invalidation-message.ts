/**
 * The fleet's invalidation message (keys.invalidationChannel): `{"v":1,"project":P,"resource":R,"origin":I}`,
 * where I is the sending sidecar's instance id. Pure. Decoding treats the message as untrusted input: at most
 * `maxInvalidationBytes`, a JSON object of exactly that shape, a resource `isWrittenResource` accepts and a
 * project this sidecar serves; anything else is refused with a reason and never applied.
 */
import { isWrittenResource, type WrittenResource } from '../http/routes/write-resource.js';

/** One invalidation. */
export interface InvalidationMessage {
  readonly project: number;
  readonly resource: WrittenResource;
  readonly origin: string;
}

/** Largest message accepted (a valid one is well under 400 bytes). */
export const maxInvalidationBytes = 1024;
const maxOriginLength = 300;

/** Why a message was refused. */
export type RefusedReason = 'size' | 'shape' | 'unknown_project';

/** The message as sent. */
export function encodeInvalidation(message: InvalidationMessage): string {
  return JSON.stringify({ v: 1, project: message.project, resource: message.resource, origin: message.origin });
}

/** The message in `raw`, or why it is refused; `known(id)`: whether this sidecar serves project `id`. */
export function decodeInvalidation(raw: Buffer, known: (projectId: number) => boolean): { ok: true; message: InvalidationMessage } | { ok: false; reason: RefusedReason } {
  if (raw.length > maxInvalidationBytes) return { ok: false, reason: 'size' };
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    return { ok: false, reason: 'shape' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, reason: 'shape' };
  const { v, project, resource, origin, ...rest } = value as Record<string, unknown>;
  if (v !== 1 || Object.keys(rest).length > 0) return { ok: false, reason: 'shape' };
  if (typeof project !== 'number' || !Number.isSafeInteger(project) || project <= 0) return { ok: false, reason: 'shape' };
  if (!isWrittenResource(resource)) return { ok: false, reason: 'shape' };
  if (typeof origin !== 'string' || origin.length === 0 || origin.length > maxOriginLength) return { ok: false, reason: 'shape' };
  if (!known(project)) return { ok: false, reason: 'unknown_project' };
  return { ok: true, message: { project, resource, origin } };
}
