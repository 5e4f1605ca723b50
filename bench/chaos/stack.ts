/**
 * A stack of its own for the fault scenarios: a Kafka broker, a Schema Registry and a
 * Postgres that the scenarios kill and restart, so that nothing else using the
 * checkout's stack (a `run`, other test files) is cut off with them. Started with the
 * stack's own daemon handling (src/stack), in a fresh home, on free loopback ports
 * (`OFFSETLAKE_CHAOS_PORTS=N` takes N … N+3 instead).
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { openEngine, type Engine } from '../../src/runtime/engine.js';
import { stackConfig } from '../../src/stack/config.js';
import { kafkaService } from '../../src/stack/kafka.js';
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
  /** Waits until the registry, started in the background, answers. */
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
function chaosPorts(): Pick<StackConfig, 'kafkaPort' | 'controllerPort' | 'registryPort' | 'postgresPort'> {
  // by default 2,592 below the shared stack's Kafka port (29092: 26500), so that a CI run
  // beside this one, on ports of its own, moves these with its own
  const text = process.env.OFFSETLAKE_CHAOS_PORTS ?? String(Number(process.env.OFFSETLAKE_KAFKA_PORT ?? 29092) - 2592);
  const base = Number(text);
  if (!Number.isInteger(base) || base < 1 || base > 65532) throw new Error(`OFFSETLAKE_CHAOS_PORTS must be a port number N (N to N+3 are used), got "${text}"`);
  return { kafkaPort: base, controllerPort: base + 1, registryPort: base + 2, postgresPort: base + 3 };
}

export async function startChaosStack(progress: (line: string) => void): Promise<ChaosStack> {
  const parent = stackConfig().paths.home;
  const home = mkdtempSync(join(parent, 'chaos-'));
  // Postgres runs as an unprivileged user, who must be able to reach its data folder.
  chmodSync(home, 0o755);
  // An environment of its own: DATABASE_URL (a test's pooled catalog) must not make Postgres external.
  const config = stackConfig({ home, ...(chaosPorts()) }, {});
  const say = (line: string) => progress(`[chaos stack] ${line}`);
  await Promise.all([kafkaService.up(config, say), postgresService.up(config, say)]);
  // The registry takes the longest to start and only the Avro scenario needs it: it comes up meanwhile.
  let registryStarting = registryService.up(config, say);
  registryStarting.catch(() => {});
  const env = { KAFKA_BROKERS: `${config.host}:${config.kafkaPort}`, SCHEMA_REGISTRY_URL: registryUrl(config), DATABASE_URL: catalogDatabaseUrl(config) };
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
    async registryReady() {
      await registryStarting;
    },
    async stopRegistry() {
      await registryStarting;
      await registryService.down(config);
    },
    async startRegistry() {
      registryStarting = registryService.up(config, say);
      await registryStarting;
    },
    async down() {
      await engine.close();
      await registryStarting.catch(() => {});
      await registryService.down(config);
      await Promise.all([kafkaService.down(config), postgresService.down(config)]);
      rmSync(home, { recursive: true, force: true });
    },
  };
}
