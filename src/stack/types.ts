/**
 * The local stack: a Kafka broker, a Schema Registry and Postgres, each a daemon
 * this project fetches, starts and stops itself on loopback ports.
 */

export interface StackPaths {
  /** Per-checkout state: data, pid files, logs (`./.offsetlake` unless OFFSETLAKE_HOME). */
  home: string;
  /** `${home}/logs`: one `<service>.log` per daemon. */
  logs: string;
  /** `${home}/run`: one `<service>.pid` per daemon this checkout started. */
  run: string;
  /** Downloads shared by every checkout on the machine (`~/.cache/offsetlake` unless OFFSETLAKE_CACHE). */
  cache: string;
}

export interface StackConfig {
  paths: StackPaths;
  host: '127.0.0.1';
  /** Broker 1's port (the only broker's, with one). */
  kafkaPort: number;
  /** The KRaft controller's port: the combined node's with one broker, the controller's own with three. */
  controllerPort: number;
  /** How many Kafka brokers: 1 (a combined broker and controller, the default) or 3 (a cluster, src/stack/kafka.ts says how). */
  brokers: number;
  /** The ports of brokers 2, 3, … (`brokers - 1` of them); unused with one broker. */
  brokerPorts: number[];
  registryPort: number;
  postgresPort: number;
  /** When set, Postgres is external and the stack starts none. */
  databaseUrl: string | undefined;
  /**
   * Broker settings written after the stack's own (server.properties keys): the test suite
   * turns time retention off, since its records carry fixed past timestamps.
   */
  brokerSettings?: Readonly<Record<string, string>>;
}

export interface ServiceStatus {
  name: string;
  state: 'running' | 'stopped' | 'external';
  pid?: number;
  /** How a client reaches it: `127.0.0.1:29092`, `http://…`, `postgres://…`. */
  endpoint?: string;
  log?: string;
  detail?: string;
}

/**
 * Each service module exports one: `kafkaService` (src/stack/kafka.ts), `registryService`
 * (src/stack/registry.ts), `postgresService` (src/stack/postgres.ts, which also exports
 * `catalogDatabaseUrl(config): string`, DATABASE_URL or the embedded server's URL).
 * Readiness waits use `waitUntil` from process.ts; daemons use `startDaemon`/`stopDaemon`,
 * and `daemonStatus`/`downDaemon` for what `status` and `down` say of one.
 */
export interface Service {
  name: string;
  /**
   * Fetches what is missing, starts the daemons unless they already run, waits until they
   * answer. One status per daemon: Kafka with three brokers is a controller and each broker.
   */
  up(config: StackConfig, progress: (line: string) => void): Promise<ServiceStatus[]>;
  /** Stops only the processes this checkout started (by their pid files). */
  down(config: StackConfig): Promise<ServiceStatus[]>;
  status(config: StackConfig): Promise<ServiceStatus[]>;
}
