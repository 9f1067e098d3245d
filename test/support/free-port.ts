/** TCP ports of 127.0.0.1 free a moment ago (the OS's picks for port 0), for a child process that must be told them. */
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';

/** `count` different ports nothing listened on when picked (another process may take one before the caller does). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer().listen(0, '127.0.0.1'));
  await Promise.all(servers.map((server) => once(server, 'listening')));
  const ports = servers.map((server) => (server.address() as AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  return ports;
}
