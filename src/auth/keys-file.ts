/**
 * The static keys file (docs/keys-file.md): SHA-256 digests of keys → label, scopes, projects. Pure parsing;
 * every problem in the file is reported at once. Keys themselves never appear in the file.
 */

/** One trusted key. `projects` null means every project the sidecar serves. */
export interface StaticKey {
  /** Lowercase hex SHA-256 of the key. */
  readonly digest: string;
  readonly label: string;
  readonly scopes: readonly string[];
  readonly projects: readonly number[] | null;
}

const scopePattern = /^(\*|[a-z_]+:(read|write))$/;
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Parse the keys file text; throws an Error listing every problem. */
export function parseKeysFile(text: string, file: string): StaticKey[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`${file}: not valid JSON: ${(error as Error).message}`);
  }
  if (!isObject(value) || !Array.isArray(value.keys)) throw new Error(`${file}: expected {"keys": [...]}`);
  const problems: string[] = [];
  const keys: StaticKey[] = [];
  const seen = new Set<string>();
  value.keys.forEach((entry, index) => {
    const where = `keys[${index}]`;
    if (!isObject(entry)) return problems.push(`${where} is not an object`);
    const { sha256, label, scopes, projects } = entry;
    if (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/i.test(sha256)) problems.push(`${where}.sha256 is not 64 hex digits`);
    else if (seen.has(sha256.toLowerCase())) problems.push(`${where}.sha256 is listed twice`);
    if (typeof label !== 'string' || label === '') problems.push(`${where}.label is not a non-empty string`);
    if (!Array.isArray(scopes) || scopes.some((s) => typeof s !== 'string' || !scopePattern.test(s))) {
      problems.push(`${where}.scopes is not a list of scopes like "feature_flag:read" or "*"`);
    }
    const projectsOk = projects === undefined || projects === null || (Array.isArray(projects) && projects.every((p) => Number.isInteger(p) && (p as number) > 0));
    if (!projectsOk) problems.push(`${where}.projects is not a list of project ids`);
    if (problems.length > 0) return;
    seen.add((sha256 as string).toLowerCase());
    keys.push({
      digest: (sha256 as string).toLowerCase(),
      label: label as string,
      scopes: scopes as string[],
      projects: Array.isArray(projects) ? (projects as number[]) : null,
    });
  });
  if (problems.length > 0) throw new Error(`${file}: ${problems.join('; ')}`);
  return keys;
}
