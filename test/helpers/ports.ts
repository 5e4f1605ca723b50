import { createServer, type AddressInfo } from 'node:net';

/** A loopback port nobody listens on (a service that is down): bound once, then closed. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise((done) => server.close(done));
  return port;
}
