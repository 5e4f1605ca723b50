/**
 * The read API on a free loopback port in the test's own process, as `serve` runs it
 * (node:http through readerServer): what the tests of the faces and the catalogs on it
 * reach over real HTTP.
 */
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ReaderHandler } from '../../src/reader/http.js';
import { readerServer, type ReaderServerOptions } from '../../src/reader/node-server.js';

export interface ListeningReader {
  server: Server;
  port: number;
  /** `http://127.0.0.1:PORT`. */
  url: string;
  /** Ends every connection, then stops listening. */
  stop(): Promise<void>;
}

export async function listeningReader(handler: ReaderHandler, options: ReaderServerOptions = {}): Promise<ListeningReader> {
  const server = readerServer(handler, options).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    async stop() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
