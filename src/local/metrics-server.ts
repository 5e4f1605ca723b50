/** `run --metrics-port`: GET /metrics in Prometheus's text format; nothing else is served. */
import { createServer, type Server } from 'node:http';
import { expositionContentType, renderExposition, type MetricFamily } from '../common/exposition.js';

export function metricsServer(families: () => MetricFamily[]): Server {
  return createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(`no such path: ${path}; this port serves only /metrics\n`);
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end(`${request.method} is not allowed on /metrics; use GET\n`);
      return;
    }
    let text: string;
    try {
      text = renderExposition(families());
    } catch (error) {
      response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`the metrics could not be rendered: ${(error as Error).message}\n`);
      return;
    }
    response.writeHead(200, { 'content-type': expositionContentType });
    response.end(request.method === 'HEAD' ? undefined : text);
  });
}
