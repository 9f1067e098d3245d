/**
 * Credential → principal for the keys the sidecar knows without asking upstream: its own upstream key (trusted
 * to read its projects) and the static keys file. Keys are hashed with SHA-256 and compared digest to digest in
 * constant time against every entry; only the digest's prefix is ever shown.
 */
import { hash } from 'node:crypto';
import type { StaticKey } from './keys-file.js';

/** Who is calling: label, granted scopes, and the projects the key may reach (null: every served project). */
export interface Principal {
  readonly label: string;
  /** First 12 hex digits of the key's SHA-256, safe to log and show. */
  readonly keyPrefix: string;
  readonly scopes: ReadonlySet<string>;
  readonly projects: ReadonlySet<number> | null;
  readonly kind: 'own' | 'static' | 'introspected';
  /**
   * A legacy personal key without scopes (upstream renders them as `*`). Seed-era upstreams let such keys call
   * even the operations that declare no scope; the sidecar forwards those and lets upstream decide.
   */
  readonly legacy?: boolean;
}

/** SHA-256 of a key, hex (one-shot hashing: several times faster than createHash on the hot path). */
export const digestKey = (key: string): string => hash('sha256', key, 'hex');

/** Constant-time equality of two strings of the same length (digests); false at once for different lengths. */
export function digestsEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** What the resolver knows. */
export interface PrincipalSources {
  readonly ownKey: string | null;
  readonly ownProjects: readonly number[];
  readonly staticKeys: readonly StaticKey[];
}

/** Create the resolver. `resolve` returns null for a key nobody vouches for. */
export function createPrincipalResolver(sources: PrincipalSources) {
  const entry = (digest: string, principal: Omit<Principal, 'keyPrefix'>) => ({
    digest,
    principal: Object.freeze({ ...principal, keyPrefix: digest.slice(0, 12) }),
  });
  const entries = sources.staticKeys.map((k) =>
    entry(k.digest, {
      label: k.label,
      scopes: new Set(k.scopes),
      projects: k.projects === null ? null : new Set(k.projects),
      kind: 'static',
    }),
  );
  if (sources.ownKey !== null) {
    entries.unshift(
      entry(digestKey(sources.ownKey), {
        label: 'sidecar upstream key',
        scopes: new Set(['feature_flag:read']),
        projects: new Set(sources.ownProjects),
        kind: 'own',
      }),
    );
  }

  /** The known principal whose key has SHA-256 hex `digest`, or null. */
  function resolveDigest(digest: string): Principal | null {
    let found: Principal | null = null;
    for (const e of entries) {
      // Every entry is compared, so the time taken does not depend on which one matched.
      if (digestsEqual(e.digest, digest) && found === null) found = e.principal;
    }
    return found;
  }

  return {
    /** Label and digest prefix of every known key, for /status (never the key). */
    describe: (): Array<Pick<Principal, 'label' | 'keyPrefix'>> =>
      entries.map((e) => ({ label: e.principal.label, keyPrefix: e.principal.keyPrefix })),
    /** The known principal for `key`, or null. */
    resolve: (key: string): Principal | null => resolveDigest(digestKey(key)),
    resolveDigest,
  };
}

/** The resolver handle. */
export type PrincipalResolver = ReturnType<typeof createPrincipalResolver>;
