/** The command line's pure parts: argument parsing and secret masking. */
import { describe, expect, it } from 'vitest';
import { maskSecret, parseCommand } from '../../src/cli.js';

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
