/**
 * A stack of its own for the fault scenarios: a Kafka broker (or, `brokers: 3`, a cluster
 * of three and their controller), a Schema Registry and a Postgres that the scenarios kill
 * and restart, so that nothing else using the checkout's stack (a `run`, other test files)
 * is cut off with them. Started with the stack's own daemon handling (src/stack), in a
 * fresh home, on loopback ports of its own (`OFFSETLAKE_CHAOS_PORTS=N` takes N … N+3, and
 * the cluster N+10 … N+15).
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { openEngine, type Engine } from '../../src/runtime/engine.js';
import { stackConfig } from '../../src/stack/config.js';
import { kafkaBootstrap, kafkaBrokers, kafkaService, stopKafkaNode, type KafkaNode } from '../../src/stack/kafka.js';
import { catalogDatabaseUrl, postgresService } from '../../src/stack/postgres.js';
import { isAlive, isZombie, runningPid, sleep } from '../../src/stack/process.js';
import { registryService, registryUrl } from '../../src/stack/registry.js';
import type { StackConfig } from '../../src/stack/types.js';

export interface ChaosStack {
  config: StackConfig;
  /** How an `offsetlake run` child reaches this stack. */
  env: { KAFKA_BROKERS: string; SCHEMA_REGISTRY_URL: string; DATABASE_URL: string };
  /** The scenarios' own view of the catalog and the broker (producing, creating tables, waiting, auditing). */
  engine: Engine;
  /** SIGKILL of the postmaster: no shutdown, no checkpoint; the next start recovers from the WAL. */
  killPostgres(): Promise<void>;
  startPostgres(): Promise<void>;
  /** A controlled shutdown of the broker (SIGTERM), then a start. */
  killKafka(): Promise<void>;
  restartKafka(): Promise<void>;
  /** The broker stopped (controlled shutdown), and started again: Kafka unreachable in between. */
  stopKafka(): Promise<void>;
  startKafka(): Promise<void>;
  /** The brokers (a cluster's three; the one broker otherwise). */
  brokers: KafkaNode[];
  /** Cluster: SIGKILL of one broker (no controlled shutdown; its leaders move only once the controller's session with it times out). */
  killBroker(nodeId: number): Promise<void>;
  /** Cluster: a controlled shutdown of one broker (its leaders moved away first). */
  stopBroker(nodeId: number): Promise<void>;
  /** Cluster: starts the brokers that do not run, and waits until every one is registered with the controller. */
  startBrokers(): Promise<void>;
  /** SIGSTOP of one broker: it holds its sockets and answers nothing, until `resumeBroker` (SIGCONT). */
  pauseBroker(nodeId: number): void;
  resumeBroker(nodeId: number): void;
  /** Waits until the registry, started in the background (or, on a cluster, only now), answers. */
  registryReady(): Promise<void>;
  stopRegistry(): Promise<void>;
  startRegistry(): Promise<void>;
  down(): Promise<void>;
}

/**
 * Ports N…N+3 (OFFSETLAKE_CHAOS_PORTS, else OFFSETLAKE_KAFKA_PORT - 2592: 26500), below the ephemeral range on purpose: a
 * port the system hands out free comes from that range, where an outgoing connection's
 * source port can take it between a broker stop and its restart.
 */
function chaosPorts(brokers: number): Pick<StackConfig, 'kafkaPort' | 'controllerPort' | 'registryPort' | 'postgresPort' | 'brokerPorts'> {
  // by default 2,592 below the shared stack's Kafka port (29092: 26500), so that a CI run
  // beside this one, on ports of its own, moves these with its own
  const text = process.env.OFFSETLAKE_CHAOS_PORTS ?? String(Number(process.env.OFFSETLAKE_KAFKA_PORT ?? 29092) - 2592);
  const base = Number(text);
  if (!Number.isInteger(base) || base < 1 || base > 65520) throw new Error(`OFFSETLAKE_CHAOS_PORTS must be a port number N (N to N+3 are used, and N+10 to N+15 by a cluster), got "${text}"`);
  // A cluster's stack runs beside the one-broker stack (two test files at once): 10 ports higher.
  const at = brokers === 1 ? base : base + 10;
  return { kafkaPort: at, controllerPort: at + 1, registryPort: at + 2, postgresPort: at + 3, brokerPorts: brokers === 1 ? [] : [at + 4, at + 5] };
}

export async function startChaosStack(progress: (line: string) => void, options: { brokers?: number } = {}): Promise<ChaosStack> {
  const brokers = options.brokers ?? 1;
  const parent = stackConfig().paths.home;
  const home = mkdtempSync(join(parent, brokers === 1 ? 'chaos-' : 'chaos-cluster-'));
  // Postgres runs as an unprivileged user, who must be able to reach its data folder.
  chmodSync(home, 0o755);
  // An environment of its own: DATABASE_URL (a test's pooled catalog) must not make Postgres external.
  const config = {
    ...stackConfig({ home, brokers, ...chaosPorts(brokers) }, {}),
    // The controller's preferred-leader election follows a reassignment (leader-move) within
    // a second instead of MSK's 5 minutes, on any imbalance, so that it happens within a scenario.
    ...(brokers > 1 ? { brokerSettings: { 'leader.imbalance.check.interval.seconds': '1', 'leader.imbalance.per.broker.percentage': '0' } } : {}),
  };
  const say = (line: string) => progress(`[chaos stack] ${line}`);
  await Promise.all([kafkaService.up(config, say), postgresService.up(config, say)]);
  // The registry takes the longest to start and only the Avro scenarios need it: on one
  // broker it comes up meanwhile; no cluster scenario needs it, so there it starts if asked.
  const startRegistry = () => registryService.up(config, say).then(() => {});
  let registryStarting: Promise<void> | undefined = brokers === 1 ? startRegistry() : undefined;
  registryStarting?.catch(() => {});
  const env = { KAFKA_BROKERS: kafkaBootstrap(config), SCHEMA_REGISTRY_URL: registryUrl(config), DATABASE_URL: catalogDatabaseUrl(config) };
  const brokerNode = (nodeId: number): KafkaNode => {
    const node = kafkaBrokers(config).find((n) => n.nodeId === nodeId);
    if (!node) throw new Error(`the chaos stack has no broker ${nodeId}: its brokers are ${kafkaBrokers(config).map((n) => n.nodeId).join(', ')}`);
    return node;
  };
  const brokerPid = (nodeId: number): number => {
    const pid = runningPid(config.paths, brokerNode(nodeId).name);
    if (pid === undefined) throw new Error(`the chaos stack's broker ${nodeId} is not running`);
    return pid;
  };
  const engine = await openEngine({ databaseUrl: env.DATABASE_URL, kafkaBrokers: env.KAFKA_BROKERS, schemaRegistryUrl: env.SCHEMA_REGISTRY_URL });
  return {
    config,
    env,
    engine,
    async killPostgres() {
      const pid = runningPid(config.paths, 'postgres');
      if (pid === undefined) throw new Error('the chaos stack\'s Postgres is not running');
      process.kill(pid, 'SIGKILL');
      while (isAlive(pid) && !isZombie(pid)) await sleep(20);
    },
    async startPostgres() {
      // Backends of a killed postmaster leave when they notice it is gone; until then the
      // new server refuses the shared memory they still hold, so the start is tried again.
      for (let attempt = 1; ; attempt += 1) {
        try {
          await postgresService.up(config, say);
          return;
        } catch (error) {
          if (attempt >= 10) throw error;
          await sleep(500);
        }
      }
    },
    async killKafka() {
      const pid = runningPid(config.paths, 'kafka');
      if (pid === undefined) throw new Error('the chaos stack\'s Kafka broker is not running');
      process.kill(pid, 'SIGKILL');
      while (isAlive(pid) && !isZombie(pid)) await sleep(20);
    },
    async restartKafka() {
      await kafkaService.down(config);
      await kafkaService.up(config, say);
    },
    async stopKafka() {
      await kafkaService.down(config);
    },
    async startKafka() {
      await kafkaService.up(config, say);
    },
    brokers: kafkaBrokers(config),
    async killBroker(nodeId) {
      const pid = brokerPid(nodeId);
      process.kill(pid, 'SIGKILL');
      while (isAlive(pid) && !isZombie(pid)) await sleep(20);
    },
    async stopBroker(nodeId) {
      await stopKafkaNode(config, brokerNode(nodeId));
    },
    async startBrokers() {
      await kafkaService.up(config, say);
    },
    pauseBroker(nodeId) {
      process.kill(brokerPid(nodeId), 'SIGSTOP');
    },
    resumeBroker(nodeId) {
      process.kill(brokerPid(nodeId), 'SIGCONT');
    },
    async registryReady() {
      registryStarting ??= startRegistry();
      await registryStarting;
    },
    async stopRegistry() {
      await registryStarting;
      await registryService.down(config);
    },
    async startRegistry() {
      registryStarting = startRegistry();
      await registryStarting;
    },
    async down() {
      await engine.close();
      // A broker left paused (a scenario that failed) would hold its shutdown for the whole grace.
      for (const node of kafkaBrokers(config)) {
        const pid = runningPid(config.paths, node.name);
        if (pid !== undefined) process.kill(pid, 'SIGCONT');
      }
      await registryStarting?.catch(() => {});
      await registryService.down(config);
      await Promise.all([kafkaService.down(config), postgresService.down(config)]);
      rmSync(home, { recursive: true, force: true });
    },
  };
}
