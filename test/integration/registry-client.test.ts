import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RegistryUnavailableError, schemaRegistry, type RegistrySchema } from '../../src/schema/registry.js';
import { registerSchema } from '../helpers/registry.js';

/** A loopback server in front of nothing: it answers like a registry that wants basic auth. */
let requests: { url: string; authorization: string | undefined }[] = [];
let server: ReturnType<typeof createServer>;
let base: string;
beforeAll(async () => {
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    requests.push({ url: request.url!, authorization: request.headers.authorization });
    if (request.headers.authorization !== `Basic ${Buffer.from('reader:s3cret:x').toString('base64')}`) {
      response.writeHead(401).end('{"error_code":401}');
    } else if (request.url === '/apis/ccompat/v7/schemas/ids/7') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ schema: '"string"' }));
    } else if (request.url === '/apis/ccompat/v7/schemas/ids/8') {
      response.writeHead(500).end();
    } else if (request.url === '/apis/ccompat/v7/schemas/ids/10') {
      response.writeHead(200).end('<html>oops</html>');
    } else if (request.url === '/apis/ccompat/v7/schemas/ids/11') {
      response.writeHead(200).end('[1, 2]');
    } else if (request.url === '/apis/ccompat/v7/schemas/ids/12') {
      response.writeHead(200).end(JSON.stringify({ schema: '"string"', references: 'none' }));
    } else if (request.url === '/apis/ccompat/v7/schemas/ids/13') {
      response.writeHead(200).end(JSON.stringify({ schema: '"string"', schemaType: 'XML' }));
    } else {
      response.writeHead(404).end('{"error_code":40403}');
    }
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  base = `127.0.0.1:${(server.address() as AddressInfo).port}/apis/ccompat/v7`;
});
afterAll(async () => {
  await new Promise((done) => server.close(done));
});

describe('Schema Registry client', () => {
  it('sends basic auth from the URL, caches a schema by id, answers null for an unknown id', async () => {
    requests = [];
    const registry = schemaRegistry(`http://reader:${encodeURIComponent('s3cret:x')}@${base}`, { backoffMs: [] });
    expect(registry.url).toBe(`http://${base}`);
    expect(await registry.schemaById(7)).toEqual({ id: 7, type: 'AVRO', schema: '"string"', references: [] });
    expect(await registry.schemaById(7)).toEqual({ id: 7, type: 'AVRO', schema: '"string"', references: [] });
    expect(await registry.schemaById(9)).toBeNull();
    expect(requests.map((r) => r.url)).toEqual(['/apis/ccompat/v7/schemas/ids/7', '/apis/ccompat/v7/schemas/ids/9']);
  });

  it('takes credentials from SCHEMA_REGISTRY_USER / SCHEMA_REGISTRY_PASSWORD', async () => {
    const registry = schemaRegistry(`http://${base}`, { backoffMs: [] }, { SCHEMA_REGISTRY_USER: 'reader', SCHEMA_REGISTRY_PASSWORD: 's3cret:x' });
    expect(((await registry.schemaById(7)) as RegistrySchema).schema).toBe('"string"');
  });

  it('a refused login or a server error is "cannot be reached", after the backoff tries', async () => {
    requests = [];
    const wrong = schemaRegistry(`http://reader:nope@${base}`, { backoffMs: [5, 5] });
    await expect(wrong.schemaById(7)).rejects.toThrow(new RegistryUnavailableError(`http://${base}`, 'HTTP 401 for /schemas/ids/7 (3 tries)'));
    expect(requests).toHaveLength(3);
    const failing = schemaRegistry(`http://reader:${encodeURIComponent('s3cret:x')}@${base}`, { backoffMs: [5] });
    await expect(failing.schemaById(8)).rejects.toBeInstanceOf(RegistryUnavailableError);
  });

  it('an HTTP 200 that is not a schema is tried again the backoff\'s tries, then an unreadable answer naming the id and what came back (not an outage)', async () => {
    requests = [];
    const registry = schemaRegistry(`http://reader:${encodeURIComponent('s3cret:x')}@${base}`, { backoffMs: [5, 5] });
    expect(await registry.schemaById(10)).toEqual({ id: 10, unreadable: 'the Schema Registry\'s answer for schema id 10 is not a schema: HTTP 200 for /schemas/ids/10 is not JSON: "<html>oops</html>" (3 tries)' });
    expect(requests).toHaveLength(3);
    expect(await registry.schemaById(10)).toMatchObject({ id: 10 }); // believed for a while: not asked again at once
    expect(requests).toHaveLength(3);
    expect(await registry.schemaById(11)).toMatchObject({ unreadable: expect.stringContaining('is not a JSON object: "[1, 2]"') });
    expect(await registry.schemaById(12)).toMatchObject({ unreadable: expect.stringContaining('has references that are not a list of name, subject and version') });
    expect(await registry.schemaById(13)).toMatchObject({ unreadable: expect.stringContaining('names no schema type this client knows') });
  });

  it('reads the real registry: an Avro schema by id, and a Protobuf one with its type', async () => {
    const registry = schemaRegistry(process.env.SCHEMA_REGISTRY_URL!);
    const subject = `client-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const proto = await registerSchema(`${subject}-value`, 'syntax = "proto3";\nmessage M { int32 a = 1; }\n', 'PROTOBUF');
    const read = (await registry.schemaById(proto.id)) as RegistrySchema;
    expect(read?.type).toBe('PROTOBUF');
    expect(read?.schema).toContain('message M');
  });
});
