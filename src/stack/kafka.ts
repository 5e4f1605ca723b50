/**
 * The stack's Kafka: real Apache Kafka in KRaft mode, its jars fetched from Maven Central
 * by `mvn` and run by `java` directly (no distribution tarball: Maven Central is the only
 * place we can fetch from).
 *
 * One broker (the default): one node that is both broker and controller.
 *
 * Three brokers (`stack up --brokers 3`): a controller of its own and three brokers, not
 * three combined nodes. MSK runs its controllers apart from the brokers it restarts, and a
 * fault of a broker here must be a fault of a broker only: with combined nodes, a killed
 * broker would also be a lost quorum voter, and two stopped brokers (ISR below
 * min.insync.replicas) would be a lost quorum that can neither fence them nor shrink an
 * ISR, which is another failure than the one MSK has. One controller, not three: the
 * scenarios never fault it, and every JVM costs memory and start time on a small machine.
 * Topics get replication factor 3 and min.insync.replicas=2 by default, as on MSK.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fetchMavenLibs, findJava } from './java.js';
import {
  daemonStatus,
  DaemonStartError,
  logFile,
  portAnswers,
  runningPid,
  startDaemon,
  stopDaemon,
  stoppedStatus,
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
const javaHint = 'apt-get install openjdk-17-jre-headless (or set JAVA_HOME to a Java 17+ JDK)';
/** The controller of a cluster: below every broker's id (brokers are 1, 2, 3, as MSK numbers them). */
const controllerNodeId = 0;
const clusterSize = 3;

/** One Kafka process of the stack: its pid and log are `name`'s, its state under `home`. */
export interface KafkaNode {
  name: string;
  nodeId: number;
  roles: 'broker,controller' | 'broker' | 'controller';
  /** Where clients (broker) or brokers (controller) reach it. */
  port: number;
  home: string;
}

/** The brokers of a cluster are kafka-1 … kafka-3; one broker alone is plain `kafka`, as before clusters. */
export function kafkaNodes(config: StackConfig): KafkaNode[] {
  if (config.brokers === 1) return [{ name, nodeId: 1, roles: 'broker,controller', port: config.kafkaPort, home: join(config.paths.home, 'kafka') }];
  const cluster = join(config.paths.home, 'kafka-cluster');
  const ports = [config.kafkaPort, ...config.brokerPorts];
  return [
    { name: `${name}-controller`, nodeId: controllerNodeId, roles: 'controller', port: config.controllerPort, home: join(cluster, 'controller') },
    ...ports.map((port, i) => ({ name: `${name}-${i + 1}`, nodeId: i + 1, roles: 'broker' as const, port, home: join(cluster, `broker-${i + 1}`) })),
  ];
}

/** The brokers' nodes alone (what clients connect to). */
export function kafkaBrokers(config: StackConfig): KafkaNode[] {
  return kafkaNodes(config).filter((node) => node.roles !== 'controller');
}

/** How clients reach the stack's brokers: `host:port,host:port,…`. */
export function kafkaBootstrap(config: StackConfig): string {
  return kafkaBrokers(config).map((node) => `${config.host}:${node.port}`).join(',');
}

/**
 * How a process on this machine reaches the brokers that run here, whichever shape runs
 * and on the ports they were started with: a command told nothing of a cluster (no
 * `OFFSETLAKE_BROKERS=3`) still bootstraps from all three brokers, and so still finds the
 * cluster while broker 1 is down. With nothing running, the brokers `config` asks for.
 */
export function localKafkaBootstrap(config: StackConfig): string {
  const shape = runningShape(config);
  if (!shape.some((node) => runningPid(config.paths, node.name) !== undefined)) return kafkaBootstrap(config);
  // a broker of the running shape that is down now was started from the same files as the others
  const ports = shape.filter((node) => node.roles !== 'controller').map((node) => startedPort(node) ?? node.port);
  return ports.filter((port) => port > 0).map((port) => `${config.host}:${port}`).join(',');
}

/** The nodes of either shape on this config's ports: `down` and `status` find whichever runs. */
function bothShapes(config: StackConfig): { single: KafkaNode[]; cluster: KafkaNode[] } {
  const brokerPorts = config.brokerPorts.length === clusterSize - 1 ? config.brokerPorts : Array.from({ length: clusterSize - 1 }, () => 0);
  return { single: kafkaNodes({ ...config, brokers: 1 }), cluster: kafkaNodes({ ...config, brokers: clusterSize, brokerPorts }) };
}

/** The shape whose nodes run here (one broker, or a cluster, whatever `config` says); with none running, the one `config` asks for. */
function runningShape(config: StackConfig): KafkaNode[] {
  const { single, cluster } = bothShapes(config);
  return [single, cluster].find((shape) => shape.some((node) => runningPid(config.paths, node.name) !== undefined)) ?? kafkaNodes(config);
}

function dataDir(node: KafkaNode): string {
  return join(node.home, 'data');
}

function propertiesFile(node: KafkaNode): string {
  return join(node.home, 'server.properties');
}

/** Shared by every checkout, so a second checkout starts without fetching; `kafka-<version>/libs` in src/stack/downloads.sha256. */
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
  return fetchMavenLibs(libsDir(config), pom(), `Apache Kafka ${kafkaVersion}`, { log: logFile(config.paths, `${name}-fetch`), say: (line) => progress(`kafka: ${line}`), pinned: `kafka-${kafkaVersion}/libs` });
}


/** Topic and internal-topic defaults: what every topic gets unless it says otherwise. */
function replicationSettings(config: StackConfig): string[] {
  if (config.brokers === 1) {
    // One broker: internal topics must not ask for replicas that cannot exist.
    return [
      'offsets.topic.replication.factor=1',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'share.coordinator.state.topic.replication.factor=1',
      'share.coordinator.state.topic.min.isr=1',
    ];
  }
  // As on MSK: every write acknowledged by two of three replicas, so one broker can be lost.
  // In KRaft the controller applies default.replication.factor when a topic is created,
  // and each broker min.insync.replicas when it takes a write: every node gets them.
  return [
    `default.replication.factor=${clusterSize}`,
    'min.insync.replicas=2',
    `offsets.topic.replication.factor=${clusterSize}`,
    `transaction.state.log.replication.factor=${clusterSize}`,
    'transaction.state.log.min.isr=2',
    `share.coordinator.state.topic.replication.factor=${clusterSize}`,
    'share.coordinator.state.topic.min.isr=2',
  ];
}

/** Log4j 2 writes to stdout, which startDaemon appends to the node's log. */
function writeConfig(config: StackConfig, node: KafkaNode): { properties: string; log4j: string } {
  mkdirSync(node.home, { recursive: true });
  const { host, controllerPort } = config;
  const voter = node.roles === 'broker,controller' ? node.nodeId : controllerNodeId;
  const listeners =
    node.roles === 'controller'
      ? [`listeners=CONTROLLER://${host}:${controllerPort}`, 'listener.security.protocol.map=CONTROLLER:PLAINTEXT']
      : [
          `listeners=PLAINTEXT://${host}:${node.port}${node.roles === 'broker,controller' ? `,CONTROLLER://${host}:${controllerPort}` : ''}`,
          `advertised.listeners=PLAINTEXT://${host}:${node.port}`,
          'inter.broker.listener.name=PLAINTEXT',
          'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
        ];
  const properties = propertiesFile(node);
  writeFileSync(
    properties,
    [
      `process.roles=${node.roles}`,
      `node.id=${node.nodeId}`,
      // A static quorum lives in this file alone, so a changed controller port needs no re-format.
      `controller.quorum.voters=${voter}@${host}:${controllerPort}`,
      ...listeners,
      'controller.listener.names=CONTROLLER',
      `log.dirs=${dataDir(node)}`,
      'num.partitions=1',
      ...replicationSettings(config),
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
  const log4j = join(node.home, 'log4j2.properties');
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

/** The cluster id an earlier format wrote into a node's meta.properties. */
function formattedClusterId(node: KafkaNode): string | undefined {
  const meta = join(dataDir(node), 'meta.properties');
  if (!existsSync(meta)) return undefined;
  return /^cluster\.id=(.+)$/m.exec(readFileSync(meta, 'utf8'))?.[1]?.trim();
}

/** Runs a command to its end with its output appended to `log`; rejects, pointing at the log, unless it exits 0. */
function runToEnd(failure: string, command: string, args: string[], log: string, timeoutMs: number): Promise<void> {
  const out = openSync(log, 'a');
  return new Promise<void>((done, fail) => {
    const child = spawn(command, args, { stdio: ['ignore', out, out], timeout: timeoutMs });
    child.once('error', (error) => fail(new DaemonStartError(`${failure} (${error.message}); see ${log}`)));
    child.once('exit', (code, signal) => (code === 0 ? done() : fail(new DaemonStartError(`${failure} (${signal ?? `exit ${code}`}); see ${log}`))));
  }).finally(() => closeSync(out));
}

/**
 * Formats the nodes not yet formatted, all with one cluster id (a node formatted earlier
 * gives it), side by side: each format is a JVM start of a few seconds.
 */
async function format(config: StackConfig, javaCommand: string, classpath: string, nodes: { node: KafkaNode; log4j: string }[], progress: (line: string) => void): Promise<void> {
  const unformatted = nodes.filter(({ node }) => formattedClusterId(node) === undefined);
  if (unformatted.length === 0) return;
  // The cluster id is a Kafka Uuid: 16 random bytes in unpadded base64url, as `kafka-storage random-uuid` prints.
  const clusterId = kafkaNodes(config).map(formattedClusterId).find((id) => id !== undefined) ?? randomBytes(16).toString('base64url');
  await Promise.all(
    unformatted.map(({ node, log4j }) => {
      progress(`kafka: formatting ${dataDir(node)}`);
      return runToEnd(
        `formatting ${dataDir(node)} failed`,
        javaCommand,
        ['-cp', classpath, `-Dlog4j2.configurationFile=${log4j}`, 'kafka.tools.StorageTool', 'format', `--cluster-id=${clusterId}`, '-c', propertiesFile(node)],
        logFile(config.paths, node.name),
        120_000,
      );
    }),
  );
}

/** The port the running node was started with, read back from the file it was started from. */
function startedPort(node: KafkaNode): number | undefined {
  if (!existsSync(propertiesFile(node))) return undefined;
  const match = /^listeners=[A-Z]+:\/\/[^:]+:(\d+)/m.exec(readFileSync(propertiesFile(node), 'utf8'));
  return match ? Number(match[1]) : undefined;
}

/**
 * The port opens before the broker serves requests, and a broker serves metadata while
 * still fenced; it lists itself among the brokers only once the controller unfenced it.
 * A controller answers on its port once it serves the quorum.
 */
async function nodeReady(host: string, node: KafkaNode): Promise<boolean> {
  if (!(await portAnswers(host, node.port))) return false;
  if (node.roles === 'controller') return true;
  // imported here: every command that takes the stack's defaults imports this module, and only `stack` asks the broker
  const { Admin } = await import('@platformatic/kafka');
  const admin = new Admin({ clientId: 'offsetlake-stack', bootstrapBrokers: [`${host}:${node.port}`], retries: false, timeout: 2000 });
  try {
    const metadata = await admin.metadata({ topics: [] });
    return metadata.brokers.has(node.nodeId);
  } finally {
    await admin.close().catch(() => {});
  }
}

function nodeTitle(node: KafkaNode, pid?: number): string {
  const what = node.roles === 'controller' ? 'the Kafka controller' : node.roles === 'broker' ? `Kafka broker ${node.nodeId}` : 'Kafka';
  return pid === undefined ? what : `${what} (pid ${pid})`;
}

async function waitReady(config: StackConfig, node: KafkaNode, pid: number): Promise<void> {
  await waitUntil(`${nodeTitle(node)} on ${config.host}:${node.port}`, () => nodeReady(config.host, node), { timeoutMs: 90_000, pid, log: logFile(config.paths, node.name) });
}

function detail(node: KafkaNode, brokers: number): string {
  if (node.roles === 'broker,controller') return `Apache Kafka ${kafkaVersion}`;
  return `${node.roles === 'controller' ? `controller of ${brokers} brokers` : `broker ${node.nodeId} of ${brokers}`}, Apache Kafka ${kafkaVersion}`;
}

function running(config: StackConfig, node: KafkaNode, pid: number, brokers: number): ServiceStatus {
  return { name: node.name, state: 'running', pid, endpoint: `${config.host}:${startedPort(node) ?? node.port}`, log: logFile(config.paths, node.name), detail: detail(node, brokers) };
}

/** What is wrong with reusing a running node for `config` (another port, settings it lacks): said, never silently reused. */
function startedOtherwise(config: StackConfig, node: KafkaNode, pid: number): string | undefined {
  const port = startedPort(node) ?? node.port;
  if (port !== node.port) return `${nodeTitle(node, pid)} already runs on port ${port}; run \`offsetlake stack down\` before moving it to ${node.port}`;
  // A broker started without settings this `up` asks for (the tests' infinite retention)
  // would act otherwise than its caller expects.
  const startedWith = new Set(readFileSync(propertiesFile(node), 'utf8').split('\n').map((line) => line.trim()));
  const missing = Object.entries(config.brokerSettings ?? {}).filter(([key, value]) => !startedWith.has(`${key}=${value}`));
  if (missing.length > 0) return `${nodeTitle(node, pid)} runs without ${missing.map(([key, value]) => `${key}=${value}`).join(', ')}, which this start asks for (the tests need it); run \`offsetlake stack down\` and start again`;
  return undefined;
}

function heap(node: KafkaNode): string[] {
  // A cluster's three brokers and controller share a small machine with the rest of the stack.
  if (node.roles === 'broker,controller') return ['-Xms256m', '-Xmx512m'];
  if (node.roles === 'broker') return ['-Xms128m', '-Xmx384m'];
  return ['-Xms64m', '-Xmx256m'];
}

/** Starts one node (formatted, its config written) and returns its pid; does not wait for it. */
function startNode(config: StackConfig, javaCommand: string, classpath: string, node: KafkaNode, log4j: string, progress: (line: string) => void): number {
  progress(`kafka: starting ${detail(node, config.brokers)} on ${config.host}:${node.port}`);
  return startDaemon(config.paths, {
    name: node.name,
    command: javaCommand,
    args: [
      ...heap(node),
      '-XX:+UseG1GC',
      '-XX:MaxGCPauseMillis=20',
      '-XX:+ExitOnOutOfMemoryError',
      '-Djava.awt.headless=true',
      `-Dlog4j2.configurationFile=${log4j}`,
      '-cp',
      classpath,
      'kafka.Kafka',
      propertiesFile(node),
    ],
    cwd: node.home,
  });
}

/**
 * Stops one node: SIGTERM (a broker's controlled shutdown moves its leaders away first;
 * under 2 s for one node, the long grace is for a loaded machine), SIGKILL only for a hang.
 * `kafkaService.up` starts it again, and only it.
 */
export async function stopKafkaNode(config: StackConfig, node: KafkaNode): Promise<void> {
  await stopDaemon(config.paths, node.name, 30_000);
}

export const kafkaService: Service = {
  name,

  /** Starts the nodes that do not run (all of them, or the one a scenario stopped), then waits until every one answers. */
  async up(config, progress) {
    const nodes = kafkaNodes(config);
    const shapes = bothShapes(config);
    const otherShape = (config.brokers === 1 ? shapes.cluster : shapes.single).filter((node) => runningPid(config.paths, node.name) !== undefined);
    if (otherShape.length > 0) {
      throw new DaemonStartError(
        `Kafka already runs here ${config.brokers === 1 ? `as a cluster of ${clusterSize} brokers` : 'as one broker'} (${otherShape.map((node) => node.name).join(', ')}); run \`offsetlake stack down\` before starting it with ${config.brokers === 1 ? 'one broker' : `--brokers ${config.brokers}`}`,
      );
    }
    const pids = new Map<string, number>();
    for (const node of nodes) {
      const pid = runningPid(config.paths, node.name);
      if (pid === undefined) continue;
      const problem = startedOtherwise(config, node, pid);
      if (problem !== undefined) throw new DaemonStartError(problem);
      pids.set(node.name, pid);
    }
    const missing = nodes.filter((node) => !pids.has(node.name));
    if (missing.length > 0) {
      const javaCommand = findJava(17, javaHint);
      const classpath = join(fetchJars(config, progress), '*');
      for (const node of missing) {
        const ports: [number, string][] = node.roles === 'controller' ? [[node.port, 'OFFSETLAKE_CONTROLLER_PORT']] : [[node.port, node.nodeId === 1 ? 'OFFSETLAKE_KAFKA_PORT' : 'OFFSETLAKE_BROKER_PORTS']];
        if (node.roles === 'broker,controller') ports.push([config.controllerPort, 'OFFSETLAKE_CONTROLLER_PORT']);
        for (const [port, variable] of ports) {
          if (await portAnswers(config.host, port)) throw new DaemonStartError(`port ${port} on ${config.host} is taken; set ${variable} to another port`);
        }
      }
      const written = missing.map((node) => ({ node, log4j: writeConfig(config, node).log4j }));
      await format(config, javaCommand, classpath, written, progress);
      // The controller first: brokers register with it (and wait for it if it is late).
      for (const { node, log4j } of written) pids.set(node.name, startNode(config, javaCommand, classpath, node, log4j, progress));
    }
    // Cheap for nodes that ran already, and covers an earlier `up` interrupted while they started.
    await Promise.all(nodes.map((node) => waitReady(config, node, pids.get(node.name)!)));
    return nodes.map((node) => running(config, node, pids.get(node.name)!, config.brokers));
  },

  async down(config) {
    // Whatever runs here, of either shape: the brokers side by side, then the controller they report to.
    const nodes = runningShape(config);
    await Promise.all(nodes.filter((node) => node.roles !== 'controller').map((node) => stopKafkaNode(config, node)));
    await Promise.all(nodes.filter((node) => node.roles === 'controller').map((node) => stopKafkaNode(config, node)));
    return nodes.map((node) => stoppedStatus(config.paths, node.name));
  },

  async status(config) {
    const nodes = runningShape(config);
    return nodes.map((node) => daemonStatus(config.paths, node.name, (pid) => running(config, node, pid, nodes.length === 1 ? 1 : nodes.length - 1)));
  },
};
