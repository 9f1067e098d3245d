import { describe, expect, it } from 'vitest';
import { classifyFailure } from '../../src/upstream/client.js';

const err = (code: string, name = 'Error') => Object.assign(new Error(`boom ${code}`), { code, name });

describe('upstream failure classification (by undici error code)', () => {
  it.each([
    ['UND_ERR_CONNECT_TIMEOUT', 'timeout'],
    ['UND_ERR_HEADERS_TIMEOUT', 'timeout'],
    ['UND_ERR_BODY_TIMEOUT', 'timeout'],
    ['ECONNREFUSED', 'connect'],
    ['ENOTFOUND', 'connect'],
    ['EAI_AGAIN', 'connect'],
    ['ECONNRESET', 'reset'],
    ['UND_ERR_SOCKET', 'reset'],
    ['UND_ERR_RES_EXCEEDED_MAX_SIZE', 'too_large'],
    ['UND_ERR_ABORTED', 'aborted'],
    ['ESOMETHINGELSE', 'other'],
  ])('%s → %s', (code, cause) => {
    expect(classifyFailure(err(code), false)).toMatchObject({ kind: 'failure', cause, code });
  });

  it('reads the code of a wrapped cause', () => {
    const wrapped = Object.assign(new Error('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    expect(classifyFailure(wrapped, false)).toMatchObject({ cause: 'connect', code: 'ECONNREFUSED' });
  });

  it('calls an abort by the overall deadline a timeout', () => {
    const abort = Object.assign(new Error('aborted'), { name: 'AbortError' });
    expect(classifyFailure(abort, false).cause).toBe('aborted');
    expect(classifyFailure(abort, true).cause).toBe('timeout');
  });
});
