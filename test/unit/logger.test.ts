import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';

describe('logger', () => {
  it('redacts credentials wherever they appear in a logged object', () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString());
        callback();
      },
    });
    const logger = createLogger('info', stream);
    logger.info(
      { headers: { authorization: 'Bearer phx_secret1' }, req: { headers: { authorization: 'Bearer phx_secret2' } }, key: 'phx_secret3', query: { personal_api_key: 'phx_secret4' }, config: { upstreamKey: 'phs_secret5' }, ofrep: { headers: { 'x-api-key': 'phx_secret6' } } },
      'request',
    );
    const text = lines.join('');
    expect(text).toContain('[redacted]');
    for (const n of [1, 2, 3, 4, 5, 6]) expect(text).not.toContain(`secret${n}`);
    expect(JSON.parse(text).level).toBe('info');
  });
});
