/**
 * `offsetlake topic create` and `offsetlake produce`, run as a user types them (child
 * processes against the real stack). What they wrote is read back with clients we did not
 * write: confluent-kafka (read_committed) for the records, fastavro for the Avro wire format.
 */
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigResourceTypes } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/runtime/engine.js';
import { highWatermarks } from '../../src/kafka/offsets.js';
import { topicPartitions } from '../../src/kafka/topics.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';
import { readCommittedIndependently, type IndependentRecord } from '../helpers/independent-kafka.js';

let engine: Engine;
let work: string;
beforeAll(async () => {
  engine = await testEngine('cliproduce');
  work = mkdtempSync(join(tmpdir(), 'offsetlake-cli-produce-'));
});
afterAll(async () => {
  await engine.close();
  rmSync(work, { recursive: true, force: true });
});

interface Run {
  stdout: string;
  stderr: string;
  code: number;
}

/** The CLI as a user runs it, with `stdin` piped in (or nothing, closed at once). */
function offsetlake(args: string[], stdin = ''): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/offsetlake.js', ...args], { env: { ...process.env, DATABASE_URL: engine.config.databaseUrl } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, code: code ?? -1 });
    });
    child.stdin.end(stdin);
  });
}

const lines = (...objects: unknown[]) => objects.map((o) => (typeof o === 'string' ? o : JSON.stringify(o))).join('\n') + '\n';
const file = (name: string, text: string) => {
  const path = join(work, name);
  writeFileSync(path, text);
  return path;
};
const brokers = () => engine.config.kafkaBrokers;
const registry = () => engine.config.schemaRegistryUrl;

/** Every committed record of every partition, read by confluent-kafka. */
async function readBack(topic: string, partitions: number): Promise<IndependentRecord[][]> {
  const ends = await highWatermarks(engine.kafka, Array.from({ length: partitions }, (_, partition) => ({ topic, partition })));
  return readCommittedIndependently(brokers(), ends.map((end, partition) => ({ topic, partition, start: 0n, end })));
}

async function nothingIn(topic: string): Promise<boolean> {
  const count = (await topicPartitions(engine.kafka, topic)).length;
  const ends = await highWatermarks(engine.kafka, Array.from({ length: count }, (_, partition) => ({ topic, partition })));
  return ends.every((end) => end === 0n);
}

async function subjectVersions(subject: string): Promise<number> {
  const response = await fetch(`${registry()}/subjects/${encodeURIComponent(subject)}/versions`);
  await response.body?.cancel();
  return response.status;
}

const avroSchema = JSON.stringify({
  type: 'record',
  name: 'Order',
  namespace: 'shop',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'customer', type: 'string' },
    { name: 'note', type: ['null', 'string'], default: null },
    { name: 'total', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
    { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'status', type: { type: 'enum', name: 'Status', symbols: ['NEW', 'PAID'] }, default: 'NEW' },
    { name: 'tags', type: { type: 'array', items: 'string' }, default: [] },
  ],
});

/** fastavro's reading of wire-format values: [magic byte, schema id, the decoded value with decimals and times as text]. */
function decodeWithFastavro(schema: string, values: Buffer[]): Promise<[number, number, Record<string, unknown>][]> {
  const script = `
import io, json, struct, sys, fastavro
request = json.load(sys.stdin)
schema = fastavro.parse_schema(json.loads(request["schema"]))
out = []
for hex_value in request["values"]:
    raw = bytes.fromhex(hex_value)
    magic, schema_id = struct.unpack(">bI", raw[:5])
    value = fastavro.schemaless_reader(io.BytesIO(raw[5:]), schema)
    out.append([magic, schema_id, value])
print(json.dumps(out, default=lambda v: v.isoformat() if hasattr(v, "isoformat") else str(v)))
`;
  return new Promise((resolve, reject) => {
    const child = execFile('python3', ['-c', script], { timeout: 30_000 }, (error, stdout, stderr) => (error ? reject(new Error(stderr || error.message)) : resolve(JSON.parse(stdout))));
    child.stdin!.end(JSON.stringify({ schema, values: values.map((v) => v.toString('hex')) }));
  });
}

describe('offsetlake topic create', () => {
  it('creates the topic with the partitions and configs asked; a taken name, a config Kafka refuses and a bad --partitions or --config are refused in sentences and create nothing', async () => {
    const name = `cli-topic-${randomUUID().slice(0, 8)}`;
    const created = await offsetlake(['topic', 'create', name, '--partitions', '3', '--config', 'retention.ms=3600000', '--json']);
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toEqual({ topic: name, created: true, partitions: 3, configs: { 'retention.ms': '3600000' } });
    expect(await topicPartitions(engine.kafka, name)).toEqual([0, 1, 2]);
    const described = await engine.kafka.admin().describeConfigs({ resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: name, configurationKeys: ['retention.ms'] }] });
    expect(described[0]!.configs.find((c) => c.name === 'retention.ms')?.value).toBe('3600000');

    const others = [`${name}-a`, `${name}-b`, `${name}-c`];
    const [taken, again, badConfig, zero, noEquals] = await Promise.all([
      offsetlake(['topic', 'create', name, '--partitions', '2']),
      offsetlake(['topic', 'create', name, '--if-not-exists']),
      offsetlake(['topic', 'create', others[0]!, '--config', 'no.such.config=1']),
      offsetlake(['topic', 'create', others[1]!, '--partitions', '0']),
      offsetlake(['topic', 'create', others[2]!, '--config', 'retention.ms']),
    ]);
    expect([taken.code, taken.stderr]).toEqual([1, `offsetlake topic: topic "${name}" already exists (3 partitions); choose another name, or write into it with \`offsetlake produce ${name}\`\n`]);
    expect([again.code, again.stdout]).toEqual([0, `topic ${name} already exists (3 partitions); left as it is\n`]);
    expect(badConfig.code).toBe(2);
    expect(badConfig.stderr).toContain(`Kafka refused the topic's configuration: Unknown topic config name: no.such.config. Topic "${others[0]}" was not created`);
    expect([zero.code, zero.stderr]).toEqual([2, 'offsetlake topic: --partitions must be a whole number of at least 1, got "0"\n']);
    expect([noEquals.code, noEquals.stderr]).toEqual([2, 'offsetlake topic: --config takes KEY=VALUE (such as --config retention.ms=604800000), got "retention.ms"\n']);
    for (const other of others) await expect(topicPartitions(engine.kafka, other)).rejects.toThrow(`Kafka topic "${other}" does not exist`);
    expect(await topicPartitions(engine.kafka, name)).toEqual([0, 1, 2]); // the taken name kept its 3 partitions
  });
});

describe('offsetlake produce', () => {
  it('writes each JSON line from a file as a record (value, key, headers in both forms, RFC 3339 and epoch-ms timestamps months apart, partition, murmur2 and round-robin placement), exactly as confluent-kafka reads it back', async () => {
    const topic = await newTopic(engine, 3, 'cli-produce');
    const input = file('records.jsonl', lines(
      // numbers as written: more digits than a double holds, and a trailing zero
      '{"value": {"page": "/home", "n": 12345678901234567890, "x": 1.50}, "key": "u1", "headers": {"source": "web"}, "timestamp": "2026-01-02T03:04:05.678Z", "partition": 0}',
      { value: 'not JSON ☕', key: 'u2', headers: [['h', '1'], ['h', null]], timestamp: 1767323045679, partition: 1 },
      '',
      { value: null, key: 'u3', timestamp: '2025-01-01T00:00:00+02:00', partition: 2 },
      { value: [1, 2], timestamp: '2024-06-01T00:00:00Z', partition: 0 }, // months before line 1, same partition
      { value: { k: true }, key: 'a-little-bit-long-string', timestamp: 1700000000000 },
      { value: 'x', timestamp: 1700000000001 },
      { value: 'y', timestamp: 1700000000002 },
    ));
    const run = await offsetlake(['produce', topic, input, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toMatchObject({ topic, records: 7 });
    expect(result.partitions.map((p: { partition: number; records: number }) => [p.partition, p.records])).toEqual([[0, 3], [1, 2], [2, 2]]);

    const [p0, p1, p2] = await readBack(topic, 3);
    const view = (r: IndependentRecord) => [r.key?.toString() ?? null, r.value?.toString() ?? null, r.headers.map(([k, v]) => [k, v?.toString() ?? null]), r.timestamp];
    expect(p0!.map(view)).toEqual([
      ['u1', '{"page":"/home","n":12345678901234567890,"x":1.50}', [['source', 'web']], Date.UTC(2026, 0, 2, 3, 4, 5, 678)],
      [null, '[1,2]', [], Date.UTC(2024, 5, 1)],
      [null, 'x', [], 1700000000001], // keyless, no partition: the first partition in turn
    ]);
    expect(p1!.map(view)).toEqual([
      ['u2', 'not JSON ☕', [['h', '1'], ['h', null]], 1767323045679],
      [null, 'y', [], 1700000000002], // the next in turn
    ]);
    expect(p2!.map(view)).toEqual([
      ['u3', null, [], Date.UTC(2024, 11, 31, 22)],
      // Kafka's UtilsTest: murmur2("a-little-bit-long-string") = -985981536; toPositive % 3 = 2, where the Java producer puts it
      ['a-little-bit-long-string', '{"k":true}', [], 1700000000000],
    ]);
  });

  it('--transactional --commit-every 2 reads stdin and commits every 2 records: 3 transactions for 5 records, all seen by a read_committed reader', async () => {
    const topic = await newTopic(engine, 1, 'cli-produce-tx');
    const run = await offsetlake(['produce', topic, '--transactional', '--commit-every', '2', '--json'], lines(...['a', 'b', 'c', 'd', 'e'].map((value) => ({ value }))));
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toMatchObject({ topic, records: 5, transactions: 3, partitions: [{ partition: 0, records: 5, firstOffset: '0', lastOffset: '6' }] });
    const [records] = await readBack(topic, 1);
    // each commit leaves a marker after its records: offsets 2 and 5 (and 7) are markers
    expect(records!.map((r) => [r.offset, r.value!.toString()])).toEqual([[0n, 'a'], [1n, 'b'], [3n, 'c'], [4n, 'd'], [6n, 'e']]);
    const human = await offsetlake(['produce', topic, '--commit-every', '1'], lines({ value: 'f' }));
    expect([human.code, human.stdout]).toEqual([0, `produced 1 record to ${topic} in 1 committed transaction: partition 0: 1 record at offset 8\n`]);
  });

  it('refuses an input with bad lines, naming each line and what is wrong (exit 1), and then nothing is produced and no schema registered', async () => {
    const topic = await newTopic(engine, 1, 'cli-produce-bad');
    const schema = file('bad-lines.avsc', avroSchema);
    const good = { value: { id: 1, customer: 'ada', total: '1.00', at: 0 } };
    const [plain, avro, partition] = await Promise.all([
      offsetlake(['produce', topic], lines({ value: 1 }, { value: 2 }, { value: 3, timestamp: 'yesterday' }, 'not json', { vaule: 5 }, { value: 6, key: 7 })),
      offsetlake(['produce', topic, '--format', 'avro', '--schema', schema], lines(good, { value: { ...good.value, id: 1.5 } }, { value: { ...good.value, total: '1.234' } }, { value: { ...good.value, extra: 1 } })),
      offsetlake(['produce', topic], lines({ value: 1 }, { value: 2, partition: 4 })),
    ]);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toBe([
      'offsetlake produce: the input was refused, nothing was produced (4 bad lines):',
      '  line 3 "timestamp" "yesterday" is not an RFC 3339 time such as 2026-01-02T03:04:05.678Z',
      `  line 4 is not JSON (Unexpected token 'o', "not json" is not valid JSON)`,
      '  line 5 has "vaule" but no "value"; did you mean "value"?',
      '  line 6 "key" must be a string (or null), got 7; write it as "7"',
      '',
    ].join('\n'));
    expect(avro.code).toBe(1);
    expect(avro.stderr).toBe([
      'offsetlake produce: the input was refused, nothing was produced (3 bad lines):',
      '  line 2 does not fit the Avro schema: value.id: expected a long (64-bit integer), got the number 1.5',
      "  line 3 does not fit the Avro schema: value.total: 1.234 has more than 2 digits after the point (the decimal's scale)",
      '  line 4 does not fit the Avro schema: value: record shop.Order has no field "extra" (its fields: id, customer, note, total, at, status, tags)',
      '',
    ].join('\n'));
    expect([partition.code, partition.stderr]).toEqual([1, `offsetlake produce: the input was refused, nothing was produced (1 bad line):\n  line 2 "partition" 4: topic ${topic} has 1 partition (0 to 0)\n`]);
    expect(await nothingIn(topic)).toBe(true);
    expect(await subjectVersions(`${topic}-value`)).toBe(404);
  });

  it('says what was wrong with the command line and what to do (exit 2; exit 1 for a topic that does not exist), and produces nothing', async () => {
    const topic = await newTopic(engine, 1, 'cli-produce-usage');
    const missing = `no-such-topic-${randomUUID().slice(0, 8)}`;
    const badSchema = file('bad.avsc', '{"type": "recordz"}');
    const record = lines({ value: 'v' });
    const cases: [string[], number, string][] = [
      [['produce'], 2, 'produce needs a TOPIC; usage: offsetlake produce TOPIC [FILE]'],
      [['produce', topic, '--format', 'avro'], 2, `--format avro needs --schema FILE: the schema to register under ${topic}-value and to encode each value with`],
      [['produce', topic, '--format', 'avro', '--schema', join(work, 'no-such.avsc')], 2, `--schema ${join(work, 'no-such.avsc')}: there is no such file`],
      [['produce', topic, '--format', 'avro', '--schema', badSchema], 2, `--schema ${badSchema}: it is not an Avro schema: unknown type: "recordz"`],
      [['produce', topic, join(work, 'no-such.jsonl')], 2, `FILE ${join(work, 'no-such.jsonl')}: there is no such file`],
      [['produce', topic, '--jsn'], 2, 'unknown flag --jsn; did you mean --json?'],
      [['produce', missing], 1, `topic "${missing}" does not exist; create it with \`offsetlake topic create ${missing} [--partitions N]\` (nothing was produced)`],
    ];
    const runs = await Promise.all(cases.map(([args]) => offsetlake(args, record)));
    runs.forEach((run, i) => {
      const [args, code, message] = cases[i]!;
      expect([args.join(' '), run.code, run.stdout]).toEqual([args.join(' '), code, '']);
      expect(run.stderr).toContain(`offsetlake produce: ${message}`);
    });
    expect(await nothingIn(topic)).toBe(true);
    await expect(topicPartitions(engine.kafka, missing)).rejects.toThrow('does not exist');
  });

  it('--format avro registers the schema under TOPIC-value and writes the Confluent wire format (magic byte, that id), which fastavro decodes to the values given', async () => {
    const topic = await newTopic(engine, 1, 'cli-produce-avro');
    const schema = file('order.avsc', avroSchema);
    const run = await offsetlake(['produce', topic, '--format', 'avro', '--schema', schema, '--json'], lines(
      { key: 'c1', value: { id: 9007199254740993, customer: 'ada', total: '12.34', at: '2026-01-02T03:04:05.678Z', status: 'PAID', tags: ['a', 'b'] } },
      { key: 'c2', value: { id: -2, customer: 'bob', note: 'café ☕', total: 5, at: 1767323045678 } },
      { key: 'c3', value: { id: 3, customer: 'cy', note: { string: 'wrapped' }, total: 0.1, at: 0 } },
      { key: 'c4', value: null },
    ));
    expect(run.code, run.stderr).toBe(0);
    const { schema: registered } = JSON.parse(run.stdout);
    const latest = (await (await fetch(`${registry()}/subjects/${topic}-value/versions/latest`)).json()) as { id: number };
    expect(registered).toEqual({ subject: `${topic}-value`, id: latest.id, format: 'avro' });

    const [records] = await readBack(topic, 1);
    expect(records!.map((r) => r.key!.toString())).toEqual(['c1', 'c2', 'c3', 'c4']);
    expect(records![3]!.value).toBeNull();
    const decoded = await decodeWithFastavro(avroSchema, records!.slice(0, 3).map((r) => r.value!));
    expect(decoded).toEqual([
      [0, latest.id, { id: 9007199254740993, customer: 'ada', note: null, total: '12.34', at: '2026-01-02T03:04:05.678000+00:00', status: 'PAID', tags: ['a', 'b'] }],
      [0, latest.id, { id: -2, customer: 'bob', note: 'café ☕', total: '5.00', at: '2026-01-02T03:04:05.678000+00:00', status: 'NEW', tags: [] }],
      [0, latest.id, { id: 3, customer: 'cy', note: 'wrapped', total: '0.10', at: '1970-01-01T00:00:00+00:00', status: 'NEW', tags: [] }],
    ]);
  });

  it('tables over new topics (json, avro, protobuf, json-schema) index with run --once what produce wrote, and query reads back the values given', async () => {
    const formats = ['json', 'avro', 'protobuf', 'json-schema'] as const;
    const topics = await Promise.all(formats.map((f) => newTopic(engine, 2, `cli-e2e-${f}`)));
    const tables = await Promise.all(formats.map((f, i) => testTable(engine, topics[i]!, {}, f)));
    const schemas: Record<string, string> = {
      avro: file('e2e.avsc', avroSchema),
      protobuf: file('e2e.proto', 'syntax = "proto3";\npackage shop;\nimport "google/protobuf/timestamp.proto";\nmessage Order {\n  int64 id = 1;\n  string customer = 2;\n  google.protobuf.Timestamp at = 3;\n  Status status = 4;\n}\nenum Status { NEW = 0; PAID = 1; }\n'),
      'json-schema': file('e2e.json', JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { id: { type: 'integer' }, customer: { type: 'string' }, at: { type: 'string', format: 'date-time' } } })),
    };
    const value = (i: number, f: string) => ({
      id: i,
      customer: `c${i}`,
      at: `2026-01-02T03:04:0${i}Z`,
      ...(f === 'avro' ? { total: `${i}.50` } : f === 'protobuf' ? { status: i === 2 ? 'PAID' : 'NEW' } : {}),
    });
    const produced = await Promise.all(formats.map((f, t) => offsetlake(
      ['produce', topics[t]!, ...(f === 'json' ? [] : ['--format', f, '--schema', schemas[f]!]), '--transactional'],
      lines(...[1, 2, 3].map((i) => ({ key: `k${i}`, value: value(i, f) }))),
    )));
    produced.forEach((p) => expect(p.code, p.stderr).toBe(0));

    const indexed = await offsetlake(['run', '--once', '--json']);
    expect(indexed.code, indexed.stderr).toBe(0);
    expect(JSON.parse(indexed.stdout)).toMatchObject({ records: 12, failed: [] });

    const [json, avro, protobuf, jsonSchema] = tables.map((t) => t.name);
    const sql = [
      `SELECT 'json' AS t, _key, _value->>'id' AS id, _value->>'customer' AS customer, _value->>'at' AS "at", NULL AS extra, _error FROM ${json}`,
      `SELECT 'avro', _key, CAST(id AS VARCHAR), customer, CAST("at" AS VARCHAR), CAST(total AS VARCHAR), _error FROM ${avro}`,
      `SELECT 'protobuf', _key, CAST(id AS VARCHAR), customer, CAST("at" AS VARCHAR), status, _error FROM ${protobuf}`,
      `SELECT 'json-schema', _key, CAST(id AS VARCHAR), customer, CAST("at" AS VARCHAR), NULL, _error FROM ${jsonSchema}`,
    ].join(' UNION ALL ') + ' ORDER BY 1, 2';
    const answer = await offsetlake(['query', sql, '--json', '--quiet']);
    expect(answer.code, answer.stderr).toBe(0);
    const row = (t: string, i: number, at: string, extra: string | null) => ({ t, _key: `k${i}`, id: String(i), customer: `c${i}`, at, extra, _error: null });
    expect(JSON.parse(answer.stdout)).toEqual([
      ...[1, 2, 3].map((i) => row('avro', i, `2026-01-02 03:04:0${i}+00`, `${i}.50`)),
      ...[1, 2, 3].map((i) => row('json', i, `2026-01-02T03:04:0${i}Z`, null)),
      ...[1, 2, 3].map((i) => row('json-schema', i, `2026-01-02 03:04:0${i}+00`, null)),
      ...[1, 2, 3].map((i) => row('protobuf', i, `2026-01-02 03:04:0${i}+00`, i === 2 ? 'PAID' : 'NEW')),
    ]);
  });
});
