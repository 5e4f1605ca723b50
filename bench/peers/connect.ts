/**
 * The Apache Iceberg Kafka Connect sink, as a peer: Kafka Connect standalone and the sink,
 * both fetched from Maven Central by `mvn` with a generated pom (as src/stack/kafka.ts
 * fetches the broker), run by `java` directly. Connect's runtime is the classpath; the sink
 * and what it needs (Iceberg, Parquet, a shaded Hadoop client for the Hadoop catalog and
 * HadoopFileIO on local files) is a plugin folder of its own, isolated as Connect isolates
 * plugins. Neither is our code.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fetchMavenLibs } from '../../src/stack/java.js';

export const connectVersion = '4.1.1';
/** The first Iceberg release whose iceberg-kafka-connect-events Maven Central serves (1.9.0 and 1.10.0 it does not). */
export const icebergVersion = '1.12.0';
const hadoopVersion = '3.4.1';
const log4jVersion = '2.24.3';

function dependency(group: string, artifact: string, version: string, exclusions: Array<[string, string]> = []): string {
  const excluded = exclusions.length
    ? `<exclusions>${exclusions.map(([g, a]) => `<exclusion><groupId>${g}</groupId><artifactId>${a}</artifactId></exclusion>`).join('')}</exclusions>`
    : '';
  return `    <dependency><groupId>${group}</groupId><artifactId>${artifact}</artifactId><version>${version}</version>${excluded}</dependency>`;
}

function pom(name: string, dependencies: string[]): string {
  return `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>offsetlake-bench</groupId>
  <artifactId>${name}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
${dependencies.join('\n')}
  </dependencies>
</project>
`;
}

/** Connect's worker: the runtime, its JSON converter, and a log4j binding for its slf4j 1.7 (Kafka's jars bring none). */
function runtimePom(): string {
  return pom('connect-runtime', [
    dependency('org.apache.kafka', 'connect-runtime', connectVersion),
    dependency('org.apache.kafka', 'connect-json', connectVersion),
    dependency('org.apache.logging.log4j', 'log4j-slf4j-impl', log4jVersion),
    dependency('org.apache.logging.log4j', 'log4j-core', log4jVersion),
  ]);
}

/** The sink's plugin folder. Connect's own API and the Kafka client come from the worker. */
function sinkPom(): string {
  const provided: Array<[string, string]> = [
    ['org.apache.kafka', 'connect-api'],
    ['org.apache.kafka', 'kafka-clients'],
    ['org.slf4j', 'slf4j-api'],
  ];
  return pom('iceberg-sink', [
    dependency('org.apache.iceberg', 'iceberg-kafka-connect', icebergVersion, provided),
    dependency('org.apache.iceberg', 'iceberg-kafka-connect-events', icebergVersion, provided),
    dependency('org.apache.iceberg', 'iceberg-data', icebergVersion, provided),
    dependency('org.apache.iceberg', 'iceberg-parquet', icebergVersion, provided),
    dependency('org.apache.hadoop', 'hadoop-client-api', hadoopVersion),
    dependency('org.apache.hadoop', 'hadoop-client-runtime', hadoopVersion),
  ]);
}

/**
 * A Connect converter for Avro in the Confluent wire format: Confluent's own (io.confluent)
 * is not on Maven Central, Apicurio's is, and in its Confluent mode (4-byte ids, looked up
 * as content ids through the registry's v2 API) it reads what the registry's ccompat API
 * registered.
 */
export const apicurioConverterVersion = '2.6.13.Final';
function converterPom(): string {
  return pom('apicurio-converter', [
    // Kafka's jars are the worker's (an older connect-json here only fails plugin discovery)
    dependency('io.apicurio', 'apicurio-registry-utils-converter', apicurioConverterVersion, [
      ['org.apache.kafka', '*'],
      ['org.slf4j', 'slf4j-api'],
    ]),
  ]);
}

function fetchInto(folder: string, pomText: string, log: string, progress: (line: string) => void, what: string): string {
  return fetchMavenLibs(folder, pomText, what, { log, say: (line) => progress(`iceberg sink: ${line}`) });
}

export interface ConnectJars {
  /** Connect's runtime: a classpath folder. */
  runtime: string;
  /** plugin.path: holds the sink's folder, and the Avro converter's when it could be fetched. */
  plugins: string;
  /** Why there is no Avro converter, if there is none. */
  avroConverterMissing?: string;
}

/** Fetched once into the shared download cache (`~/.cache/offsetlake`), then reused. */
export function fetchConnect(cache: string, logs: string, progress: (line: string) => void): ConnectJars {
  const root = join(cache, `iceberg-connect-${icebergVersion}-kafka-${connectVersion}`);
  mkdirSync(logs, { recursive: true });
  const runtime = fetchInto(join(root, 'runtime'), runtimePom(), join(logs, 'connect-runtime-fetch.log'), progress, `Kafka Connect ${connectVersion}`);
  const plugins = join(root, 'plugins');
  fetchInto(join(plugins, 'iceberg-sink'), sinkPom(), join(logs, 'iceberg-sink-fetch.log'), progress, `the Iceberg Kafka Connect sink ${icebergVersion}`);
  let avroConverterMissing: string | undefined;
  try {
    fetchInto(join(plugins, 'apicurio-converter'), converterPom(), join(logs, 'apicurio-converter-fetch.log'), progress, `Apicurio's Kafka Connect AvroConverter ${apicurioConverterVersion}`);
  } catch (error) {
    avroConverterMissing = (error as Error).message.split('\n')[0];
  }
  return { runtime, plugins, ...(avroConverterMissing ? { avroConverterMissing } : {}) };
}
