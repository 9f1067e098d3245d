/**
 * The repository stands alone: no tracked file names the design notes and research files that lived outside it,
 * and every relative link of its Markdown pages leads to a tracked file — and, for a `#fragment` into a Markdown
 * page, to a heading of that page, by GitHub's anchor rules (lower-case, punctuation dropped, spaces → '-',
 * `-1`, `-2`… for repeated headings).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rootDir } from '../support/start-sidecar.js';

/** Tracked files, as git lists them (paths relative to the repository, `/`-separated). */
const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: rootDir, encoding: 'utf8' })
  .split('\0')
  .filter((path) => path !== '' && existsSync(join(rootDir, path)));
const trackedSet = new Set(tracked);
const trackedDirs = new Set(tracked.flatMap((path) => path.split('/').slice(0, -1).map((_, i, parts) => parts.slice(0, i + 1).join('/'))));

/** Lock files: generated, and free to hold any package name. */
const lockFiles = new Set(['package-lock.json', '.ci/node-lts/package-lock.json']);

// The names, written so that this file does not contain them itself.
const outsidePatterns: readonly RegExp[] = [
  new RegExp(['\\.\\.', 'shared'].join('/')),
  new RegExp(['DESIGN', 'md'].join('\\.')),
  new RegExp(['reference', '[a-z-]+\\.md'].join('/')),
  // The research notes by their own names, unless the repository has a file of that name.
  ...['flags-api', 'endpoints-api', 'interface', 'proxies']
    .filter((name) => !tracked.some((path) => path.endsWith(`/${name}.md`) || path === `${name}.md`))
    .map((name) => new RegExp(`\\b${name}\\.md\\b`)),
];

/** Each line of `text` naming a file outside the repository, as `line: text`. */
function outsideReferences(text: string): string[] {
  return text
    .split('\n')
    .map((line, i) => [i + 1, line] as const)
    .filter(([, line]) => outsidePatterns.some((pattern) => pattern.test(line)))
    .map(([n, line]) => `${n}: ${line.trim()}`);
}

/** The text of a Markdown page without fenced code blocks and inline code spans (their brackets are not links). */
function withoutCode(markdown: string): string {
  return markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
    .replace(/(`+)[\s\S]*?\1/g, '');
}

/** GitHub's anchor for a heading's text: lower-case, punctuation dropped (`-` and `_` kept), spaces → '-'. */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/`/g, '')
    .replace(/<[^>]+>/g, '')
    .replace(/[*~]/g, '');
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown page's headings, with GitHub's `-1`, `-2`… for repeats. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const text = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const match of text.matchAll(/^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const slug = githubSlug(match[1] as string);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Relative link targets of a Markdown page: inline `[text](target)` and reference definitions `[id]: target`. */
export function linkTargets(markdown: string): string[] {
  const text = withoutCode(markdown);
  const inline = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] as string);
  const definitions = [...text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((m) => m[1] as string);
  return [...inline, ...definitions].filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** What is wrong with `target` linked from the Markdown page `page` (repository-relative), or null. */
function brokenLink(page: string, target: string): string | null {
  const hash = target.indexOf('#');
  const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
  const fragment = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
  const file = pathPart === '' ? page : normalize(join(dirname(page), pathPart)).replace(/\\/g, '/').replace(/\/$/, '');
  if (file.startsWith('..')) return `${target}: outside the repository`;
  if (!trackedSet.has(file) && !trackedDirs.has(file)) return `${target}: no such file in the repository (${file})`;
  if (fragment === null || !file.endsWith('.md')) return null;
  return anchorsOf(readFileSync(join(rootDir, file), 'utf8')).has(fragment) ? null : `${target}: no heading with that anchor in ${file}`;
}

describe('the repository stands alone', () => {
  it('no tracked file names the design notes or research files outside the repository', () => {
    const found = tracked
      .filter((path) => !lockFiles.has(path))
      .flatMap((path) => outsideReferences(readFileSync(join(rootDir, path), 'utf8')).map((line) => `${path}:${line}`));
    expect(found).toEqual([]);
  });

  it('every relative link of a Markdown page leads to a tracked file, and an anchor to a heading of it', () => {
    const pages = tracked.filter((path) => path.endsWith('.md'));
    expect(pages).toContain('README.md');
    const broken = pages.flatMap((page) =>
      linkTargets(readFileSync(join(rootDir, page), 'utf8'))
        .map((target) => brokenLink(page, target))
        .filter((problem): problem is string => problem !== null)
        .map((problem) => `${page}: ${problem}`),
    );
    expect(broken).toEqual([]);
  });
});

describe('the link checker itself', () => {
  it('makes anchors as GitHub does', () => {
    expect(githubSlug('Sidecars behind a relay (sidecar → relay → PostHog)')).toBe('sidecars-behind-a-relay-sidecar--relay--posthog');
    expect(githubSlug('Deploy as a native sidecar (Kubernetes ≥ 1.29)')).toBe('deploy-as-a-native-sidecar-kubernetes--129');
    expect(githubSlug('SDKs with `host` = the sidecar')).toBe('sdks-with-host--the-sidecar');
    expect(githubSlug('Named endpoints (operations 19–27)')).toBe('named-endpoints-operations-1927');
    expect(githubSlug('Layout of `src/`')).toBe('layout-of-src');
    expect(githubSlug('FLAG_SIDECAR_SNAPSHOT_DIR, [the spool](x.md)')).toBe('flag_sidecar_snapshot_dir-the-spool');
    expect([...anchorsOf('# A\n## B\n```\n# not a heading\n```\n## B\n')]).toEqual(['a', 'b', 'b-1']);
  });

  it('finds inline and reference links, not those in code or with a scheme', () => {
    const page = '[a](docs/a.md#x) `[c](c.md)` [d](https://example.com)\n```\n[e](e.md)\n```\n[f]: f.md\n';
    expect(linkTargets(page)).toEqual(['docs/a.md#x', 'f.md']);
  });
});
