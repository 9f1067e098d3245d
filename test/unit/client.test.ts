import { describe, expect, it } from 'vitest';
import { classifyFailure, upstreamHeaders } from '../../src/upstream/client.js';

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

describe('headers sent upstream', () => {
  it('never carries Origin or hop-by-hop headers, and always our User-Agent', () => {
    expect(
      upstreamHeaders('flag-sidecar/1.0.0', {
        Origin: 'https://app.example.com',
        Authorization: 'Bearer phx_a',
        Connection: 'close',
        Host: 'x',
        'User-Agent': 'curl/8',
        'If-None-Match': 'W/"a"',
      }),
    ).toEqual({ 'user-agent': 'flag-sidecar/1.0.0', authorization: 'Bearer phx_a', 'if-none-match': 'W/"a"' });
    expect(upstreamHeaders('flag-sidecar/1.0.0', undefined)).toEqual({ 'user-agent': 'flag-sidecar/1.0.0' });
  });
});
