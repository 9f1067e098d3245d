/**
 * A stand-in for the Kubernetes Service in front of the relay replicas: a TCP listener on 127.0.0.1:0 that sends
 * each new connection to the next backend in turn and, when that backend refuses it, to the one after (as
 * kube-proxy sends new connections only to the endpoints that remain once a dead pod's are removed). A connection
 * stays with the backend it reached and ends when that backend's side ends, as through a Service.
 */
import { connect, createServer, type Socket } from 'node:net';

/** A started stand-in Service. */
export interface FakeService {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  /** Stop listening and end every connection through it. */
  close(): Promise<void>;
}

/** Forward to `backends` (http://host:port URLs); throws when it cannot listen. */
export async function startFakeService(backends: readonly string[]): Promise<FakeService> {
  const targets = backends.map((b) => new URL(b));
  const sockets = new Set<Socket>();
  let next = 0;
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  const forward = (client: Socket, tries: number): void => {
    const target = targets[next++ % targets.length] as URL;
    const backend = connect(Number(target.port), target.hostname);
    track(backend);
    let connected = false;
    backend.once('error', () => {
      if (!connected && tries > 1 && !client.destroyed) forward(client, tries - 1);
      else client.destroy();
    });
    backend.once('connect', () => {
      connected = true;
      client.pipe(backend).pipe(client);
      client.resume();
      backend.once('close', () => client.destroy());
      client.once('close', () => backend.destroy());
    });
  };
  const server = createServer({ pauseOnConnect: true }, (client) => {
    track(client);
    client.on('error', () => undefined);
    forward(client, targets.length);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('fake service: no TCP address');
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
