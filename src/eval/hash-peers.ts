/**
 * Which flags' bucketing hashes are worth computing together (hash.ts flagHashesOf, four at once): for each flag,
 * the next (at most three) flags after it in evaluation order (the definitions' order, a later duplicate key in
 * the place of the first, as CompiledDefinitions' byKey) that may need a hash with the same salt and bucket by the
 * same kind of value (the distinct id, the device id, or a group type's key). A guess only: a peer's hash is used
 * only when the peer is evaluated with the same bucketing value, so a wrong guess costs a lane, never an answer.
 */
import type { CompiledCondition } from './compile.js';

/** What of a compiled flag the choice reads. */
export interface HashPeerDraft {
  readonly key: string;
  readonly active: boolean;
  readonly continuity: boolean;
  readonly aggregation: number | null | undefined;
  readonly deviceBucketing: boolean;
  readonly conditions: readonly CompiledCondition[];
  readonly variants: readonly unknown[];
}

/** Per flag (in `flags`' order): its peers for the rollout hash and for the variant hash, by their index in `flags`. */
export interface HashPeers {
  readonly rollout: ReadonlyArray<readonly number[]>;
  readonly variant: ReadonlyArray<readonly number[]>;
}

const most = 3;
const none: readonly number[] = Object.freeze([]);

/** The peers of each flag. */
export function hashPeers(flags: readonly HashPeerDraft[]): HashPeers {
  const latest = new Map<string, number>();
  flags.forEach((flag, i) => latest.set(flag.key, i));
  const order = [...latest.values()];
  // An inactive flag hashes nothing; a continuity flag is inconclusive or decided without a hash (continuity.ts).
  const hashes = (flag: HashPeerDraft): boolean => flag.active && !flag.continuity;
  const rolloutNeeded = (flag: HashPeerDraft): boolean => hashes(flag) && flag.conditions.some((c) => c.rollout != null && c.rollout < 100);
  const variantNeeded = (flag: HashPeerDraft): boolean => hashes(flag) && flag.variants.length > 0;
  const kind = (flag: HashPeerDraft): string => (flag.aggregation != null ? `group ${flag.aggregation}` : flag.deviceBucketing ? 'device' : 'person');
  const pick = (needed: (flag: HashPeerDraft) => boolean): Array<readonly number[]> => {
    const peers: Array<readonly number[]> = flags.map(() => none);
    // From the last flag back: per kind, the next needing flags after the current one, nearest first.
    const next = new Map<string, number[]>();
    for (let p = order.length - 1; p >= 0; p--) {
      const i = order[p] as number;
      const flag = flags[i] as HashPeerDraft;
      const ahead = next.get(kind(flag)) ?? [];
      if (ahead.length > 0) peers[i] = ahead;
      if (needed(flag)) next.set(kind(flag), [i, ...ahead].slice(0, most));
    }
    return peers;
  };
  return { rollout: pick(rolloutNeeded), variant: pick(variantNeeded) };
}
