/** `offsetlake serve`: the reader handler behind node:http. */
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import type { ReaderHandler, ResponseBody } from './http.js';
import { log, logFormat, withLogFields } from '../common/log.js';

/**
 * A request's trace id: the trace-id of its W3C `traceparent`, else its `x-request-id`
 * (up to 128 letters, digits and ._:-), else a new random one. It is sent back as
 * `x-request-id` and is in every line logged while the request is answered.
 */
export function traceId(headers: Readonly<Record<string, string | undefined>>): string {
  const parent = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec((headers.traceparent ?? '').trim().toLowerCase());
  if (parent && !/^0+$/.test(parent[1]!)) return parent[1]!;
  const given = (headers['x-request-id'] ?? '').trim();
  if (/^[A-Za-z0-9._:-]{1,128}$/.test(given)) return given;
  return randomBytes(16).toString('hex');
}

/** One line per request answered (JSON logs; in human lines only the 5xx, which need looking at). */
function logRequest(method: string, url: string, status: number, bytes: number, startedAt: number, trace: string): void {
  if (logFormat() === 'human' && status < 500) return;
  const path = url.split('?')[0]!;
  const table = /^\/tables\/([a-z_][a-z0-9_]{0,62})\//.exec(path)?.[1];
  const ms = Math.round(performance.now() - startedAt);
  log(status >= 500 ? 'error' : 'info', `${method} ${path} ${status}, ${bytes} bytes in ${ms} ms`, { trace, method, path, status, bytes, ms, ...(table ? { table } : {}) });
}

export interface ReaderServerOptions {
  /**
   * The window of the write deadline (ms; default 30 s): a response whose client, in this
   * much time spent waiting for it, takes fewer than `minRateBytesPerSecond` × the window
   * (none at all, with a rate of 0) is cut off (the connection closed) and gives its share
   * of the response budget back. Only time spent waiting for the client counts, never
   * time spent rebuilding.
   */
  writeTimeoutMs?: number;
  /**
   * The least rate a client must take a response at while the response waits for it
   * (bytes a second; default 32 KiB/s; 0: any progress will do). Without it a reader that
   * trickles, never stalling, held its share of the response budget for as long as it liked.
   */
  minRateBytesPerSecond?: number;
  /** Told when a response is cut off by the write deadline (the service counts it). */
  onWriteTimeout?: () => void;
  /**
   * Which Host headers are served (the name, without the port); others get a 421. Unset:
   * any. `serve --no-auth` sets it to loopback names and its own addresses, so a web page
   * whose name was rebound to this machine (DNS rebinding) cannot read it from a browser.
   */
  allowHost?: (host: string) => boolean;
  /**
   * Connections open at most (default 1,000): one more is answered a 503 in our words and
   * closed at once, before any request of it is read.
   */
  maxConnections?: number;
  /** A certificate chain and its private key (PEM): the server speaks HTTPS (node:https) instead of HTTP. */
  tls?: { cert: Buffer; key: Buffer };
  /** node:http's limits on a request's arrival, set here rather than left to Node's defaults (ms). */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
}

export const defaultWriteTimeoutMs = 30_000;
/** Slower than this a client is cut off: a 100 MB file would hold its response for nearly an hour. */
export const defaultMinRateBytesPerSecond = 32 * 1024;
/** Well above what engines open (a few per reader thread), well below a process's usual 1,024 descriptors with Kafka's and Postgres's. */
export const defaultMaxConnections = 1_000;
/** Headers are a few hundred bytes: 10 s is generous even on a bad link, and bounds idle half-open requests. */
export const defaultHeadersTimeoutMs = 10_000;
/** Requests have no body in this API, so all of one arrives with its headers. */
export const defaultRequestTimeoutMs = 15_000;
/** Engines send their next range at once; an idle connection need not be kept longer. */
export const defaultKeepAliveTimeoutMs = 5_000;

/**
 * The largest write handed to the socket at once: drain then means this much reached the
 * client, so a slow reader still shows progress (it must take this much within the write
 * deadline: 512 KiB in 30 s is 17 KiB/s). Each write is a turn of the event loop: 64 KiB
 * slices made a full scan's 70 MiB of chunks ~1,100 writes, and 512 KiB ones answered it
 * 8–11 % sooner (docs/measurements.md, Cost).
 */
const writeSliceBytes = 512 * 1024;

export function readerServer(handler: ReaderHandler, options: ReaderServerOptions = {}): Server {
  const deadline = { windowMs: options.writeTimeoutMs ?? defaultWriteTimeoutMs, minRate: options.minRateBytesPerSecond ?? defaultMinRateBytesPerSecond };
  const listener: RequestListener = (request, response) => {
    if (refusedConnections.has(request.socket)) return void response.destroy();
    const startedAt = performance.now();
    const headers: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(request.headers)) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    const trace = traceId(headers);
    response.setHeader('x-request-id', trace);
    let sent = 0;
    const write = response.write.bind(response);
    response.write = ((chunk: Uint8Array, ...rest: never[]) => {
      sent += chunk.byteLength;
      return write(chunk, ...rest);
    }) as typeof response.write;
    response.once('close', () => logRequest(request.method ?? 'GET', request.url ?? '/', response.statusCode, sent, startedAt, trace));
    // Work queued for a client that has gone (it waits for budget, or is being rebuilt) is dropped.
    const gone = new AbortController();
    response.once('close', () => {
      if (!response.writableFinished) gone.abort();
    });
    const host = hostName(request.headers.host);
    if (options.allowHost && !options.allowHost(host)) {
      response.writeHead(421, { 'content-type': 'application/json; charset=utf-8', connection: 'close' });
      response.end(JSON.stringify({ error: `this server does not answer for the host "${host.slice(0, 100)}": without authentication it answers only for its own names and loopback ones (give serve --allow-host to add a name)` }) + '\n');
      return;
    }
    withLogFields({ trace }, () => handler({ method: request.method ?? 'GET', path: request.url ?? '/', headers, signal: gone.signal, ...reached(request) })).then(
      async (answer) => {
        if (response.destroyed) return void drop(answer.body);
        const closing = closeAfter(request, answer.status);
        response.writeHead(answer.status, closing ? { ...answer.headers, connection: 'close' } : answer.headers);
        if (request.method === 'HEAD' || answer.status === 304) response.end();
        else await send(response, answer.body, deadline, options.onWriteTimeout);
        if (!closing) request.resume(); // a zero-length body, or none: the connection is reused
      },
      (error: unknown) => {
        if (response.destroyed) return;
        response.writeHead(500, { 'content-type': 'application/json; charset=utf-8', connection: 'close' });
        response.end(JSON.stringify({ error: `internal error: ${(error as Error).message}` }));
      },
    );
  };
  const server: Server = options.tls ? createTlsServer({ cert: options.tls.cert, key: options.tls.key }, listener) : createServer(listener);
  // Over TLS the answer is written once the handshake is done, so the client can read it.
  capConnections(server, options.maxConnections ?? defaultMaxConnections, options.tls ? 'secureConnection' : 'connection');
  server.headersTimeout = options.headersTimeoutMs ?? defaultHeadersTimeoutMs;
  server.requestTimeout = options.requestTimeoutMs ?? defaultRequestTimeoutMs;
  server.keepAliveTimeout = options.keepAliveTimeoutMs ?? defaultKeepAliveTimeoutMs;
  return server;
}

/** Sockets over the connection cap: answered already, any request they send is ignored. */
const refusedConnections = new WeakSet<Socket>();

/**
 * Answers a connection over the cap a 503 (in our words, written before it sends anything)
 * and closes it; it never reaches a request handler. Runs before node:http's own listener.
 */
function capConnections(server: Server, max: number, event: 'connection' | 'secureConnection'): void {
  let open = 0;
  server.prependListener(event, (socket: Socket) => {
    if (open >= max) {
      refusedConnections.add(socket);
      const body = JSON.stringify({ error: `the server is busy: it has ${open} connections open, its most (serve --max-connections); try again later, or reuse a connection` }) + '\n';
      socket.on('error', () => {});
      socket.end(`HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nretry-after: 1\r\nconnection: close\r\n\r\n${body}`);
      socket.destroySoon();
      return;
    }
    open += 1;
    socket.once('close', () => (open -= 1));
  });
}

/** The name a Host header gives, without its port, in lowercase; IPv6 without brackets. */
export function hostName(header: string | undefined): string {
  const host = (header ?? '').trim().toLowerCase();
  const bracketed = /^\[([^\]]*)\](?::\d*)?$/.exec(host);
  if (bracketed) return bracketed[1]!;
  return host.replace(/:\d*$/, '').replace(/\.$/, '');
}

/** Loopback names and addresses: localhost, 127.0.0.0/8, ::1. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** The URL the connection reached: this socket's own address and port (not the Host header, which the client writes). */
function reached(request: IncomingMessage): { reachedAt?: string } {
  const { localAddress, localPort } = request.socket;
  if (!localAddress || !localPort) return {};
  const address = localAddress.startsWith('::ffff:') && localAddress.includes('.') ? localAddress.slice('::ffff:'.length) : localAddress;
  const scheme = (request.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
  return { reachedAt: `${scheme}://${address.includes(':') ? `[${address}]` : address}:${localPort}` };
}

/**
 * Whether the connection closes after this answer. Request bodies are not part of the API:
 * one is never read (draining it kept a refused client's upload flowing at full speed,
 * 18.5 GB in 40 s after a 401), so a request that announces one ends its connection, and
 * so does every error status, whose client may be a stranger.
 */
function closeAfter(request: IncomingMessage, status: number): boolean {
  if (status >= 400) return true;
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** A body that will not be sent gives back what it holds (its budget is released when it ends). */
function drop(body: ResponseBody): void {
  if (!(body instanceof Uint8Array)) void body[Symbol.asyncIterator]().return?.();
}

/** Where a body is written: a node:http response, or a Lambda function's response stream. */
export interface BodySink {
  write(chunk: Uint8Array): boolean;
  end(): unknown;
  once(event: 'drain' | 'close', listener: () => void): unknown;
  removeListener(event: 'drain' | 'close', listener: () => void): unknown;
  readonly destroyed?: boolean;
}

/**
 * Writes a body as it is produced, waiting for the sink to drain, so a streamed file
 * holds only the pieces in flight, and ends the sink. Bytes are always given to `write`
 * (never to `end`), since a Lambda response stream sends its status and headers on the
 * first write; an empty body is one empty write. A sink that goes away (the client left)
 * stops the production. Rejects, without ending the sink, when the production fails:
 * the caller must cut the response off short, never end it as if complete.
 */
export async function writeBody(sink: BodySink, body: ResponseBody): Promise<void> {
  const pieces = body instanceof Uint8Array ? [body] : body;
  for await (const piece of pieces) {
    if (sink.destroyed) return;
    if (!sink.write(piece)) await drained(sink);
  }
  if (!sink.destroyed) sink.end();
}

/** Until the sink drains or closes; the other listener is removed, so a long stream does not pile them up. */
function drained(sink: BodySink): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      sink.removeListener('drain', done);
      sink.removeListener('close', done);
      resolve();
    };
    sink.once('drain', done);
    sink.once('close', done);
  });
}

/**
 * Sends a body on a node:http response. A stream that fails midway cuts the connection
 * short of its Content-Length: the engine sees a failed read, never wrong bytes.
 *
 * The write deadline runs only while the response waits for its client (a write the
 * socket did not take at once, or the end not yet flushed), in windows of `windowMs` of
 * such waiting: a window in which the client took fewer than `minRate` bytes a second
 * (none, with a rate of 0) cuts the response off. A client that stops reading, or reads a
 * trickle, would otherwise hold the response's budget for as long as it keeps the
 * connection open.
 */
async function send(response: ServerResponse, body: ResponseBody, deadline: { windowMs: number; minRate: number }, onWriteTimeout?: () => void): Promise<void> {
  const socket = response.socket;
  const least = Math.max(1, Math.ceil((deadline.minRate * deadline.windowMs) / 1000));
  let timer: NodeJS.Timeout | undefined;
  // the window: time spent waiting and bytes the client took meanwhile, summed over the waits in it
  let waitedMs = 0;
  let taken = 0;
  let waitStarted = 0;
  let takenAtStart = 0;
  const check = () => {
    if (waitedMs < deadline.windowMs) return;
    if (taken < least) {
      onWriteTimeout?.();
      response.destroy(new Error(deadline.minRate === 0 ? `the client took no bytes for ${deadline.windowMs} ms` : `the client took ${taken} bytes in ${deadline.windowMs} ms, under the least rate of ${deadline.minRate} bytes a second`));
      return;
    }
    waitedMs = 0;
    taken = 0;
  };
  const pause = () => {
    if (timer === undefined) return;
    clearTimeout(timer);
    timer = undefined;
    waitedMs += performance.now() - waitStarted;
    taken += bytesTaken(socket) - takenAtStart;
  };
  const wait = () => {
    if (timer !== undefined) return;
    waitStarted = performance.now();
    takenAtStart = bytesTaken(socket);
    timer = setTimeout(() => {
      pause();
      check();
      if (!response.destroyed && !response.writableFinished) wait();
    }, Math.max(1, deadline.windowMs - waitedMs));
  };
  const progressed = () => {
    pause();
    check();
  };
  const finished = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  response.on('drain', progressed);
  response.once('finish', finished);
  response.once('close', finished);
  const sink: BodySink = {
    write: (chunk) => {
      const accepted = response.write(chunk);
      if (!accepted) wait();
      return accepted;
    },
    end: () => {
      wait();
      return response.end();
    },
    once: (event, listener) => response.once(event, listener),
    removeListener: (event, listener) => response.removeListener(event, listener),
    get destroyed() {
      return response.destroyed;
    },
  };
  try {
    await writeBody(sink, sliced(body));
  } catch (error) {
    response.destroy(error as Error);
  } finally {
    response.removeListener('drain', progressed);
  }
}

/**
 * Bytes of the socket the kernel took (and so, past its buffers, the client): what Node
 * handed it less what still waits in libuv's queue. Node counts a write as pending until
 * all of it is taken, so counting whole writes would see a 512 KiB slice move only when
 * it is done, too coarse for a rate. `_bytesDispatched` and the handle's `writeQueueSize`
 * are Node's own (net.Socket's bytesWritten and bufferSize use them); without them, whole writes.
 */
function bytesTaken(socket: Socket | null): number {
  if (!socket) return 0;
  const internals = socket as Socket & { _bytesDispatched?: number; _handle?: { writeQueueSize?: number } | null };
  const queued = internals._handle?.writeQueueSize;
  if (typeof internals._bytesDispatched === 'number' && typeof queued === 'number') return internals._bytesDispatched - queued;
  return socket.bytesWritten - socket.writableLength;
}

async function* sliced(body: ResponseBody): AsyncGenerator<Uint8Array> {
  const pieces = body instanceof Uint8Array ? [body] : body;
  for await (const piece of pieces) {
    if (piece.byteLength <= writeSliceBytes) yield piece;
    else for (let at = 0; at < piece.byteLength; at += writeSliceBytes) yield piece.subarray(at, at + writeSliceBytes);
  }
}
