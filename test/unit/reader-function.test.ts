/**
 * The reader function's URL is public. A stranger's request must cost nothing: no catalog
 * connection, no migration, no Kafka. Here the catalog and Kafka are ports nobody listens
 * on, so any I/O towards them would fail the request with a 500 or a thrown error instead
 * of the 401.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from '../helpers/ports.js';
import type { LambdaResponseStream } from '../../functions/streaming.js';

type Module = typeof import('../../functions/reader/index.js');
type Handler = Module['bufferedHandler'];

const event = (headers: Record<string, string>) => ({ rawPath: '/tables', headers, requestContext: { http: { method: 'GET' } } });
const saved = { ...process.env };
let handler: Handler;
let reader: Module;

beforeAll(async () => {
  const port = await closedPort();
  process.env.OFFSETLAKE_TOKEN = 'the-right-token';
  process.env.DATABASE_URL = `postgres://nobody:nothing@127.0.0.1:${port}/nowhere`;
  process.env.KAFKA_BROKERS = `127.0.0.1:${port}`;
  delete process.env.OFFSETLAKE_NO_AUTH;
  reader = await import('../../functions/reader/index.js');
  handler = reader.bufferedHandler;
});

afterAll(() => {
  process.env = saved;
});

describe('functions/reader in BUFFERED mode: the token is checked before any I/O', () => {
  it('no Authorization header: 401 with the Bearer challenge, although neither the catalog nor Kafka answers', async () => {
    const result = await handler(event({}));
    expect(result.statusCode).toBe(401);
    expect(result.headers['www-authenticate']).toBe('Bearer realm="offsetlake"');
    expect(JSON.parse(Buffer.from(result.body, 'base64').toString())).toEqual({ error: 'this server needs a bearer token: send "Authorization: Bearer <token>"' });
  });

  it('a malformed header and a wrong token: 401 each, still without reaching the catalog', async () => {
    expect((await handler(event({ authorization: 'Basic dXNlcjpwYXNz' }))).statusCode).toBe(401);
    const wrong = await handler(event({ Authorization: 'Bearer not-the-token' }));
    expect(wrong.statusCode).toBe(401);
    expect(JSON.parse(Buffer.from(wrong.body, 'base64').toString())).toEqual({ error: 'the bearer token is not valid for this server' });
  });

  it('the right token is what makes the function reach for the catalog (here: refused, since nothing listens)', async () => {
    await expect(handler(event({ authorization: 'Bearer the-right-token' }))).rejects.toThrow(/ECONNREFUSED/);
  });
});

/** A response stream that keeps what is written, as a Writable like the runtime's. */
function collecting(): { stream: LambdaResponseStream & Writable; bytes: () => Buffer; contentType: () => string | undefined } {
  const chunks: Buffer[] = [];
  let contentType: string | undefined;
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(Buffer.from(chunk));
      done();
    },
  }) as LambdaResponseStream & Writable;
  stream.setContentType = (type: string) => {
    contentType = type;
  };
  return { stream, bytes: () => Buffer.concat(chunks), contentType: () => contentType };
}

describe('functions/reader in RESPONSE_STREAM mode (the default), through the local awslambda of functions/streaming.ts', () => {
  it('the exported handler is the streaming one, marked with the runtime\'s symbol aws.lambda.runtime.handler.streaming = "response"', () => {
    expect(reader.readerInvokeMode()).toBe('RESPONSE_STREAM');
    expect(reader.handler).toBe(reader.streamingHandler);
    expect((reader.handler as unknown as Record<symbol, unknown>)[Symbol.for('aws.lambda.runtime.handler.streaming')]).toBe('response');
  });

  it('no token: the stream carries the 401 prelude as JSON, 8 NUL bytes, then the error body, and is ended; the content type is the function URL\'s prelude type', async () => {
    const { stream, bytes, contentType } = collecting();
    await reader.streamingHandler(event({}), stream);
    expect(stream.writableEnded).toBe(true);
    expect(contentType()).toBe('application/vnd.awslambda.http-integration-response');
    const all = bytes();
    const nul = all.indexOf(0);
    const prelude = JSON.parse(all.subarray(0, nul).toString('utf8')) as { statusCode: number; headers: Record<string, string> };
    expect(prelude.statusCode).toBe(401);
    expect(prelude.headers['www-authenticate']).toBe('Bearer realm="offsetlake"');
    expect(all.subarray(nul, nul + 8)).toEqual(Buffer.alloc(8));
    expect(JSON.parse(all.subarray(nul + 8).toString('utf8'))).toEqual({ error: 'this server needs a bearer token: send "Authorization: Bearer <token>"' });
  });

  it('the right token, nothing listening: the handler rejects before writing, so not even the prelude went out', async () => {
    const { stream, bytes } = collecting();
    await expect(reader.streamingHandler(event({ authorization: 'Bearer the-right-token' }), stream)).rejects.toThrow(/ECONNREFUSED/);
    expect(bytes().length).toBe(0);
  });

  it('OFFSETLAKE_READER_INVOKE_MODE accepts RESPONSE_STREAM and BUFFERED (unset: RESPONSE_STREAM) and names the choices otherwise', () => {
    expect([reader.readerInvokeMode(undefined), reader.readerInvokeMode('BUFFERED'), reader.readerInvokeMode('RESPONSE_STREAM')]).toEqual(['RESPONSE_STREAM', 'BUFFERED', 'RESPONSE_STREAM']);
    expect(() => reader.readerInvokeMode('STREAM')).toThrow('OFFSETLAKE_READER_INVOKE_MODE must be one of RESPONSE_STREAM, BUFFERED, got "STREAM"');
  });

  it('the body limits: 200 MB less 16 KiB for the prelude when streamed, 4 MiB (5.6 MB of base64, under 6 MB) when buffered', () => {
    expect(reader.lambdaMaxBody.RESPONSE_STREAM.bytes).toBe(200_000_000 - 16_384);
    expect(reader.lambdaMaxBody.BUFFERED.bytes).toBe(4 * 1024 * 1024);
    expect(Math.ceil(reader.lambdaMaxBody.BUFFERED.bytes / 3) * 4).toBeLessThan(6_000_000);
  });
});
