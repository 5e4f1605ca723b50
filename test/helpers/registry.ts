/** Registering schemas with the test Schema Registry and framing payloads in the Confluent wire format. */
import { avroType } from '../../src/schema/decode-avro.js';
import { protobufRoot } from '../../src/schema/decode-protobuf.js';
import type { RegistrySchema, SchemaType } from '../../src/schema/registry.js';
import { wireHeader } from '../../src/schema/wire.js';

export const registryUrl = (): string => process.env.SCHEMA_REGISTRY_URL!;

/** Registers `schema` under `subject` (at `url`, the test registry unless given); the registry-wide id and the schema as the decoder sees it. */
export async function registerSchema(subject: string, schema: string, type: SchemaType, url = registryUrl()): Promise<RegistrySchema> {
  const response = await fetch(`${url}/subjects/${encodeURIComponent(subject)}/versions`, {
    method: 'POST',
    headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
    body: JSON.stringify(type === 'AVRO' ? { schema } : { schema, schemaType: type }),
  });
  const body = (await response.json()) as { id?: number; message?: string };
  if (!response.ok || typeof body.id !== 'number') throw new Error(`registering ${subject} failed: HTTP ${response.status} ${JSON.stringify(body)}`);
  return { id: body.id, type, schema, references: [] };
}

/** Encodes `value` with a registered schema, framed in the wire format (Protobuf: the first message). */
export function encodeWith(schema: RegistrySchema, value: unknown): Buffer {
  if (schema.type === 'AVRO') return Buffer.concat([wireHeader(schema.id), avroType(schema).toBuffer(value)]);
  if (schema.type === 'JSON') return Buffer.concat([wireHeader(schema.id), Buffer.from(JSON.stringify(value))]);
  const { file } = protobufRoot(schema);
  const type = file.nestedArray.find((n) => 'fieldsArray' in n) as import('protobufjs').Type;
  return Buffer.concat([wireHeader(schema.id, [0]), type.encode(type.fromObject(value as Record<string, unknown>)).finish()]);
}
