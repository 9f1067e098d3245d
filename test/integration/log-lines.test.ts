/**
 * Log lines that answer "what is served, and why": a failed poll says whether anything is served (and quotes
 * upstream's error body, secrets removed), a 402 is not called a failure served from the last snapshot, "ready"
 * and "flags changed" are said once each when they happen, and offline mode never promises a poll.
 */
import { describe, expect, it } from 'vitest';
import { perTestServers, pollingEnv, startProjectOneUpstream, withFlag } from '../support/polling-env.js';
import { startTestSidecar, waitFor, type TestSidecar } from '../support/start-sidecar.js';

const held = perTestServers();
const messages = (s: TestSidecar) => s.logs.map((l) => l.msg);

describe('log lines', () => {
  it('a failed poll with nothing to serve says so, quoting upstream\'s error body without secrets', async () => {
    const upstream = (held.upstream = await startProjectOneUpstream());
    upstream.setMode({ kind: 'status', status: 500, body: '{"type":"server_error","code":"error","detail":"database on fire near phx_leakedkey12345","attr":null}' });
    const s = (held.sidecar = await startTestSidecar(pollingEnv(upstream)));
    await waitFor(() => s.logs.some((l) => l.outcome === 'failed'), 'a failed poll');
    const line = s.logs.find((l) => l.outcome === 'failed') as Record<string, unknown>;
    expect(line.msg).toBe('poll failed; nothing to serve yet (503 until a poll succeeds)');
    expect(line.cause).toBe('upstream answered 500: error: database on fire near [redacted key]');
    expect(messages(s)).not.toContain('poll failed; serving last good snapshot');
    expect(JSON.stringify(s.logs)).not.toContain('leakedkey');
  });

  it('ready once, flags changed on new definitions (project, ETag, count), nothing for a 304; a 402 is relayed, not "served from the last snapshot"', async () => {
    const upstream = (held.upstream = await startProjectOneUpstream());
    const s = (held.sidecar = await startTestSidecar(pollingEnv(upstream)));
    await waitFor(() => messages(s).includes('ready: every project has a snapshot'), 'ready');
    const first = s.logs.find((l) => l.msg === 'flags changed');
    expect(first).toMatchObject({ project: 1, etag: s.store.get(1)?.cohorts?.etag, flags: s.store.get(1)?.cohorts?.definitions.flags.length, source: 'upstream' });
    const polls = () => upstream?.requests.filter((r) => r.url.includes('local_evaluation')).length ?? 0;
    const seen = polls();
    await waitFor(() => polls() >= seen + 2, 'two more polls (304s)');
    expect(messages(s).filter((m) => m === 'flags changed')).toHaveLength(1);
    upstream.setDefinitions(1, withFlag('brand-new'));
    await waitFor(() => messages(s).filter((m) => m === 'flags changed').length === 2, 'a second change');
    expect(s.logs.filter((l) => l.msg === 'flags changed').at(-1)).toMatchObject({ flags: (first?.flags as number) + 1 });
    upstream.setMode({ kind: 'status', status: 402, body: '{"type":"quota_limited","detail":"You have exceeded your feature flag request quota","code":"payment_required"}' });
    await waitFor(() => s.logs.some((l) => l.outcome === 'quota_limited'), 'a 402 poll');
    const quota = s.logs.find((l) => l.outcome === 'quota_limited') as Record<string, unknown>;
    expect(quota.msg).toBe("upstream reports the project quota-limited (402); relaying upstream's 402 until a poll succeeds");
    expect(quota.cause).toBe('upstream answered 402: payment_required: You have exceeded your feature flag request quota (quota limited)');
    expect(messages(s).filter((m) => m === 'ready: every project has a snapshot')).toHaveLength(1);
  });

  it('offline: the stored snapshot is served, with no promise of a poll; ready at once', async () => {
    const s = (held.sidecar = await startTestSidecar({}));
    expect(messages(s)).toContain('serving stored snapshot (offline: never polled)');
    expect(messages(s)).not.toContain('serving stored snapshot until the first poll');
    expect(s.logs.find((l) => l.msg === 'ready: every project has a snapshot')).toMatchObject({ projects: [1], sources: { 1: 'bootstrap' } });
  });
});
