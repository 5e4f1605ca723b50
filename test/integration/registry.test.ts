import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';

const registry = process.env.SCHEMA_REGISTRY_URL!;

async function call(method: string, path: string, body?: unknown) {
  const response = await fetch(`${registry}${path}`, {
    method,
    headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('Schema Registry (Confluent API, real server)', () => {
  it('reads back a registered Avro schema by its id, and gives the same id for the same schema', async () => {
    const subject = `orders-${randomUUID()}-value`;
    const schema = { type: 'record', name: 'Order', fields: [{ name: 'id', type: 'long' }, { name: 'note', type: ['null', 'string'], default: null }] };
    const registered = await call('POST', `/subjects/${subject}/versions`, { schema: JSON.stringify(schema) });
    expect(registered.status).toBe(200);
    const id = registered.body.id as number;
    expect(Number.isInteger(id)).toBe(true);

    const byId = await call('GET', `/schemas/ids/${id}`);
    expect(byId.status).toBe(200);
    expect(JSON.parse(byId.body.schema as string)).toEqual(schema);

    const again = await call('POST', `/subjects/${subject}/versions`, { schema: JSON.stringify(schema) });
    expect(again.body.id).toBe(id);
  });

  it('answers an unknown id with 404', async () => {
    expect((await call('GET', '/schemas/ids/987654321')).status).toBe(404);
  });
});
