// A TCP pass-through in front of a dependency (Temporal's frontend, the store) that a test or a
// bench can cut and restore: cut() resets every open connection and refuses new ones, restore()
// forwards again. The dependency itself keeps running for everyone else.
import net from 'node:net';

export interface TcpProxy {
  /** host:port clients connect to instead of the target. */
  address: string;
  port: number;
  /** Reset every open connection and refuse new ones until restore(). */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let open = true;
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = net.createServer((client) => {
    track(client);
    if (!open) {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(target.port, target.host);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    address: `127.0.0.1:${port}`,
    port,
    cut() {
      open = false;
      for (const socket of sockets) socket.resetAndDestroy();
    },
    restore() {
      open = true;
    },
    close() {
      open = false;
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** host:port of a `host:port` address or a `mongodb://host:port/...` URI. */
export function hostPort(address: string): { host: string; port: number } {
  const hostAndPort = address.includes('://') ? new URL(address).host : address;
  const [host, port] = hostAndPort.split(':');
  return { host: host === 'localhost' ? '127.0.0.1' : host!, port: Number(port) };
}
