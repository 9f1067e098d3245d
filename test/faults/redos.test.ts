/**
 * ReDoS (issue 15 item 1): a flag whose person-property filter is a catastrophically backtracking regex
 * (`^(a+)+$`) and a `POST /flags?v=2` whose subject is 'a'×40 + '!' would keep a backtracking engine busy for
 * hours. The sidecar runs as a real process (a blocked event loop in this test's own process could not even time
 * out): its /flags answers, and /healthz on the ops listener answers while such requests are in flight. The
 * `regex`, `not_regex` and cohort (`regex` inside a cohort) paths all go through the same engine.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childEnv } from '../support/child-env.js';
import { exampleDefinitions, exampleToken } from '../support/fixtures.js';
import { rootDir } from '../support/start-sidecar.js';

const evil = '^(a+)+$';

function redosDefinitions(): Record<string, unknown> {
  const definitions = exampleDefinitions() as { flags: Array<Record<string, unknown>>; cohorts: Record<string, unknown> };
  const flag = (id: number, key: string, properties: unknown[]) => ({
    id,
    team_id: 1,
    key,
    name: key,
    deleted: false,
    active: true,
    filters: { groups: [{ properties, rollout_percentage: 100 }], payloads: {} },
    ensure_experience_continuity: false,
    version: 1,
    evaluation_runtime: 'all',
  });
  definitions.flags.push(
    flag(101, 'redos-regex', [{ key: 'email', type: 'person', operator: 'regex', value: evil }]),
    flag(102, 'redos-not-regex', [{ key: 'email', type: 'person', operator: 'not_regex', value: evil }]),
    flag(103, 'redos-cohort', [{ key: 'id', type: 'cohort', value: 41 }]),
  );
  definitions.cohorts['41'] = { type: 'OR', values: [{ type: 'AND', values: [{ key: 'email', type: 'person', operator: 'regex', value: evil }] }] };
  return definitions;
}

let dir: string;
let child: ChildProcess;
let api: string;
let ops: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'flag-sidecar-redos-'));
  const snapshot = join(dir, 'snapshot.json');
  writeFileSync(
    snapshot,
    JSON.stringify({ flag_sidecar_snapshot: 1, projects: [{ project_id: 1, token: exampleToken, fetched_at: '2026-11-01T00:00:00.000Z', local_evaluation: redosDefinitions() }] }),
  );
  child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: rootDir,
    env: childEnv({ FLAG_SIDECAR_LISTEN: '127.0.0.1:0', FLAG_SIDECAR_OPS_LISTEN: '127.0.0.1:0', FLAG_SIDECAR_BOOTSTRAP_FILE: snapshot }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  const urls = await new Promise<{ api: string; ops: string }>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split('\n').find((l) => l.includes('"flag-sidecar listening"'));
      if (line) resolve(JSON.parse(line) as { api: string; ops: string });
    });
    child.once('exit', () => reject(new Error(`sidecar exited before listening: ${stdout}`)));
  });
  api = urls.api;
  ops = urls.ops;
}, 60_000);

afterAll(() => {
  // SIGKILL: a sidecar stuck in a regex would never run its SIGTERM handler.
  child?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function flags(email: string): Promise<{ status: number; flags: Record<string, { enabled: boolean }> }> {
  const response = await fetch(`${api}/flags?v=2`, {
    method: 'POST',
    body: JSON.stringify({ token: exampleToken, distinct_id: 'attacker', person_properties: { email }, flag_keys: ['redos-regex', 'redos-not-regex', 'redos-cohort'] }),
  });
  const body = (await response.json()) as { flags: Record<string, { enabled: boolean }> };
  return { status: response.status, flags: body.flags };
}

const enabled = (answer: { flags: Record<string, { enabled: boolean }> }) =>
  Object.fromEntries(Object.entries(answer.flags).map(([key, flag]) => [key, flag.enabled]));

describe('a catastrophically backtracking flag regex', () => {
  it('is decided in linear time: /flags answers, and /healthz answers while such requests are in flight', async () => {
    const attack = 'a'.repeat(40) + '!';
    // Many requests at once, and one with a subject of 200,000 characters: a backtracking engine takes hours on
    // each; a linear one, microseconds to milliseconds.
    const inFlight = [...Array.from({ length: 20 }, () => flags(attack)), flags('a'.repeat(200_000) + '!')];
    const health = await fetch(`${ops}/healthz`);
    expect(health.status).toBe(200);
    const answers = await Promise.all(inFlight);
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(enabled(answer)).toEqual({ 'redos-regex': false, 'redos-not-regex': true, 'redos-cohort': false });
    }
    expect((await fetch(`${ops}/healthz`)).status).toBe(200);
  }, 60_000);

  it('still matches what the pattern matches', async () => {
    expect(enabled(await flags('a'.repeat(40)))).toEqual({ 'redos-regex': true, 'redos-not-regex': false, 'redos-cohort': true });
  });
});
