/**
 * A minimal Redis client for tests' housekeeping: one raw RESP command per connection.
 */
import { createConnection } from 'node:net';

/**
 * Send the command `args` to the Redis on 127.0.0.1:`port` and resolve with the raw reply text (enough for
 * tests' housekeeping). Rejects when the connection fails; times out (rejects) after 2 s without an answer.
 */
export function redisCall(port: number, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    const payload = `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;
    let reply = '';
    socket.setTimeout(2000, () => socket.destroy(new Error('redis call timed out')));
    socket.on('connect', () => socket.write(payload));
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8');
      if (reply.endsWith('\r\n')) socket.end();
    });
    socket.on('close', () => resolve(reply));
    socket.on('error', reject);
  });
}
