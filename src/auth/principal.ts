/**
 * Credential → principal for the keys the sidecar knows without asking upstream: its own upstream key (trusted
 * to read its projects) and the static keys file. Keys are hashed with SHA-256 and compared digest to digest in
 * constant time against every entry; only the digest's prefix is ever shown.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { StaticKey } from './keys-file.js';

/** Who is calling: label, granted scopes, and the projects the key may reach (null: every served project). */
export interface Principal {
  readonly label: string;
  /** First 12 hex digits of the key's SHA-256, safe to log and show. */
  readonly keyPrefix: string;
  readonly scopes: ReadonlySet<string>;
  readonly projects: ReadonlySet<number> | null;
  readonly kind: 'own' | 'static';
}

/** SHA-256 of a key. */
export const digestKey = (key: string): Buffer => createHash('sha256').update(key).digest();

/** What the resolver knows. */
export interface PrincipalSources {
  readonly ownKey: string | null;
  readonly ownProjects: readonly number[];
  readonly staticKeys: readonly StaticKey[];
}

/** Create the resolver. `resolve` returns null for a key nobody vouches for. */
export function createPrincipalResolver(sources: PrincipalSources) {
  const entries: Array<{ digest: Buffer; principal: Omit<Principal, 'keyPrefix'> }> = sources.staticKeys.map((k) => ({
    digest: k.digest,
    principal: { label: k.label, scopes: new Set(k.scopes), projects: k.projects === null ? null : new Set(k.projects), kind: 'static' },
  }));
  if (sources.ownKey !== null) {
    entries.unshift({
      digest: digestKey(sources.ownKey),
      principal: { label: 'sidecar upstream key', scopes: new Set(['feature_flag:read']), projects: new Set(sources.ownProjects), kind: 'own' },
    });
  }

  return {
    /** Label and digest prefix of every known key, for /status (never the key). */
    describe: (): Array<Pick<Principal, 'label' | 'keyPrefix'>> =>
      entries.map((e) => ({ label: e.principal.label, keyPrefix: e.digest.toString('hex').slice(0, 12) })),
    resolve(key: string): Principal | null {
      const digest = digestKey(key);
      let found: Omit<Principal, 'keyPrefix'> | null = null;
      for (const entry of entries) {
        // Every entry is compared, so the time taken does not depend on which one matched.
        if (timingSafeEqual(entry.digest, digest) && found === null) found = entry.principal;
      }
      return found === null ? null : { ...found, keyPrefix: digest.toString('hex').slice(0, 12) };
    },
  };
}

/** The resolver handle. */
export type PrincipalResolver = ReturnType<typeof createPrincipalResolver>;
