/**
 * `FLAG_SIDECAR_*` variables the spec does not know: each is a problem naming the closest known setting (by edit
 * distance), so a typo such as `FLAG_SIDECAR_POLL_INTERVALL` stops the process instead of being ignored. The
 * variable's value is never shown (it may be a secret put in the wrong place). The variables Kubernetes gives
 * every container for each Service of its namespace are not refused (see kubernetesServiceLinks).
 */
import { isIP } from 'node:net';

/** Names of the prefix that are not settings of the sidecar but are read elsewhere, never refused. */
export const otherNames: readonly string[] = [
  'FLAG_SIDECAR_BUILD_VERSION', // set by the image's build arguments, read by main.ts
  'FLAG_SIDECAR_BUILD_COMMIT',
  'FLAG_SIDECAR_URL', // the app container's address of its sidecar (Helm `flag-sidecar.appEnv`)
];

/** Levenshtein distance (insertions, deletions, substitutions), O(a·b) time, O(b) memory. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current.push(Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, (previous[j - 1] as number) + cost));
    }
    previous = current;
  }
  return previous[b.length] as number;
}

/** The known name closest to `name` (the first in `known` order on a tie). */
export function closestName(name: string, known: readonly string[]): string {
  let best = known[0] ?? '';
  let bestDistance = Infinity;
  for (const candidate of known) {
    const distance = editDistance(name, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** What follows `<SERVICE>_` in the variables of a Kubernetes service link, besides `SERVICE_HOST`. */
const serviceLinkSuffix = /^(?:SERVICE_PORT(?:_[A-Z0-9_]+)?|PORT(?:_[0-9]+_(?:TCP|UDP|SCTP)(?:_(?:PROTO|PORT|ADDR))?)?)$/;

/**
 * The names of `env` that Kubernetes set for a Service (enableServiceLinks, on by default): a Service named
 * `flag-sidecar` (`helm install flag-sidecar …` names the relay's so) or `flag-sidecar-…` gives every pod of the
 * namespace `FLAG_SIDECAR_SERVICE_HOST`, `FLAG_SIDECAR_PORT`, `FLAG_SIDECAR_PORT_8010_TCP_ADDR` and so on. A name
 * counts only beside its Service's `<SERVICE>_SERVICE_HOST` holding an IP address, as Kubernetes always sets it,
 * so a mistyped setting such as `FLAG_SIDECAR_OPS_PORT` is still refused.
 */
export function kubernetesServiceLinks(env: Readonly<Record<string, string | undefined>>): Set<string> {
  const names = new Set<string>();
  const ours = Object.keys(env).filter((name) => name.startsWith('FLAG_SIDECAR_'));
  const services = ours.filter((name) => name.endsWith('_SERVICE_HOST') && isIP(env[name] ?? '') !== 0);
  for (const host of services) {
    const service = host.slice(0, -'SERVICE_HOST'.length);
    names.add(host);
    for (const name of ours) if (name.startsWith(service) && serviceLinkSuffix.test(name.slice(service.length))) names.add(name);
  }
  return names;
}

/** One problem per unknown `FLAG_SIDECAR_*` variable of `env`, in name order. */
export function unknownSettingProblems(env: Readonly<Record<string, string | undefined>>, known: readonly string[]): string[] {
  const allowed = new Set([...known, ...otherNames, ...kubernetesServiceLinks(env)]);
  return Object.keys(env)
    .filter((name) => name.startsWith('FLAG_SIDECAR_') && env[name] !== undefined && !allowed.has(name))
    .sort()
    // Names are cut to 100 characters first, so a huge name costs no more than a long one.
    .map((name) => name.slice(0, 100))
    .map((name) => `${name}: not a setting; did you mean ${closestName(name, known)}? (see docs/configuration.md)`);
}
