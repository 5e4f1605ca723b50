/**
 * The stack's Kafka: a real Apache Kafka broker in KRaft mode, one node that is both
 * broker and controller, its jars fetched from Maven Central by `mvn` and run by `java`
 * directly (no distribution tarball: Maven Central is the only place we can fetch from).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fetchMavenLibs, findJava, runLogged } from './java.js';
import {
  DaemonStartError,
  logFile,
  portAnswers,
  runningPid,
  startDaemon,
  stopDaemon,
  waitUntil,
} from './process.js';
import type { Service, ServiceStatus, StackConfig } from './types.js';

const name = 'kafka';
/** Within the range @platformatic/kafka is tested against (3.5.0 to 4.2.0). */
export const kafkaVersion = '4.1.1';
/**
 * The log4j that Kafka 4.1.1 ships. Kafka's Maven dependencies bring log4j-core but no
 * slf4j binding, and without one every broker log line is silently dropped.
 */
const log4jVersion = '2.24.3';
const nodeId = 1;
const javaHint = 'apt-get install openjdk-17-jre-headless (or set JAVA_HOME to a Java 17+ JDK)';

function kafkaHome(config: StackConfig): string {
  return join(config.paths.home, 'kafka');
}

function dataDir(config: StackConfig): string {
  return join(kafkaHome(config), 'data');
}

function propertiesFile(config: StackConfig): string {
  return join(kafkaHome(config), 'server.properties');
}

/** Shared by every checkout, so a second checkout starts without fetching. */
function libsDir(config: StackConfig): string {
  return join(config.paths.cache, `kafka-${kafkaVersion}`, 'libs');
}

function pom(): string {
  const dependency = (group: string, artifact: string, version: string, exclusions = '') =>
    `    <dependency><groupId>${group}</groupId><artifactId>${artifact}</artifactId><version>${version}</version>${exclusions}</dependency>`;
  return `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>offsetlake</groupId>
  <artifactId>kafka-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
${dependency('org.apache.kafka', 'kafka_2.13', kafkaVersion)}
${dependency(
  'org.apache.kafka',
  'kafka-tools',
  kafkaVersion,
  // kafka-topics, the console consumer, producer-perf for debugging; Kafka Connect (Jetty, Jersey) is not needed for them.
  '<exclusions><exclusion><groupId>org.apache.kafka</groupId><artifactId>connect-runtime</artifactId></exclusion></exclusions>',
)}
${dependency('org.apache.logging.log4j', 'log4j-slf4j-impl', log4jVersion)}
  </dependencies>
</project>
`;
}

function fetchJars(config: StackConfig, progress: (line: string) => void): string {
  return fetchMavenLibs(libsDir(config), pom(), `Apache Kafka ${kafkaVersion}`, { log: logFile(config.paths, `${name}-fetch`), say: (line) => progress(`kafka: ${line}`) });
}

/** Log4j 2 writes to stdout, which startDaemon appends to logs/kafka.log. */
function writeConfig(config: StackConfig): { properties: string; log4j: string } {
  mkdirSync(kafkaHome(config), { recursive: true });
  const { host, kafkaPort, controllerPort } = config;
  const properties = propertiesFile(config);
  writeFileSync(
    properties,
    [
      'process.roles=broker,controller',
      `node.id=${nodeId}`,
      // A static quorum lives in this file alone, so a changed controller port needs no re-format.
      `controller.quorum.voters=${nodeId}@${host}:${controllerPort}`,
      `listeners=PLAINTEXT://${host}:${kafkaPort},CONTROLLER://${host}:${controllerPort}`,
      `advertised.listeners=PLAINTEXT://${host}:${kafkaPort}`,
      'controller.listener.names=CONTROLLER',
      'inter.broker.listener.name=PLAINTEXT',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      `log.dirs=${dataDir(config)}`,
      'num.partitions=1',
      // One broker: internal topics must not ask for replicas that cannot exist.
      'offsets.topic.replication.factor=1',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'share.coordinator.state.topic.replication.factor=1',
      'share.coordinator.state.topic.min.isr=1',
      // 50 partitions each by default: loading 100 logs at every start costs seconds on 2 cores.
      // Read only when the topic is first created, so an existing data folder keeps its count.
      'offsets.topic.num.partitions=4',
      'transaction.state.log.num.partitions=4',
      'auto.create.topics.enable=false',
      'group.initial.rebalance.delay.ms=0',
      ...Object.entries(config.brokerSettings ?? {}).map(([key, value]) => `${key}=${value}`),
      '',
    ].join('\n'),
  );
  const log4j = join(kafkaHome(config), 'log4j2.properties');
  writeFileSync(
    log4j,
    [
      'status = warn',
      // Log4j's own hook races the broker's shutdown and only prints a warning.
      'shutdownHook = disable',
      'appender.out.type = Console',
      'appender.out.name = STDOUT',
      'appender.out.layout.type = PatternLayout',
      'appender.out.layout.pattern = [%d] %p %m (%c)%n',
      'rootLogger.level = INFO',
      'rootLogger.appenderRef.out.ref = STDOUT',
      '',
    ].join('\n'),
  );
  return { properties, log4j };
}

function format(config: StackConfig, javaCommand: string, classpath: string, files: { properties: string; log4j: string }, progress: (line: string) => void): void {
  if (existsSync(join(dataDir(config), 'meta.properties'))) return;
  progress(`kafka: formatting ${dataDir(config)}`);
  // The cluster id is a Kafka Uuid: 16 random bytes in unpadded base64url, as `kafka-storage random-uuid` prints.
  const clusterId = randomBytes(16).toString('base64url');
  runLogged(
    `formatting ${dataDir(config)} failed`,
    javaCommand,
    ['-cp', classpath, `-Dlog4j2.configurationFile=${files.log4j}`, 'kafka.tools.StorageTool', 'format', `--cluster-id=${clusterId}`, '-c', files.properties],
    { log: logFile(config.paths, name), timeoutMs: 120_000 },
  );
}

/** The broker port the running broker was started with, read back from the file it was started from. */
function startedPort(config: StackConfig): number | undefined {
  if (!existsSync(propertiesFile(config))) return undefined;
  const match = /^listeners=PLAINTEXT:\/\/[^:]+:(\d+)/m.exec(readFileSync(propertiesFile(config), 'utf8'));
  return match ? Number(match[1]) : undefined;
}

/**
 * The port opens before the broker serves requests, and a broker serves metadata while
 * still fenced; it lists itself among the brokers only once the controller unfenced it.
 */
async function brokerReady(host: string, port: number): Promise<boolean> {
  if (!(await portAnswers(host, port))) return false;
  // imported here: every command that takes the stack's defaults imports this module, and only `stack` asks the broker
  const { Admin } = await import('@platformatic/kafka');
  const admin = new Admin({ clientId: 'offsetlake-stack', bootstrapBrokers: [`${host}:${port}`], retries: false, timeout: 2000 });
  try {
    const metadata = await admin.metadata({ topics: [] });
    return metadata.brokers.has(nodeId);
  } finally {
    await admin.close().catch(() => {});
  }
}

async function waitReady(config: StackConfig, port: number, pid: number): Promise<void> {
  await waitUntil(`Kafka on ${config.host}:${port}`, () => brokerReady(config.host, port), {
    timeoutMs: 90_000,
    pid,
    log: logFile(config.paths, name),
  });
}

function running(config: StackConfig, pid: number, port: number): ServiceStatus {
  return { name, state: 'running', pid, endpoint: `${config.host}:${port}`, log: logFile(config.paths, name), detail: `Apache Kafka ${kafkaVersion}` };
}

function stopped(config: StackConfig): ServiceStatus {
  return { name, state: 'stopped', log: logFile(config.paths, name) };
}

export const kafkaService: Service = {
  name,

  async up(config, progress) {
    const already = runningPid(config.paths, name);
    if (already !== undefined) {
      const port = startedPort(config) ?? config.kafkaPort;
      if (port !== config.kafkaPort) {
        throw new DaemonStartError(`Kafka (pid ${already}) already runs on port ${port}; run \`offsetlake stack down\` before moving it to ${config.kafkaPort}`);
      }
      // A broker started without settings this `up` asks for (the tests' infinite retention)
      // would act otherwise than its caller expects: said, not silently reused.
      const startedWith = new Set(readFileSync(propertiesFile(config), 'utf8').split('\n').map((line) => line.trim()));
      const missing = Object.entries(config.brokerSettings ?? {}).filter(([key, value]) => !startedWith.has(`${key}=${value}`));
      if (missing.length > 0) {
        throw new DaemonStartError(`Kafka (pid ${already}) runs without ${missing.map(([key, value]) => `${key}=${value}`).join(', ')}, which this start asks for (the tests need it); run \`offsetlake stack down\` and start again`);
      }
      // Cheap, and covers an earlier `up` that was interrupted while the broker started.
      await waitReady(config, port, already);
      return running(config, already, port);
    }
    const javaCommand = findJava(17, javaHint);
    const classpath = join(fetchJars(config, progress), '*');
    for (const [port, variable] of [
      [config.kafkaPort, 'OFFSETLAKE_KAFKA_PORT'],
      [config.controllerPort, 'OFFSETLAKE_CONTROLLER_PORT'],
    ] as const) {
      if (await portAnswers(config.host, port)) {
        throw new DaemonStartError(`port ${port} on ${config.host} is taken; set ${variable} to another port`);
      }
    }
    const files = writeConfig(config);
    format(config, javaCommand, classpath, files, progress);
    progress(`kafka: starting Apache Kafka ${kafkaVersion} on ${config.host}:${config.kafkaPort}`);
    const pid = startDaemon(config.paths, {
      name,
      command: javaCommand,
      args: [
        '-Xms256m',
        '-Xmx512m',
        '-XX:+UseG1GC',
        '-XX:MaxGCPauseMillis=20',
        '-XX:+ExitOnOutOfMemoryError',
        '-Djava.awt.headless=true',
        `-Dlog4j2.configurationFile=${files.log4j}`,
        '-cp',
        classpath,
        'kafka.Kafka',
        files.properties,
      ],
      cwd: kafkaHome(config),
    });
    await waitReady(config, config.kafkaPort, pid);
    return running(config, pid, config.kafkaPort);
  },

  async down(config) {
    // A controlled shutdown of one node takes under 2 s; the long grace is for a loaded machine, SIGKILL only for a hang.
    await stopDaemon(config.paths, name, 30_000);
    return stopped(config);
  },

  async status(config) {
    const pid = runningPid(config.paths, name);
    if (pid === undefined) return stopped(config);
    return running(config, pid, startedPort(config) ?? config.kafkaPort);
  },
};
