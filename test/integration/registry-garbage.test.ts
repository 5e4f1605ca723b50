/**
 * A Schema Registry that answers garbage for one schema id, and one that cannot be reached,
 * seen by `run --once` as a user runs it. The registry stays the real Apicurio: a small
 * proxy in front of it corrupts the answer for one id (HTTP 200 with text that is not a
 * schema) until the test mends it. Expected records come from confluent-kafka's
 * read_committed reader; files are rebuilt and compared by checkTable.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { findTable } from '../../src/catalog/tables.js';
import { produce } from '../../src/kafka/produce.js';
import { partitionStatus } from '../../src/table-topic/status.js';
import { runCli } from '../helpers/cli.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';
import { readCommittedIndependently } from '../helpers/independent-kafka.js';
import { encodeWith, registerSchema, registryUrl } from '../helpers/registry.js';
import { closedPort } from '../helpers/ports.js';
import { checkTable, type Row } from '../helpers/verify.js';

/** A proxy to the real registry; an id in `garbled` gets its body there instead (HTTP 200), until the test deletes it. */
async function garblingProxy(): Promise<{ url: string; garbled: Map<number, string>; server: Server }> {
  const upstream = new URL(registryUrl());
  const garbled = new Map<number, string>();
  const server = createServer(async (request, response) => {
    const path = request.url!;
    const id = /\/schemas\/ids\/(\d+)/.exec(path)?.[1];
    const body = id === undefined ? undefined : garbled.get(Number(id));
    if (body !== undefined) {
      response.writeHead(200, { 'content-type': 'application/json' }).end(body);
      return;
    }
    const forwarded = await fetch(`${upstream.origin}${path}`, { headers: { accept: request.headers.accept ?? '*/*' } });
    response.writeHead(forwarded.status, { 'content-type': forwarded.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await forwarded.arrayBuffer()));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${upstream.pathname}`, garbled, server };
}

const byOffset = (rows: Row[]) => [...rows].sort((a, b) => Number(a._offset) - Number(b._offset));

describe('a Schema Registry that answers garbage or cannot be reached', () => {
  it('run --once exits 1 naming the partition and why while the Schema Registry cannot be reached (it exited 0 with lag left)', async () => {
    const engine = await testEngine('unreached');
    onTestFinished(() => engine.close());
    const topic = await newTopic(engine, 1, 'unreached');
    const table = await testTable(engine, topic, { file_window: '30m' }, 'avro');
    await produce(engine.kafka, topic, [{ value: Buffer.from([0, 0, 0, 0, 42, 2]) }, { value: Buffer.from([0, 0, 0, 0, 42, 4]) }]);
    const closed = await runCli(engine.config.databaseUrl, ['run', '--once'], { SCHEMA_REGISTRY_URL: `http://127.0.0.1:${await closedPort()}/apis/ccompat/v7` });
    expect(closed.code, closed.stderr).toBe(1);
    expect(closed.stderr).toMatch(new RegExp(`${table.name}/0 could not be indexed: Schema Registry http://127\\.0\\.0\\.1:\\d+/apis/ccompat/v7 cannot be reached: .*its records from offset 0 on are not indexed yet`));
    const [status] = await partitionStatus(engine, table.name);
    expect([status!.indexedEnd, status!.lag]).toEqual([0n, 2n]);
  });

  it('garbage for one id (not JSON, a schema that does not parse) becomes error rows naming the id and the answer after bounded tries; once the registry answers, later records decode and earlier files still rebuild', async () => {
    const engine = await testEngine('garbage');
    onTestFinished(() => engine.close());
    const proxy = await garblingProxy();
    onTestFinished(() => new Promise<void>((done) => proxy.server.close(() => done())));
    const topic = await newTopic(engine, 1, 'garbage');
    const table = await testTable(engine, topic, { file_window: '30m' }, 'avro');
    const good = await registerSchema(`${topic}-value`, JSON.stringify({ type: 'record', name: 'A', fields: [{ name: 'a', type: 'long' }] }), 'AVRO');
    const bad = await registerSchema(`${topic}-b-value`, JSON.stringify({ type: 'record', name: 'B', fields: [{ name: 'b', type: 'string' }] }), 'AVRO');
    const worse = await registerSchema(`${topic}-c-value`, JSON.stringify({ type: 'record', name: 'C', fields: [{ name: 'c', type: 'int' }] }), 'AVRO');
    const t0 = Date.UTC(2026, 11, 7, 10, 0, 0);
    const records = (from: number, schema: typeof good, value: (i: number) => unknown) =>
      Array.from({ length: 3 }, (_, i) => ({ value: encodeWith(schema, value(from + i)), timestamp: t0 + (from + i) * 1000 }));
    await produce(engine.kafka, topic, [...records(0, good, (i) => ({ a: i })), ...records(3, bad, (i) => ({ b: `b${i}` })), ...records(6, worse, (i) => ({ c: i }))]);

    // Garbage for an id (not JSON; a schema text that does not parse): bounded tries, then
    // error rows that name the id and the answer; the partition is done.
    const unparsable = '{"type": "record", "name": ';
    proxy.garbled.set(bad.id, '<html>502 Bad Gateway</html>');
    proxy.garbled.set(worse.id, JSON.stringify({ schema: unparsable }));
    const garbled = await runCli(engine.config.databaseUrl, ['run', '--once'], { SCHEMA_REGISTRY_URL: proxy.url });
    expect(garbled.code, garbled.stderr).toBe(0);
    const first = await checkTable(engine, await findTable(engine.catalog, table.name));
    const firstRows = byOffset([...first.rowsByFile.values()].flat());
    const [committed] = await readCommittedIndependently(engine.config.kafkaBrokers, [{ topic, partition: 0, start: 0n, end: 9n }]);
    expect(firstRows.map((r) => BigInt(r._offset as bigint))).toEqual(committed!.map((r) => r.offset));
    const notJson = `value: the Schema Registry's answer for schema id ${bad.id} is not a schema: HTTP 200 for /schemas/ids/${bad.id} is not JSON: "<html>502 Bad Gateway</html>" (4 tries)`;
    const notParsed = `value: schema ${worse.id} cannot be read as AVRO: the Schema Registry answered ${JSON.stringify(unparsable)}`;
    expect(firstRows.map((r) => [r._error, r.a === null || r.a === undefined ? null : Number(r.a)])).toEqual([
      [null, 0], [null, 1], [null, 2], [notJson, null], [notJson, null], [notJson, null], [notParsed, null], [notParsed, null], [notParsed, null],
    ]);
    // the error rows keep the record's bytes, as the independent reader got them
    for (const row of firstRows.slice(3)) expect(Buffer.from(row._value as Uint8Array)).toEqual(committed![Number(row._offset)]!.value);

    // The registry mends: later records of those ids decode; earlier files are unchanged and rebuild byte for byte.
    proxy.garbled.clear();
    await produce(engine.kafka, topic, [...records(9, bad, (i) => ({ b: `b${i}` })), ...records(12, worse, (i) => ({ c: i }))]);
    const mended = await runCli(engine.config.databaseUrl, ['run', '--once'], { SCHEMA_REGISTRY_URL: proxy.url });
    expect(mended.code, mended.stderr).toBe(0);
    const after = await checkTable(engine, await findTable(engine.catalog, table.name));
    const rows = byOffset([...after.rowsByFile.values()].flat());
    expect(rows.map((r) => [Number(r._offset), r._error, r.b ?? null, r.c ?? null])).toEqual([
      ...[0, 1, 2].map((i) => [i, null, null, null]),
      ...[3, 4, 5].map((i) => [i, notJson, null, null]),
      ...[6, 7, 8].map((i) => [i, notParsed, null, null]),
      ...[9, 10, 11].map((i) => [i, null, `b${i}`, null]),
      ...[12, 13, 14].map((i) => [i, null, null, i]),
    ]);
    const check = await runCli(engine.config.databaseUrl, ['check', table.name], { SCHEMA_REGISTRY_URL: proxy.url });
    expect(check.code, check.stderr).toBe(0);
  });
});
