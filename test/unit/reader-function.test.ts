/**
 * The reader function's URL is public. A stranger's request must cost nothing: no catalog
 * connection, no migration, no Kafka. Here the catalog and Kafka are ports nobody listens
 * on, so any I/O towards them would fail the request with a 500 or a thrown error instead
 * of the 401.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from '../helpers/ports.js';

type Handler = typeof import('../../functions/reader/index.js').handler;

const event = (headers: Record<string, string>) => ({ rawPath: '/tables', headers, requestContext: { http: { method: 'GET' } } });
const saved = { ...process.env };
let handler: Handler;

beforeAll(async () => {
  const port = await closedPort();
  process.env.OFFSETLAKE_TOKEN = 'the-right-token';
  process.env.DATABASE_URL = `postgres://nobody:nothing@127.0.0.1:${port}/nowhere`;
  process.env.KAFKA_BROKERS = `127.0.0.1:${port}`;
  delete process.env.OFFSETLAKE_NO_AUTH;
  ({ handler } = await import('../../functions/reader/index.js'));
});

afterAll(() => {
  process.env = saved;
});

describe('functions/reader: the token is checked before any I/O', () => {
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
