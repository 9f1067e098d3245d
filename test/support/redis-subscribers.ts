/**
 * Stand-ins for the rest of a fleet: `count` raw connections subscribed to a channel of the Redis on
 * 127.0.0.1:`port`, as every sidecar subscribes to its fleet's snapshot channel, so that a leader counts a fleet
 * larger than the sidecars a test or benchmark runs. Resolves once every one is subscribed.
 */
import { createConnection, type Socket } from 'node:net';

/** The subscribed connections; `close()` ends them. */
export interface Subscribers {
  close(): void;
}

/** Subscribe `count` connections to `channel`. Rejects when one cannot connect or subscribe (the others are closed). */
export async function subscribeMany(port: number, channel: string, count: number): Promise<Subscribers> {
  const sockets: Socket[] = [];
  const close = (): void => {
    for (const socket of sockets) socket.destroy();
  };
  const command = `*2\r\n$9\r\nSUBSCRIBE\r\n$${Buffer.byteLength(channel)}\r\n${channel}\r\n`;
  try {
    await Promise.all(
      Array.from({ length: count }, () => new Promise<void>((resolve, reject) => {
        const socket = createConnection({ host: '127.0.0.1', port });
        sockets.push(socket);
        socket.once('error', reject);
        socket.once('connect', () => socket.write(command));
        // The subscribe confirmation; later messages are read and dropped.
        socket.once('data', () => resolve());
        socket.on('data', () => undefined);
      })),
    );
  } catch (error) {
    close();
    throw error;
  }
  return { close };
}
