/** `offsetlake serve`: the reader handler behind node:http. */
import { createServer, type Server } from 'node:http';
import type { ReaderHandler } from './http.js';

export function readerServer(handler: ReaderHandler): Server {
  return createServer((request, response) => {
    const headers: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(request.headers)) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    // Request bodies are not part of the API; drain them so the connection can be reused.
    request.resume();
    handler({ method: request.method ?? 'GET', path: request.url ?? '/', headers }).then(
      (answer) => {
        response.writeHead(answer.status, answer.headers);
        response.end(request.method === 'HEAD' ? undefined : answer.body);
      },
      (error: unknown) => {
        response.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
        response.end(JSON.stringify({ error: `internal error: ${(error as Error).message}` }));
      },
    );
  });
}
