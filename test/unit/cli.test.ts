/** The command line's parts: argument parsing, secret masking, the snapshot dir check. */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCommand, snapshotDirProblem } from '../../src/cli.js';
import { maskSecret } from '../../src/config/describe.js';
import { tempDir } from '../support/temp-dir.js';

describe('parseCommand', () => {
  it.each([
    [[], { kind: 'serve' }],
    [['serve'], { kind: 'serve' }],
    [['--help'], { kind: 'help' }],
    [['-h'], { kind: 'help' }],
    [['check-config', '--help'], { kind: 'help' }],
    [['--version'], { kind: 'version' }],
    [['-v'], { kind: 'version' }],
    [['check-config'], { kind: 'check-config' }],
    [['snapshot', 'pull', '--out', 'a.json'], { kind: 'snapshot-pull', out: 'a.json' }],
    [['snapshot', 'pull', '-o', 'a.json'], { kind: 'snapshot-pull', out: 'a.json' }],
    [['snapshot', 'pull', '--out=/tmp/b.json'], { kind: 'snapshot-pull', out: '/tmp/b.json' }],
    [['snapshot', 'pull'], { kind: 'usage-error', message: 'snapshot pull: --out FILE is required' }],
    [['snapshot', 'pull', '--out'], { kind: 'usage-error', message: 'snapshot pull: --out FILE is required' }],
    [['snapshot', 'pull', '--out', 'a', '--force'], { kind: 'usage-error', message: 'unexpected argument "--force"' }],
    [['snapshot'], { kind: 'usage-error', message: 'snapshot: say "pull"' }],
    [['snapshot', 'push'], { kind: 'usage-error', message: 'snapshot: unknown subcommand "push"' }],
    [['serve', 'now'], { kind: 'usage-error', message: 'unexpected argument "now"' }],
    [['check-config', 'x'], { kind: 'usage-error', message: 'unexpected argument "x"' }],
    [['run'], { kind: 'usage-error', message: 'unknown command "run"' }],
  ])('%j', (args, expected) => expect(parseCommand(args)).toEqual(expected));
});

describe('maskSecret', () => {
  it('keeps the kind prefix and the length, never the rest', () => {
    expect(maskSecret('phx_abcdefghijklmnop')).toBe('phx_… (20 characters, masked)');
    expect(maskSecret('phx_abcdefghijklmnop')).not.toContain('abc');
  });
});

describe('snapshotDirProblem (check-config)', () => {
  it('writes and removes a file in a writable dir, or in the nearest existing parent of one not created yet', async () => {
    const dir = tempDir('snapdir-');
    expect(await snapshotDirProblem(dir)).toBeNull();
    expect(await snapshotDirProblem(join(dir, 'later', 'deeper'))).toBeNull();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses a dir that cannot be written even though its permission bits (or root) would allow it', async () => {
    // /proc is a directory no file can be created in, for root too; access(W_OK) says it is writable.
    expect(await snapshotDirProblem('/proc')).toMatch(/^\/proc is not writable \(/);
  });

  it('refuses a file', async () => {
    const file = join(tempDir('snapdir-'), 'f');
    writeFileSync(file, '');
    expect(await snapshotDirProblem(file)).toBe(`${file} is not a directory`);
  });
});
