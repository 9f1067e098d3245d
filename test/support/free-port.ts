/**
 * Free TCP ports for servers the tests start.
 */
import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago (the OS picked it for a listener that was then closed);
 * another process may take it before the caller does, so callers that can retry should. Rejects when no
 * listener can be opened.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
