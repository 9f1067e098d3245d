import { describe, expect, it } from 'vitest';
import { pickVictim, type Standing } from '../../src/http/connection-cap.js';

const held = (standing: Standing, seen: number) => ({ standing: () => standing, seen, name: `${standing}${seen}` });

describe('pickVictim', () => {
  it.each([
    ['the longest idle first, even when a waiting head is older', [held('head', 1), held('idle', 5), held('idle', 3), held('body', 0)], 'idle3'],
    ['with no idle one, the head waiting longest', [held('busy', 0), held('head', 7), held('head', 2), held('body', 1)], 'head2'],
    ['with neither, the oldest request whose body is still arriving', [held('busy', 0), held('body', 9), held('body', 4)], 'body4'],
  ])('%s', (_, connections, expected) => {
    expect(pickVictim(connections, undefined)?.name).toBe(expected);
  });

  it('never the arriving connection, and none when every other one is busy', () => {
    const arriving = held('head', 10);
    expect(pickVictim([held('busy', 1), held('busy', 2), arriving], arriving)).toBeNull();
    expect(pickVictim([held('body', 1), arriving], arriving)?.name).toBe('body1');
  });
});
