/**
 * A static check of the Dockerfile and .dockerignore (issue 7): Docker is not runnable on these machines, so the
 * points the image must follow are checked on the text. `checkImage` returns one problem string per broken rule,
 * each starting with the rule's id (`stages:`, `user:` …), so a test can show that every rule can fail.
 * Covers the Dockerfile subset this repo uses: instructions, `#` comments, `\` continuations, JSON or shell form.
 */

/** One instruction: upper-cased keyword, its arguments (continuations joined), 1-based line. */
export interface Instruction {
  readonly keyword: string;
  readonly args: string;
  readonly line: number;
}

/** One build stage: its FROM image, its name (`AS name`), its instructions after FROM. */
export interface Stage {
  readonly image: string;
  readonly name: string | null;
  readonly instructions: readonly Instruction[];
}

/** A parsed Dockerfile: the ARGs before the first FROM, then the stages. */
export interface Dockerfile {
  readonly globalArgs: readonly Instruction[];
  readonly stages: readonly Stage[];
}

/** Parse a Dockerfile into stages of instructions. */
export function parseDockerfile(text: string): Dockerfile {
  const instructions: Instruction[] = [];
  const lines = text.split(/\r?\n/);
  let pending: { text: string; line: number } | null = null;
  for (const [index, raw] of lines.entries()) {
    const trimmed = raw.trim();
    if (trimmed.startsWith('#') || (trimmed === '' && pending === null)) continue;
    const continued = trimmed.endsWith('\\');
    const part = continued ? trimmed.slice(0, -1) : trimmed;
    pending = pending ? { text: `${pending.text} ${part}`, line: pending.line } : { text: part, line: index + 1 };
    if (continued) continue;
    const match = /^(\S+)\s*(.*)$/s.exec(pending.text.trim());
    if (match) instructions.push({ keyword: (match[1] as string).toUpperCase(), args: (match[2] as string).trim(), line: pending.line });
    pending = null;
  }
  const globalArgs: Instruction[] = [];
  const stages: Array<{ image: string; name: string | null; instructions: Instruction[] }> = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') {
      const words = instruction.args.split(/\s+/).filter((w) => !w.startsWith('--'));
      const as = words.findIndex((w) => w.toLowerCase() === 'as');
      stages.push({ image: words[0] ?? '', name: as >= 0 ? (words[as + 1] ?? null) : null, instructions: [] });
    } else if (stages.length === 0) {
      globalArgs.push(instruction);
    } else {
      (stages[stages.length - 1] as (typeof stages)[number]).instructions.push(instruction);
    }
  }
  return { globalArgs, stages };
}

/** A COPY/ADD: its `--flag=value` options, its sources and its destination. */
export interface CopySpec {
  readonly keyword: string;
  readonly flags: Readonly<Record<string, string>>;
  readonly sources: readonly string[];
  readonly dest: string;
  readonly line: number;
}

/** Split a COPY/ADD into flags, sources and destination (shell or JSON form). */
export function parseCopy(instruction: Instruction): CopySpec {
  const flags: Record<string, string> = {};
  let rest = instruction.args;
  for (let m = /^--([a-z-]+)(?:=(\S*))?\s+/.exec(rest); m; m = /^--([a-z-]+)(?:=(\S*))?\s+/.exec(rest)) {
    flags[m[1] as string] = m[2] ?? 'true';
    rest = rest.slice(m[0].length);
  }
  const words = rest.startsWith('[') ? (JSON.parse(rest) as string[]) : rest.split(/\s+/).filter(Boolean);
  return { keyword: instruction.keyword, flags, sources: words.slice(0, -1), dest: words[words.length - 1] ?? '', line: instruction.line };
}

/** The variables an ENV instruction sets (`a=b c="d e"`, or the legacy `ENV a b`), quotes removed. */
export function parseEnv(args: string): Record<string, string> {
  const env: Record<string, string> = {};
  if (!/^[A-Za-z_][A-Za-z0-9_]*=/.test(args)) {
    const [name, ...value] = args.split(/\s+/);
    if (name) env[name] = value.join(' ');
    return env;
  }
  const pair = /([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|'[^']*'|\S*)/g;
  for (let m = pair.exec(args); m; m = pair.exec(args)) {
    const value = m[2] as string;
    env[m[1] as string] = /^["']/.test(value) ? value.slice(1, -1) : value;
  }
  return env;
}

/** A .dockerignore's patterns, comments and blank lines dropped. */
export const dockerignorePatterns = (text: string): string[] =>
  text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));

const normalize = (path: string): string => path.replace(/^\.\//, '').replace(/\/+$/, '');

/** What the image must hold and how the process is configured, from the code (passed in by the test). */
export interface ImageExpectations {
  /** The API and ops listeners' default ports (src/config/spec.ts). */
  readonly ports: readonly number[];
  /** Files the final stage may copy from the build context: the offline defaults (src/config/load.ts). */
  readonly contextFiles: readonly string[];
  /** The Node major CI tests besides the machine's (.ci/node-lts): both stages must run it. */
  readonly nodeMajor: number;
  /** `flag-sidecar health`'s own timeout when not given (src/health.ts): Docker's must leave room for it. */
  readonly healthTimeoutMs: number;
}

const isExecForm = (args: string): string[] | null => {
  if (!args.startsWith('[')) return null;
  try {
    const value: unknown = JSON.parse(args);
    return Array.isArray(value) && value.every((v) => typeof v === 'string') ? (value as string[]) : null;
  } catch {
    return null;
  }
};

/** The compiled entry point, as the final stage's commands may name it. */
const entryScripts = ['dist/main.js', '/app/dist/main.js'];

/** A Go duration as Docker's HEALTHCHECK options take them (`30s`, `1m30s`, `500ms`) → ms; null when not one. */
export function dockerDuration(text: string): number | null {
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  if (!/^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/.test(text)) return null;
  let ms = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) ms += Number(m[1]) * (units[m[2] as string] as number);
  return ms;
}

/**
 * The module compile cache: NODE_COMPILE_CACHE set, read-only at run time, and warmed in the final stage (its own
 * node) by scripts/warm-compile-cache.mjs into that directory, as the uid the process runs as (node keeps one
 * cache per uid: warmed as another, every start would miss), after the code it caches is in place.
 */
function checkCompileCache(final: Stage, env: Readonly<Record<string, string>>, user: string | null): string[] {
  const dir = env.NODE_COMPILE_CACHE;
  if (dir === undefined) return ['compile-cache: ENV NODE_COMPILE_CACHE is not set'];
  const problems: string[] = [];
  if (env.NODE_COMPILE_CACHE_READONLY !== '1') problems.push('compile-cache: NODE_COMPILE_CACHE_READONLY is not 1 (the process would write into its image)');
  const runs = final.instructions.filter((i) => i.keyword === 'RUN');
  const warm = runs.map((i) => ({ i, argv: isExecForm(i.args) })).find(({ argv }) => argv?.some((a) => a.endsWith('scripts/warm-compile-cache.mjs')));
  if (!warm || warm.argv === null) return [...problems, 'compile-cache: no exec-form RUN of scripts/warm-compile-cache.mjs in the final stage'];
  const argv = warm.argv;
  const as = argv[argv.indexOf('--as') + 1];
  if (!argv.includes('--as') || (user !== null && as !== (user.includes(':') ? user : `${user}:${user}`))) {
    problems.push(`compile-cache: warmed as ${argv.includes('--as') ? as : 'the build user'}, the process runs as ${user ?? '?'}`);
  }
  if (argv.at(-1) !== dir) problems.push(`compile-cache: warms ${argv.at(-1)}, NODE_COMPILE_CACHE is ${dir}`);
  const lastCodeCopy = Math.max(...final.instructions.filter((i) => i.keyword === 'COPY' && /\/dist\b/.test(i.args)).map((i) => i.line));
  if (warm.i.line < lastCodeCopy) problems.push('compile-cache: warmed before dist/ is copied in');
  return problems;
}

/** Debian release names → the numbers distroless images carry. */
const debianReleases: Record<string, string> = { bookworm: '12', trixie: '13' };

/**
 * Base images: each pinned as `image:tag@sha256:<digest>` (the tag for readers and Renovate, the digest for the
 * bytes); the build stages on `node:<major>…-<debian>`, the runtime on distroless `nodejs<major>-debian<n>`, all on
 * the Node major CI tests and one Debian release (the same glibc).
 */
function checkBaseImages(stages: readonly Stage[], nodeMajor: number): string[] {
  const problems: string[] = [];
  const stageNames = new Set<string>();
  const nodes: Array<{ stage: string; major: number; debian: string }> = [];
  for (const [index, stage] of stages.entries()) {
    const label = stage.name ?? String(index);
    if (!stageNames.has(stage.image)) {
      if (!/^[^\s@]+:[^\s@/]+@sha256:[0-9a-f]{64}$/.test(stage.image)) problems.push(`pin: stage ${label}: FROM ${stage.image} is not pinned as image:tag@sha256:<64 hex digits>`);
      const node = /^(?:docker\.io\/library\/)?node:(\d+)(?:\.\d+)*-([a-z]+)(?:-slim)?(?:@|$)/.exec(stage.image);
      const distroless = /^gcr\.io\/distroless\/nodejs(\d+)-debian(\d+)(?::[^@]+)?(?:@|$)/.exec(stage.image);
      if (node) nodes.push({ stage: label, major: Number(node[1]), debian: debianReleases[node[2] as string] ?? `"${node[2]}"` });
      else if (distroless) nodes.push({ stage: label, major: Number(distroless[1]), debian: distroless[2] as string });
      else problems.push(`node: stage ${label}: ${stage.image} is neither node:<major>…-<debian> nor gcr.io/distroless/nodejs<major>-debian<n>`);
    }
    if (stage.name) stageNames.add(stage.name);
  }
  for (const n of nodes) if (n.major !== nodeMajor) problems.push(`node: stage ${n.stage} runs Node ${n.major}, CI tests Node ${nodeMajor} (.ci/node-lts)`);
  if (new Set(nodes.map((n) => n.debian)).size > 1) problems.push(`node: the stages are on different Debian releases (${nodes.map((n) => `${n.stage}: ${n.debian}`).join(', ')})`);
  return problems;
}

/** The final stage's HEALTHCHECK: exec form (no shell in the image) running `node dist/main.js health` within Docker's timeout. */
function checkHealthcheck(final: Stage, healthTimeoutMs: number): string[] {
  const healthcheck = final.instructions.filter((i) => i.keyword === 'HEALTHCHECK').at(-1);
  if (!healthcheck) return ['healthcheck: the final stage has no HEALTHCHECK'];
  const m = /^((?:--[a-z-]+=\S+\s+)*)CMD\s+(.*)$/s.exec(healthcheck.args);
  const argv = m ? isExecForm(m[2] as string) : null;
  if (!m || argv === null) return ['healthcheck: needs HEALTHCHECK [--option=value…] CMD ["…node", "dist/main.js", "health"] (exec form: the image has no shell)'];
  const problems: string[] = [];
  if ((argv[0] ?? '').split('/').at(-1) !== 'node' || !entryScripts.includes(argv[1] ?? '') || argv[2] !== 'health') {
    problems.push(`healthcheck: runs ${JSON.stringify(argv)}, not node dist/main.js health`);
  }
  const options = Object.fromEntries([...(m[1] as string).matchAll(/--([a-z-]+)=(\S+)/g)].map((o) => [o[1] as string, o[2] as string]));
  const own = argv.indexOf('--timeout') >= 0 ? dockerDuration(argv[argv.indexOf('--timeout') + 1] ?? '') : healthTimeoutMs;
  const docker = dockerDuration(options.timeout ?? '30s');
  if (own === null || docker === null || docker <= own) {
    problems.push(`healthcheck: Docker's --timeout=${options.timeout ?? '30s'} leaves no room for health's own timeout: Docker would kill it before it says why`);
  }
  return problems;
}

/** Paths (relative to the build stage's WORKDIR) the final stage may copy from the build stage. */
export const buildOutputs = ['dist', 'node_modules', 'package.json', 'scripts/warm-compile-cache.mjs'];

/** Every broken rule of the image definition, as `rule: detail` lines; empty when it follows them all. */
export function checkImage(dockerfileText: string, dockerignoreText: string, expect: ImageExpectations): string[] {
  const problems: string[] = [];
  const { stages } = parseDockerfile(dockerfileText);
  if (stages.length < 2) {
    problems.push(`stages: a multi-stage build needs at least 2 FROM, found ${stages.length}`);
    return problems;
  }
  const final = stages[stages.length - 1] as Stage;
  const builders = stages.slice(0, -1);
  const all = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword);
  const last = (stage: Stage, keyword: string) => all(stage, keyword).at(-1);

  // Build: npm ci from the lock file, the tsc build, dev dependencies dropped.
  const runs = builders.flatMap((s) => all(s, 'RUN').map((i) => i.args)).join('\n');
  if (!/\bnpm ci\b/.test(runs)) problems.push('build: no build stage runs `npm ci`');
  if (!/\bnpm run build\b/.test(runs)) problems.push('build: no build stage runs `npm run build`');
  if (!/\bnpm prune\b[^\n&;]*--omit=dev|\bnpm ci\b[^\n&;]*--omit=dev/.test(runs)) {
    problems.push('build: dev dependencies are never dropped (`npm prune --omit=dev` or `npm ci --omit=dev`)');
  }

  // The final stage's user: numeric (a name may not exist in the image, and runAsNonRoot cannot verify it), not root.
  const user = last(final, 'USER');
  let validUser: string | null = null;
  if (!user) problems.push('user: the final stage sets no USER (it would run as root)');
  else {
    const m = /^(\d+)(?::(\d+))?$/.exec(user.args);
    if (!m) problems.push(`user: "${user.args}" is not numeric uid[:gid]`);
    else if (Number(m[1]) === 0 || (m[2] !== undefined && Number(m[2]) === 0)) problems.push(`user: "${user.args}" is root`);
    else validUser = user.args;
  }

  // Exec-form entry point: node itself is PID 1 and gets SIGTERM, no shell in between.
  const entrypoint = last(final, 'ENTRYPOINT');
  const argv = entrypoint ? isExecForm(entrypoint.args) : null;
  if (!entrypoint || argv === null) problems.push('entrypoint: the final stage needs an exec-form (JSON array) ENTRYPOINT');
  else {
    const program = (argv[0] ?? '').split('/').at(-1);
    if (program !== 'node') problems.push(`entrypoint: runs "${argv[0]}", not node`);
    if (argv.some((a) => /^(?:.*\/)?(?:sh|bash|ash|dash)$/.test(a) || a === '-c')) problems.push('entrypoint: goes through a shell');
    if (!entryScripts.includes(argv[1] ?? '')) problems.push(`entrypoint: starts "${argv[1]}", not dist/main.js`);
  }
  problems.push(...checkBaseImages(stages, expect.nodeMajor), ...checkHealthcheck(final, expect.healthTimeoutMs));
  const cmd = last(final, 'CMD');
  if (!cmd || JSON.stringify(isExecForm(cmd.args)) !== JSON.stringify(['serve'])) problems.push('cmd: the final stage needs CMD ["serve"]');

  // Build identity: ARG VERSION/COMMIT in the final stage (an ARG is scoped to its stage), surfaced as the ENV the
  // process reads for /status and flag_sidecar_build_info.
  const env: Record<string, string> = Object.assign({}, ...all(final, 'ENV').map((i) => parseEnv(i.args)));
  const args = new Set(all(final, 'ARG').map((i) => (i.args.split('=')[0] as string).trim()));
  for (const [arg, name] of [
    ['VERSION', 'FLAG_SIDECAR_BUILD_VERSION'],
    ['COMMIT', 'FLAG_SIDECAR_BUILD_COMMIT'],
  ] as const) {
    if (!args.has(arg)) problems.push(`build-args: ARG ${arg} is not declared in the final stage`);
    if (env[name] !== `\${${arg}}` && env[name] !== `$${arg}`) problems.push(`build-args: ENV ${name} is not set from \${${arg}}`);
  }

  // Runtime environment: production, the snapshot dir on a volume.
  if (env.NODE_ENV !== 'production') problems.push('env: NODE_ENV is not production');
  // glibc's dynamic threshold would keep freed capture bodies in malloc's heaps (the Dockerfile's comment).
  if (!/^\d+$/.test(env.MALLOC_MMAP_THRESHOLD_ ?? '')) problems.push('env: MALLOC_MMAP_THRESHOLD_ is not fixed');
  const snapshotDir = env.FLAG_SIDECAR_SNAPSHOT_DIR;
  const volumes = all(final, 'VOLUME').flatMap((i) => isExecForm(i.args) ?? i.args.split(/\s+/));
  if (!snapshotDir) problems.push('env: FLAG_SIDECAR_SNAPSHOT_DIR is not set');
  else if (!volumes.includes(snapshotDir)) problems.push(`env: FLAG_SIDECAR_SNAPSHOT_DIR ${snapshotDir} is not a VOLUME`);
  const exposed = all(final, 'EXPOSE').flatMap((i) => i.args.split(/\s+/).map((p) => Number(p.split('/')[0])));
  for (const port of expect.ports) if (!exposed.includes(port)) problems.push(`expose: port ${port} is not exposed`);

  // The final stage holds only the build output, package.json, the offline example files and the empty snapshot dir.
  const stageNames = new Set(builders.flatMap((s, i) => [String(i), ...(s.name ? [s.name] : [])]));
  const buildWorkdir = builders.map((s) => last(s, 'WORKDIR')?.args).find(Boolean) ?? '/';
  for (const instruction of final.instructions.filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD')) {
    const copy = parseCopy(instruction);
    if (copy.keyword === 'ADD') {
      problems.push(`final-copy: line ${copy.line} uses ADD (fetches and unpacks); use COPY`);
      continue;
    }
    const from = copy.flags.from;
    if (from !== undefined && !stageNames.has(from)) {
      problems.push(`final-copy: line ${copy.line} copies from "${from}", not from a build stage`);
      continue;
    }
    for (const source of copy.sources) {
      if (from === undefined) {
        if (!expect.contextFiles.includes(normalize(source))) problems.push(`final-copy: line ${copy.line} copies "${source}" from the build context`);
        continue;
      }
      const relative = normalize(source.startsWith(`${buildWorkdir}/`) ? source.slice(buildWorkdir.length + 1) : source);
      // The (empty) snapshot directory, created owned by the process's user: the one copy that is neither code nor config.
      const snapshotDirCopy = [snapshotDir, ...volumes].some((dir) => dir !== undefined && normalize(copy.dest) === normalize(dir));
      if (snapshotDirCopy) {
        if (validUser !== null && copy.flags.chown !== validUser) problems.push(`final-copy: line ${copy.line} creates the snapshot dir without --chown=${validUser}`);
      } else if (!buildOutputs.includes(relative)) {
        problems.push(`final-copy: line ${copy.line} copies "${source}" from the build stage (only ${buildOutputs.join(', ')})`);
      }
    }
  }

  problems.push(...checkCompileCache(final, env, validUser));

  // .dockerignore: deny everything, then re-include exactly what the Dockerfile copies from the context.
  const patterns = dockerignorePatterns(dockerignoreText);
  if (patterns[0] !== '*') problems.push(`dockerignore: must start with "*" (deny all), starts with "${patterns[0] ?? ''}"`);
  const included = patterns.filter((p) => p.startsWith('!')).map((p) => normalize(p.slice(1)));
  const contextSources = stages
    .flatMap((s) => s.instructions.filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD'))
    .map(parseCopy)
    .filter((c) => c.flags.from === undefined)
    .flatMap((c) => c.sources.map(normalize));
  for (const source of contextSources) {
    if (!included.some((p) => p === source || source.startsWith(`${p}/`))) problems.push(`dockerignore: "${source}" is copied but not re-included`);
  }
  for (const pattern of included) {
    if (!contextSources.some((s) => s === pattern || s.startsWith(`${pattern}/`))) problems.push(`dockerignore: "!${pattern}" re-includes what no COPY uses`);
  }
  for (const pattern of patterns.slice(1)) {
    if (!pattern.startsWith('!')) problems.push(`dockerignore: "${pattern}" after "*" excludes nothing more; the file is an allow-list`);
  }
  return problems;
}
