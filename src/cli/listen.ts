/** Starting a server on a port a flag chose, with what went wrong said in the user's terms. */
import { once } from 'node:events';
import type { Server } from 'node:http';

/** Listens on host:port; resolves with the port bound (port 0: one the system chose). */
export async function listenOn(server: Server, port: number, host: string, flags: { port: string; host: string }): Promise<number> {
  server.listen(port, host);
  try {
    await once(server, 'listening');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new Error(`port ${port} on ${host} is taken by another process; choose another with ${flags.port}`);
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') throw new Error(`${host} is not an address of this machine; choose one with ${flags.host}`);
    if (code === 'EACCES') throw new Error(`port ${port} needs privileges this process lacks; choose one above 1023 with ${flags.port}`);
    throw error;
  }
  const address = server.address();
  return typeof address === 'object' && address ? address.port : port;
}
