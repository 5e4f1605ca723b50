/**
 * Spark 4.1 through the Iceberg catalog against DuckDB 1.4.4 through the DuckLake attach,
 * on the same table (issue 28's figures), both reading serve's S3 face, on the local stack:
 *
 *   node --import tsx bench/iceberg-engines.ts [hours=24] [recordsPerHour=2000]
 *
 * A JSON table of ~1 KiB records over `hours` hours (granularity hour, file_bytes 1 MiB).
 * Each engine runs `SELECT count(*)` and a one-hour query (count and the sum of the
 * values' lengths within one hour: it reads that hour's files only) three times; the
 * session start (Spark's JVM, DuckDB's ATTACH) is not counted. Between engines the read
 * API's cache is dropped (a fresh service), so each engine's first run rebuilds from Kafka.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { listFiles } from '../src/catalog/file-reads.js';
import { findTable } from '../src/catalog/tables.js';
import { openEngine } from '../src/runtime/engine.js';
import { useLocalStackDefaults } from '../src/stack/index.js';
import { rangeBuilder } from '../src/indexer/range-builder.js';
import { kafkaSource } from '../src/kafka/source.js';
import { produce } from '../src/kafka/produce.js';
import { createTopic } from '../src/kafka/topics.js';
import { readerHandler } from '../src/reader/http.js';
import { readerServer } from '../src/reader/node-server.js';
import { ReaderService } from '../src/reader/service.js';
import { resolveSettings } from '../src/table/settings.js';
import { createTableFromTopic } from '../src/table-topic/create-table.js';
import { defaultRunnerOptions, LocalRunner } from '../src/local/runner.js';
import { libpqConnectionString } from '../src/cli/attach.js';
import { IcebergCatalog } from '../src/iceberg/rest.js';
import { sparkIcebergJars, sparkJavaHome } from '../test/helpers/iceberg-jars.js';

const hours = Number(process.argv[2] ?? 24);
const perHour = Number(process.argv[3] ?? 2000);
const token = randomBytes(8).toString('hex');
const keys = { accessKeyId: 'bench', secretAccessKey: randomBytes(8).toString('hex') };

const script = String.raw`
import json, os, sys, time
job = json.loads(sys.stdin.read())
hour_from, hour_to = job["hourFrom"], job["hourTo"]
def timed(run):
    out = []
    for _ in range(3):
        started = time.perf_counter()
        answer = run()
        out.append({"ms": round((time.perf_counter() - started) * 1000), "answer": answer})
    return out
if job["engine"] == "spark":
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").config("spark.jars", ",".join(job["jars"])).config("spark.driver.memory", "2g")
             .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.catalog.lake", "org.apache.iceberg.spark.SparkCatalog").config("spark.sql.catalog.lake.type", "rest")
             .config("spark.sql.catalog.lake.uri", job["uri"]).config("spark.sql.catalog.lake.token", job["token"])
             .config("spark.sql.catalog.lake.io-impl", "org.apache.iceberg.aws.s3.S3FileIO").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    t = "lake.main." + job["table"]
    count = timed(lambda: spark.sql(f"SELECT count(*) AS n FROM {t}").collect()[0]["n"])
    hour = timed(lambda: list(spark.sql(f"SELECT count(*) AS n, sum(length(_value)) AS b FROM {t} WHERE _timestamp >= TIMESTAMP '{hour_from}' AND _timestamp < TIMESTAMP '{hour_to}'").collect()[0]))
    spark.stop()
else:
    import duckdb, duckdb_ext
    con = duckdb.connect()
    con.execute("SET extension_directory = '" + os.path.join(list(duckdb_ext.__path__)[0], "extensions") + "'")
    for e in ("ducklake", "postgres", "httpfs"):
        con.execute("LOAD " + e)
    con.execute(f"CREATE SECRET s3 (TYPE s3, KEY_ID '{job['key']}', SECRET '{job['secret']}', REGION 'us-east-1', ENDPOINT '{job['host']}', URL_STYLE 'path', USE_SSL false)")
    con.execute("ATTACH 'ducklake:postgres:" + job["libpq"] + "' AS lake (METADATA_SCHEMA 'ducklake', READ_ONLY)")
    t = "lake." + job["table"]
    count = timed(lambda: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0])
    hour = timed(lambda: list(con.execute(f"SELECT count(*), sum(length(_value)) FROM {t} WHERE _timestamp >= TIMESTAMPTZ '{hour_from}+00' AND _timestamp < TIMESTAMPTZ '{hour_to}+00'").fetchone()))
print(json.dumps({"count": count, "hour": hour}))
`;

function python(job: unknown): Promise<{ count: { ms: number; answer: unknown }[]; hour: { ms: number; answer: unknown }[] }> {
  return new Promise((resolve, reject) => {
    const child = execFile('python3', ['-c', script], { maxBuffer: 1 << 26, timeout: 1_800_000, env: { ...process.env, JAVA_HOME: sparkJavaHome() } }, (error, stdout, stderr) => (error ? reject(new Error(stderr.slice(-3000) || error.message)) : resolve(JSON.parse(stdout.trim().split('\n').at(-1)!))));
    child.stdin!.end(JSON.stringify(job));
  });
}

useLocalStackDefaults();
const engine = await openEngine();
try {
  const suffix = randomBytes(4).toString('hex');
  const topic = `bench-engines-${suffix}`;
  const name = `bench_engines_${suffix}`;
  await createTopic(engine.kafka, topic, 1);
  await createTableFromTopic(engine, { name, topic, format: 'json', settings: resolveSettings({ file_bytes: '1MiB', file_window: '2h' }) });
  const base = Math.floor(Date.now() / 3_600_000) * 3_600_000 - hours * 3_600_000;
  for (let h = 0; h < hours; h++) {
    await produce(engine.kafka, topic, Array.from({ length: perHour }, (_, i) => ({
      key: `k${i}`, value: `{"h":${h},"i":${i},"s":"${randomBytes(500).toString('hex')}"}`, partition: 0, timestamp: base + h * 3_600_000 + Math.floor((i * 3_600_000) / perHour),
    })));
  }
  await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
  const table = await findTable(engine.catalog, name);
  const files = await listFiles(engine.catalog, table.tableId);
  console.log(`${hours * perHour} records, ${files.length} files, ${(files.reduce((sum, f) => sum + Number(f.fileSizeBytes), 0) / 1024 / 1024).toFixed(1)} MiB`);
  const middle = new Date(base + Math.floor(hours / 2) * 3_600_000);
  const hourFrom = middle.toISOString().replace('T', ' ').replace('.000Z', '');
  const hourTo = new Date(middle.getTime() + 3_600_000).toISOString().replace('T', ' ').replace('.000Z', '');
  for (const which of ['spark', 'duckdb'] as const) {
    const service = new ReaderService(engine.catalog, kafkaSource(engine.kafka), { publishEveryMs: 0 });
    const s3 = { bucket: 'offsetlake', region: 'us-east-1', credentials: keys };
    const server = readerServer(readerHandler(service, { token, s3, catalog: new IcebergCatalog(service, { snapshotIntervalMs: 0 }, s3) })).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const started = performance.now();
      const answer = await python({
        engine: which, uri: `http://${host}/iceberg`, token, table: name, host, key: keys.accessKeyId, secret: keys.secretAccessKey,
        libpq: libpqConnectionString(engine.config.databaseUrl), jars: which === 'spark' ? sparkIcebergJars() : [], hourFrom, hourTo,
      });
      const m = service.metrics;
      console.log(JSON.stringify({ engine: which === 'spark' ? 'Spark 4.1 via Iceberg' : 'DuckDB 1.4.4 via DuckLake', ...answer, wallSeconds: Math.round((performance.now() - started) / 1000), served: { bytes: m.bytesServed, footerHits: m.footerHits, granuleRebuilds: m.granuleRebuilds + m.partialGranuleRebuilds } }));
    } finally {
      server.closeAllConnections();
      server.close();
      await service.close();
    }
  }
} finally {
  await engine.close();
}
