/**
 * Free TCP ports for servers the tests start.
 */
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';

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

/** `count` different ports nothing listened on when picked (another process may take one before the caller does). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer().listen(0, '127.0.0.1'));
  await Promise.all(servers.map((server) => once(server, 'listening')));
  const ports = servers.map((server) => (server.address() as AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  return ports;
}
