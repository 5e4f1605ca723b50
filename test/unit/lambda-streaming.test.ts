/**
 * functions/streaming.ts without the runtime's global, and writeBody (src/reader/node-server.ts)
 * on such a stream: what a client of the function URL gets when a body is produced to the
 * end, and when its production fails midway.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { awslambda, type LambdaResponseStream } from '../../functions/streaming.js';
import { writeBody } from '../../src/reader/node-server.js';

/** A Writable that keeps what it is given, slowly enough (highWaterMark 4) that writes wait for drain. */
function collecting(): { stream: LambdaResponseStream & Writable; bytes: () => Buffer } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    highWaterMark: 4,
    write(chunk: Buffer, _encoding, done) {
      chunks.push(Buffer.from(chunk));
      setImmediate(done);
    },
  }) as LambdaResponseStream & Writable;
  return { stream, bytes: () => Buffer.concat(chunks) };
}

const prelude = { statusCode: 206, headers: { 'content-length': '9', 'content-range': 'bytes 0-8/20' } };
const preludeBytes = Buffer.concat([Buffer.from(JSON.stringify(prelude)), Buffer.alloc(8)]);

describe('functions/streaming.ts: the local awslambda (no runtime global) and writeBody', () => {
  it('streamed pieces: the JSON prelude and 8 NUL bytes, then the pieces in order, and the stream ended', async () => {
    const { stream, bytes } = collecting();
    async function* pieces() {
      yield Buffer.from('abc');
      yield Buffer.from('defghi');
    }
    await writeBody(awslambda().HttpResponseStream.from(stream, prelude), pieces());
    expect(stream.writableEnded).toBe(true);
    expect(bytes()).toEqual(Buffer.concat([preludeBytes, Buffer.from('abcdefghi')]));
  });

  it('an empty body (HEAD) still sends the prelude: one empty write, then the end', async () => {
    const { stream, bytes } = collecting();
    await writeBody(awslambda().HttpResponseStream.from(stream, prelude), new Uint8Array(0));
    expect([stream.writableEnded, bytes()]).toEqual([true, preludeBytes]);
  });

  it('a production that fails after its first piece: writeBody rejects with its error, the stream is not ended, and the client got the prelude and that piece only (short of Content-Length 9)', async () => {
    const { stream, bytes } = collecting();
    async function* pieces() {
      yield Buffer.from('abc');
      throw new Error('row group 2 does not match its checksum');
    }
    await expect(writeBody(awslambda().HttpResponseStream.from(stream, prelude), pieces())).rejects.toThrow('row group 2 does not match its checksum');
    await new Promise((resolve) => setImmediate(resolve));
    expect(stream.writableEnded).toBe(false);
    expect(bytes()).toEqual(Buffer.concat([preludeBytes, Buffer.from('abc')]));
  });

  it('with the runtime\'s global awslambda defined, that one is used', () => {
    const runtime = { streamifyResponse: (h: unknown) => h, HttpResponseStream: { from: (s: unknown) => s } };
    (globalThis as { awslambda?: unknown }).awslambda = runtime;
    try {
      expect(awslambda()).toBe(runtime);
    } finally {
      delete (globalThis as { awslambda?: unknown }).awslambda;
    }
  });
});
