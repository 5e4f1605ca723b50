/** `offsetlake serve`: the reader handler behind node:http. */
import { createServer, type Server, type ServerResponse } from 'node:http';
import { once } from 'node:events';
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

/**
 * Sends a body as it is produced, waiting for the socket to drain, so a streamed file
 * holds only the pieces in flight. A stream that fails midway cuts the connection short
 * of its Content-Length: the engine sees a failed read, never wrong bytes. A client that
 * goes away stops the production.
 */
async function send(response: ServerResponse, body: ResponseBody): Promise<void> {
  if (body instanceof Uint8Array) {
    response.end(body);
    return;
  }
  try {
    for await (const piece of body) {
      if (response.destroyed) return;
      if (!response.write(piece)) {
        // Whichever comes first; the other's listeners go with the abort (a long stream
        // waits thousands of times, and would otherwise leave a pair of listeners each time).
        const settled = new AbortController();
        try {
          await Promise.race([once(response, 'drain', { signal: settled.signal }), once(response, 'close', { signal: settled.signal })]);
        } finally {
          settled.abort();
        }
      }
    }
    response.end();
  } catch (error) {
    response.destroy(error as Error);
  }
}
