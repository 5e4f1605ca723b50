/** `offsetlake serve`: the reader handler behind node:http. */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { ReaderHandler, ResponseBody } from './http.js';

export function readerServer(handler: ReaderHandler): Server {
  return createServer((request, response) => {
    const headers: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(request.headers)) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    // Request bodies are not part of the API; drain them so the connection can be reused.
    request.resume();
    handler({ method: request.method ?? 'GET', path: request.url ?? '/', headers }).then(
      async (answer) => {
        response.writeHead(answer.status, answer.headers);
        if (request.method === 'HEAD') response.end();
        else await send(response, answer.body);
      },
      (error: unknown) => {
        response.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
        response.end(JSON.stringify({ error: `internal error: ${(error as Error).message}` }));
      },
    );
  });
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
 */
async function send(response: ServerResponse, body: ResponseBody): Promise<void> {
  try {
    await writeBody(response, body);
  } catch (error) {
    response.destroy(error as Error);
  }
}
