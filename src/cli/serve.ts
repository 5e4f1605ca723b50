/** `serve`: the HTTP read API for engines, until interrupted. */
import { once } from 'node:events';
import { kafkaSource } from '../kafka/source.js';
import { readerHandler } from '../reader/http.js';
import { readerServer } from '../reader/node-server.js';
import { defaultCacheBytes, ReaderService } from '../reader/service.js';
import { formatBytes, parseBytes } from '../catalog/settings.js';
import { withEngine } from './engine.js';
import { progress, UsageError } from './output.js';
import { parseCommandArgs } from './args.js';

export const serveUsage = `offsetlake serve [--port 8642] [--host 127.0.0.1] [--token T | --no-auth] [--cache 512MiB]`;

export async function serveCommand(args: string[]): Promise<number> {
  const { values } = parseCommandArgs('serve', args, {
    'database-url': { type: 'string' },
    'kafka-brokers': { type: 'string' },
    port: { type: 'string' },
    host: { type: 'string' },
    token: { type: 'string' },
    'no-auth': { type: 'boolean' },
    cache: { type: 'string' },
  }, false);
  const port = Number(values.port ?? 8642);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be a port number from 0 to 65535, got "${values.port}"`);
  const token = values.token ?? process.env.OFFSETLAKE_TOKEN ?? null;
  if (values['no-auth'] && values.token) throw new UsageError('--token and --no-auth contradict each other: give one');
  if (!values['no-auth'] && !token) throw new UsageError('serve needs a bearer token (--token or OFFSETLAKE_TOKEN); for local use only, --no-auth turns authentication off');
  const cacheBytes = values.cache ? parseBytes('--cache', values.cache) : defaultCacheBytes;
  const host = values.host ?? '127.0.0.1';
  await withEngine({ databaseUrl: values['database-url'], kafkaBrokers: values['kafka-brokers'] }, async (engine) => {
    const service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes });
    const server = readerServer(readerHandler(service, { token: values['no-auth'] ? null : token }));
    server.listen(port, host);
    try {
      await once(server, 'listening');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EADDRINUSE') throw new Error(`port ${port} on ${host} is taken by another process; choose another with --port`);
      if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') throw new Error(`${host} is not an address of this machine; choose one with --host`);
      if (code === 'EACCES') throw new Error(`port ${port} needs privileges this process lacks; choose one above 1023 with --port`);
      throw error;
    }
    const address = server.address();
    const bound = typeof address === 'object' && address ? address.port : port;
    progress(`serving http://${host}:${bound}/tables (cache ${formatBytes(cacheBytes)}, ${values['no-auth'] ? 'NO authentication' : 'bearer token required'}); Ctrl-C stops`);
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      await once(stop.signal, 'abort');
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      progress(`stopped; ${JSON.stringify(service.metrics)}`);
    }
  });
  return 0;
}
