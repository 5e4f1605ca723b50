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
import { closedPort } from '../../test/helpers/ports.js';

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
  restartKafka(): Promise<void>;
  /** Waits until the registry, started in the background, answers. */
  registryReady(): Promise<void>;
  stopRegistry(): Promise<void>;
  startRegistry(): Promise<void>;
  down(): Promise<void>;
}

async function chaosPorts(): Promise<Pick<StackConfig, 'kafkaPort' | 'controllerPort' | 'registryPort' | 'postgresPort'>> {
  const base = process.env.OFFSETLAKE_CHAOS_PORTS;
  const ports = new Set(base ? [0, 1, 2, 3].map((i) => Number(base) + i) : []);
  // Each is free when asked, and the system may hand one out twice: asked until four differ.
  while (ports.size < 4) ports.add(await closedPort());
  const [kafkaPort, controllerPort, registryPort, postgresPort] = [...ports];
  return { kafkaPort: kafkaPort!, controllerPort: controllerPort!, registryPort: registryPort!, postgresPort: postgresPort! };
}

export async function startChaosStack(progress: (line: string) => void): Promise<ChaosStack> {
  const parent = stackConfig().paths.home;
  const home = mkdtempSync(join(parent, 'chaos-'));
  // Postgres runs as an unprivileged user, who must be able to reach its data folder.
  chmodSync(home, 0o755);
  // An environment of its own: DATABASE_URL (a test's pooled catalog) must not make Postgres external.
  const config = stackConfig({ home, ...(await chaosPorts()) }, {});
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
    async restartKafka() {
      await kafkaService.down(config);
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
