/** `serve`: the HTTP read API for engines, until interrupted. */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { kafkaSource } from '../kafka/source.js';
import { readerHandler } from '../reader/http.js';
import { defaultMaxConnections, defaultMinRateBytesPerSecond, defaultWriteTimeoutMs, hostName, isLoopbackHost, readerServer } from '../reader/node-server.js';
import { defaultCacheBytes, defaultResponseWaitMs, heldRecordsShare, ReaderService } from '../reader/service.js';
import { defaultBuildThreads } from '../files/pool.js';
import { formatBytes, formatDuration, parseBytes, parseDuration } from '../table/settings.js';
import { withEngine } from './engine.js';
import { progress, UsageError } from './output.js';
import { buildThreadsFlag, parseCommandArgs, portFlag, secretValue, useLogFormat, wholeNumberFlag } from './args.js';
import { listenOn } from './listen.js';
import type { S3FaceOptions } from '../reader/s3.js';
import { bucketProblem } from '../reader/s3-bucket.js';
import { defaultS3Region } from '../reader/sigv4.js';
import { defaultSnapshotIntervalMs } from '../iceberg/snapshots.js';
import { IcebergCatalog } from '../iceberg/rest.js';
import { partitionStatus } from '../table-topic/status.js';
import { ConsoleSampler } from '../console/sampler.js';
import { ConsoleFace } from '../console/face.js';
import { watchDuckLakeSessions } from '../catalog/reader-login.js';

export async function serveCommand(args: string[]): Promise<number> {
  const { values } = parseCommandArgs('serve', args, {
    'database-url': { type: 'string' },
    'kafka-brokers': { type: 'string' },
    port: { type: 'string' },
    host: { type: 'string' },
    token: { type: 'string' },
    'no-auth': { type: 'boolean' },
    cache: { type: 'string' },
    'build-threads': { type: 'string' },
    'write-timeout': { type: 'string' },
    'min-rate': { type: 'string' },
    'max-connections': { type: 'string' },
    'public-url': { type: 'string' },
    'allow-host': { type: 'string', multiple: true },
    'tls-cert': { type: 'string' },
    'tls-key': { type: 'string' },
    'queue-timeout': { type: 'string' },
    's3-access-key-id': { type: 'string' },
    's3-secret-access-key': { type: 'string' },
    's3-bucket': { type: 'string' },
    's3-region': { type: 'string' },
    'iceberg-snapshot-interval': { type: 'string' },
    'log-format': { type: 'string' },
  }, false);
  useLogFormat(values['log-format']);
  const port = portFlag('--port', values.port, 8642);
  const token = secretValue('--token', values.token, 'OFFSETLAKE_TOKEN') ?? null;
  if (values['no-auth'] && values.token) throw new UsageError('--token and --no-auth contradict each other: give one');
  if (!values['no-auth'] && !token) throw new UsageError('serve needs a bearer token (--token or OFFSETLAKE_TOKEN); for local use only, --no-auth turns authentication off');
  const cacheBytes = values.cache ? parseBytes('--cache', values.cache) : defaultCacheBytes;
  const buildThreads = buildThreadsFlag(values['build-threads'], defaultBuildThreads, 'build on the serving thread');
  const writeTimeoutMs = values['write-timeout'] ? parseDuration('--write-timeout', values['write-timeout']) : defaultWriteTimeoutMs;
  const responseWaitMs = values['queue-timeout'] ? parseDuration('--queue-timeout', values['queue-timeout']) : defaultResponseWaitMs;
  const snapshotIntervalMs = values['iceberg-snapshot-interval'] ? parseDuration('--iceberg-snapshot-interval', values['iceberg-snapshot-interval']) : defaultSnapshotIntervalMs;
  const minRate = values['min-rate'] === undefined ? defaultMinRateBytesPerSecond : /^\s*0\s*$/.test(values['min-rate']) ? 0 : parseBytes('--min-rate', values['min-rate']);
  const maxConnections = wholeNumberFlag('max-connections', values['max-connections'], defaultMaxConnections);
  const host = values.host ?? '127.0.0.1';
  const publicUrl = values['public-url'] === undefined ? undefined : publicUrlFlag(values['public-url']);
  const tls = tlsFiles(values['tls-cert'], values['tls-key']);
  const scheme = tls ? 'https' : 'http';
  const allowHost = hostAllowList(values['allow-host'] ?? [], Boolean(values['no-auth']), host, publicUrl);
  const s3 = s3Face(values, Boolean(values['no-auth']));
  await withEngine({ databaseUrl: values['database-url'], kafkaBrokers: values['kafka-brokers'] }, async (engine) => {
    // A rebuild that retries a Fetch (a leader moved, a broker restarts) says so, as `run` does.
    engine.kafka.onRetry = progress;
    const service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { cacheBytes, responseWaitMs, buildThreads });
    // the console's history covers this process's life: sampled from the start, whether or not a page is open
    const sampler = new ConsoleSampler(() => partitionStatus(engine));
    sampler.start();
    // DuckLake reader logins can lift their own timeouts: serve holds them to the bounds.
    const watch = watchDuckLakeSessions(engine.catalog);
    const consoleFace = new ConsoleFace(service, sampler, { tokenRequired: !values['no-auth'] });
    const server = readerServer(readerHandler(service, { token: values['no-auth'] ? null : token, ...(s3 ? { s3 } : {}), catalog: new IcebergCatalog(service, { snapshotIntervalMs, ...(publicUrl ? { publicUrl } : {}) }, s3), console: consoleFace, lag: async () => (await sampler.next()).lags }), { writeTimeoutMs, minRateBytesPerSecond: minRate, maxConnections, ...(allowHost ? { allowHost } : {}), ...(tls ? { tls } : {}), onWriteTimeout: () => service.meter.count('writeTimeouts') });
    const bound = await listenOn(server, port, host, { port: '--port', host: '--host' });
    progress(`serving ${scheme}://${host}:${bound}/tables, the console ${scheme}://${host}:${bound}/console and the Iceberg catalog ${scheme}://${host}:${bound}/iceberg (snapshots at most every ${formatDuration(snapshotIntervalMs)}; cache ${formatBytes(cacheBytes)} (${Math.round(heldRecordsShare * 100)} % of it for records held between reads), ${buildThreads === 0 ? 'builds on the serving thread' : `${buildThreads} build thread${buildThreads === 1 ? '' : 's'}`}, write timeout ${formatDuration(writeTimeoutMs)}${minRate === 0 ? '' : ` at ${formatBytes(minRate)}/s at least`}, at most ${maxConnections} connections, queue timeout ${formatDuration(responseWaitMs)}, ${values['no-auth'] ? 'NO authentication, answering only for loopback names and its own' : 'bearer token required'}${publicUrl ? `, public URL ${publicUrl}` : ''})` +
      (s3 ? `, and S3 at endpoint ${scheme}://${host}:${bound} bucket ${s3.bucket}${s3.region === defaultS3Region ? '' : ` region ${s3.region}`} (path style, ${s3.credentials ? `signed with access key ${s3.credentials.accessKeyId}` : 'NO authentication'})` : '') + '; Ctrl-C stops');
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
      await sampler.stop();
      watch.stop();
      await service.publish();
      progress(`stopped; ${JSON.stringify(service.metrics)}`);
    }
  });
  return 0;
}

/**
 * The S3 face's settings: a key pair from the flags or OFFSETLAKE_S3_ACCESS_KEY_ID /
 * OFFSETLAKE_S3_SECRET_ACCESS_KEY, the bucket from --s3-bucket or OFFSETLAKE_S3_BUCKET
 * (default offsetlake). Without a key pair the face is off, unless authentication is.
 */
function s3Face(values: { 's3-access-key-id'?: string | undefined; 's3-secret-access-key'?: string | undefined; 's3-bucket'?: string | undefined; 's3-region'?: string | undefined }, noAuth: boolean): S3FaceOptions & { region: string } | undefined {
  const accessKeyId = values['s3-access-key-id'] ?? (process.env.OFFSETLAKE_S3_ACCESS_KEY_ID || undefined);
  const secretAccessKey = secretValue('--s3-secret-access-key', values['s3-secret-access-key'], 'OFFSETLAKE_S3_SECRET_ACCESS_KEY');
  const bucket = values['s3-bucket'] ?? (process.env.OFFSETLAKE_S3_BUCKET || 'offsetlake');
  const region = values['s3-region'] ?? (process.env.OFFSETLAKE_S3_REGION || defaultS3Region);
  if (!/^[a-z0-9-]{1,63}$/.test(region)) throw new UsageError(`--s3-region: "${region}" is not a region name (lowercase letters, digits and hyphens, such as us-east-1)`);
  const problem = bucketProblem(bucket);
  if (problem) throw new UsageError(`--s3-bucket: ${problem}`);
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throw new UsageError('the S3 face needs both --s3-access-key-id and --s3-secret-access-key (or OFFSETLAKE_S3_ACCESS_KEY_ID and OFFSETLAKE_S3_SECRET_ACCESS_KEY)');
  }
  if (accessKeyId !== undefined && secretAccessKey !== undefined) {
    if (noAuth) throw new UsageError('--no-auth and an S3 key pair contradict each other: give one');
    return { bucket, region, credentials: { accessKeyId, secretAccessKey } };
  }
  return noAuth ? { bucket, region, credentials: null } : undefined;
}

/** --public-url: how clients reach this server (a proxy in front, TLS terminated there): scheme, host and port only. */
function publicUrlFlag(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--public-url: "${text}" is not a URL; give the address clients reach serve at, such as https://lake.example.com`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || url.search || url.hash || (url.pathname !== '/' && url.pathname !== '')) {
    throw new UsageError(`--public-url: "${text}" must be http:// or https:// with a host and an optional port, no path, login or query (serve's paths start at the root)`);
  }
  return url.origin;
}

/**
 * The Host names served. With a token, any (a page in a browser cannot send the token);
 * without one (--no-auth), only loopback names, serve's own --host and --public-url and
 * the --allow-host names: a web page whose name an attacker rebinds to this machine
 * would otherwise read every table from a browser on it. A name given to --allow-host
 * applies with a token too.
 */
function hostAllowList(given: readonly string[], noAuth: boolean, host: string, publicUrl: string | undefined): ((name: string) => boolean) | undefined {
  const names = new Set(given.flatMap((list) => list.split(',')).map((name) => hostName(name)).filter((name) => name !== ''));
  if (names.size === 0 && !noAuth) return undefined;
  if (host !== '0.0.0.0' && host !== '::') names.add(hostName(host.includes(':') ? `[${host}]` : host));
  if (publicUrl) names.add(hostName(new URL(publicUrl).host));
  return (name) => names.has(name) || isLoopbackHost(name);
}

/** --tls-cert and --tls-key (PEM files): both or neither; read at start, so a wrong path stops serve with its reason. */
function tlsFiles(certPath: string | undefined, keyPath: string | undefined): { cert: Buffer; key: Buffer } | undefined {
  if (certPath === undefined && keyPath === undefined) return undefined;
  if (certPath === undefined || keyPath === undefined) throw new UsageError('HTTPS needs both --tls-cert (the certificate chain, PEM) and --tls-key (its private key, PEM)');
  const read = (flag: string, path: string) => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new UsageError(`${flag}: ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    }
  };
  return { cert: read('--tls-cert', certPath), key: read('--tls-key', keyPath) };
}
