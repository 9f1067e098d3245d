import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleDefinitions, get, bearer } from '../support/fixtures.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { rawExchange, rawRequest } from '../support/raw-http.js';
import { apiRouteTable, fillTemplate } from '../support/route-table.js';
import type { TestSidecar } from '../support/start-sidecar.js';
import { startTwoProjects } from '../support/two-projects-env.js';

// Path tricks on every route of the router table, sent over raw sockets (an HTTP client would normalize them):
// dot segments plain and percent-encoded, doubled slashes, backslashes, NUL, an encoded slash inside a
// parameter, another project's id or token. A key scoped to project 1 must never see project 2's data; every
// answer is a 4xx (or, for a spelling that still names project 1, what that route answers), never a 5xx,
// never a hang; the process keeps serving.
const key = 'phx_project_one_only';
const secretFlag = 'project-two-secret-flag';
let upstream: FakeUpstream;
let sidecar: TestSidecar;

beforeAll(async () => {
  const two = exampleDefinitions();
  (two.flags as unknown[]).push({ id: 77, key: secretFlag, active: true, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
  ({ upstream, sidecar } = await startTwoProjects({ personalKeys: { [key]: { scopes: ['*'], scoped_teams: [1] } }, projectTwo: two }));
});

afterAll(async () => {
  await sidecar.stop();
  await upstream.close();
});

/** A path with `insert` after its first segment (`/api/…` → `/api<insert>/…`). */
const afterFirst = (p: string, insert: string): string => p.replace(/^(\/[^/]+)/, `$1${insert}`);

/** [name, how a project-1 path is rewritten (null: not applicable), true when the result must be a 4xx]. */
const tricks: Array<[string, (path: string) => string | null, boolean]> = [
  ['dot-dot into project 2', (p) => (p.includes('/1/') ? p.replace('/1/', '/1/../2/') : null), true],
  ['dot-dot out of project 2', (p) => (p.includes('/1/') ? p.replace('/1/', '/2/../1/') : null), true],
  ['encoded dot-dot into project 2', (p) => (p.includes('/1/') ? p.replace('/1/', '/1/%2e%2e/2/') : null), true],
  ['upper-case encoded dot-dot', (p) => (p.includes('/1/') ? p.replace('/1/', '/1/%2E%2E/2/') : null), true],
  ['encoded slash in a parameter', (p) => (p.includes('/1/') ? p.replace('/1/', '/1%2F..%2F2/') : null), true],
  ['dot-dot detour', (p) => afterFirst(p, '/x/..'), true],
  ['encoded dot-dot detour', (p) => afterFirst(p, '/x/%2e%2e'), true],
  ['dot segment', (p) => afterFirst(p, '/.'), true],
  ['trailing dot-dot', (p) => `${p}/..`, false],
  ['doubled slash', (p) => (p.indexOf('/', 1) > 0 ? afterFirst(p, '/') : null), true],
  ['leading doubled slash', (p) => `/${p}`, true],
  ['backslashes', (p) => p.replaceAll('/', '\\'), true],
  ['backslash dot-dot', (p) => afterFirst(p, '\\..\\x'), true],
  ['encoded backslash', (p) => afterFirst(p, '%5Cx'), true],
  ['encoded NUL in the path', (p) => afterFirst(p, '%00'), true],
  ['encoded NUL at the end', (p) => `${p}%00`, true],
  ['percent-encoded project id', (p) => (p.includes('/1/') ? p.replace('/1/', '/%31/') : null), false],
  ['project 2 itself', (p) => (p.includes('/1/') ? p.replace('/1/', '/2/') : null), false],
  ["project 2's token", (p) => `${p}?token=phc_two`, false],
  ['@current (the key names only project 1)', (p) => (p.includes('/1/') ? p.replace('/1/', '/@current/') : null), false],
  ['encoded @current', (p) => (p.includes('/1/') ? p.replace('/1/', '/%40current/') : null), false],
];

const routes = apiRouteTable();
const cases = routes.flatMap((route) =>
  route.methods.flatMap((method) =>
    tricks.flatMap(([trick, rewrite, must4xx]) => {
      const path = rewrite(fillTemplate(route.template, '1'));
      return path === null ? [] : [{ route: route.name, method, trick, path, must4xx }];
    }),
  ),
);

async function send(method: string, path: string) {
  // /flags and /decide are public: project 1's token (upstream's public one) may be sent by anyone.
  const body = method === 'GET' || method === 'DELETE' ? '' : '{"token":"phc_one","distinct_id":"u"}';
  const head = [`${method} ${path} HTTP/1.1`, 'Host: localhost', `Authorization: Bearer ${key}`, 'Connection: close'];
  if (body) head.push('Content-Type: application/json', `Content-Length: ${body.length}`);
  return rawExchange(sidecar.apiUrl, rawRequest(head, body), { timeoutMs: 10_000 });
}

describe('path tricks on every route', () => {
  it(`answers all ${cases.length} requests (routes × methods × tricks) without a 5xx, a hang or project 2's data`, async () => {
    expect(routes.length).toBeGreaterThanOrEqual(40);
    const bad: string[] = [];
    for (let i = 0; i < cases.length; i += 16) {
      await Promise.all(
        cases.slice(i, i + 16).map(async (c) => {
          const res = await send(c.method, c.path);
          const status = res.statuses[0] ?? 0;
          const what = `${c.method} ${c.path} (${c.route}, ${c.trick}) → ${status}`;
          if (!res.closed || res.statuses.length !== 1) bad.push(`${what}: no single answer and close`);
          else if (status >= 500 || status < 200) bad.push(`${what}: server error`);
          else if (c.must4xx && (status < 400 || status >= 500)) bad.push(`${what}: expected a 4xx`);
          if (res.text.includes(secretFlag)) bad.push(`${what}: leaked project 2's flags`);
        }),
      );
    }
    expect(bad).toEqual([]);
    expect(sidecar.logs.filter((l) => (l.level as number) >= 50)).toEqual([]);
    // Still serving, and project 1's own data still reaches its key.
    const ok = await get(`${sidecar.apiUrl}/api/projects/1/feature_flags/local_evaluation/?send_cohorts`, bearer(key));
    expect(ok.status).toBe(200);
    expect((await fetch(`${sidecar.opsUrl}/healthz`)).status).toBe(200);
  }, 120_000);
});
