/**
 * The stack's Schema Registry: Apicurio Registry 3.3, whose Confluent-compatible API serves
 * Confluent clients. It keeps its schemas in the stack's own Kafka (KafkaSQL storage), so they
 * live and die with the records whose ids point at them. Fetched from Maven Central by `mvn`.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findJava } from './java.js';
import { verifyDownload } from './downloads.js';
import {
  daemonStatus,
  DaemonStartError,
  downDaemon,
  logFile,
  portAnswers,
  requireCommand,
  runningPid,
  startDaemon,
  waitUntil,
} from './process.js';
import { kafkaBootstrap } from './kafka.js';
import type { Service, ServiceStatus, StackConfig } from './types.js';

const name = 'registry';
/** 3.0.x runs on Java 17 but stores a whitespace variant of a schema under a new id, unlike Confluent. */
export const registryVersion = '3.3.3';
/** Confluent clients take this, not the server root, as the registry URL. */
export const ccompatPath = '/apis/ccompat/v7';
/** 3.3 is compiled for Java 21 (class file 65). */
const minJava = 21;
const javaHint =
  `Apicurio Registry ${registryVersion} needs Java ${minJava}+: set JAVA_HOME to a Java ${minJava}+ JDK or install one ` +
  '(Temurin 21 or 25; openjdk-21-jre-headless on Debian 13 or Ubuntu 24.04; Debian 12 has none)';
/** Leading underscore, like Confluent's `_schemas`, so that topic listings can tell them apart from data. */
const topics = { journal: '_registry-journal', snapshots: '_registry-snapshots', events: '_registry-events' };
/** Written last into a fetched folder: its absence means the fetch did not finish. */
const completeMarker = '.complete';

export function registryUrl(config: StackConfig, port = config.registryPort): string {
  return `http://${config.host}:${port}${ccompatPath}`;
}

function registryHome(config: StackConfig): string {
  return join(config.paths.home, 'registry');
}

/** Shared by every checkout, so a second checkout starts without fetching. */
function appDir(config: StackConfig): string {
  return join(config.paths.cache, `apicurio-registry-${registryVersion}`);
}

/** Unpacks into a scratch folder renamed into place, so a fetch cut short is never mistaken for a complete one. */
function fetchRegistry(config: StackConfig, progress: (line: string) => void): string {
  const app = appDir(config);
  // Before use, each time, and before a fetch is marked complete: every file as pinned.
  const verify = (dir: string) => verifyDownload(dir, `apicurio-registry-${registryVersion}`, { skip: [completeMarker] });
  if (existsSync(join(app, completeMarker))) {
    verify(app);
    return app;
  }
  requireCommand('mvn', 'apt-get install maven');
  progress(`registry: fetching Apicurio Registry ${registryVersion} (about 160 MB) from Maven Central into ${app}`);
  const scratch = mkdtempSync(`${app}-fetch-`);
  const log = logFile(config.paths, `${name}-fetch`);
  const out = openSync(log, 'a');
  try {
    // Run inside the scratch folder: a pom.xml in the caller's folder would make mvn build that project.
    const result = spawnSync(
      'mvn',
      [
        '-B',
        '--no-transfer-progress',
        // A file whose published .sha1 differs fails the fetch (Maven's default only warns).
        '--strict-checksums',
        // Pinned: the plugin version a bare `dependency:` resolves to differs between Maven releases.
        'org.apache.maven.plugins:maven-dependency-plugin:3.8.1:unpack',
        // Published as tar.gz only from 3.1 on; the `all` classifier is the Quarkus fast-jar.
        `-Dartifact=io.apicurio:apicurio-registry-app:${registryVersion}:tar.gz:all`,
        `-DoutputDirectory=${join(scratch, 'app')}`,
      ],
      { cwd: scratch, stdio: ['ignore', out, out], timeout: 15 * 60_000 },
    );
    if (result.error || result.status !== 0 || !existsSync(join(scratch, 'app', 'quarkus-run.jar'))) {
      throw new DaemonStartError(`mvn could not fetch Apicurio Registry ${registryVersion} (${result.error?.message ?? `exit ${result.status}`}); see ${log}`);
    }
    verify(join(scratch, 'app'));
    writeFileSync(join(scratch, 'app', completeMarker), `apicurio-registry ${registryVersion}\n`);
    rmSync(app, { recursive: true, force: true });
    try {
      renameSync(join(scratch, 'app'), app);
    } catch (error) {
      // Another checkout's `up` finished the same fetch first.
      if (!existsSync(join(app, completeMarker))) throw error;
    }
    return app;
  } finally {
    closeSync(out);
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The port a running registry was started with, read from its command line, so `status` never guesses. */
function startedPort(pid: number): number | undefined {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const flag = args.find((arg) => arg.startsWith('-Dquarkus.http.port='));
    return flag ? Number(flag.split('=')[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** The port opens a few seconds before storage is ready; the subject list answers only after that. */
async function registryReady(config: StackConfig, port: number): Promise<boolean> {
  const response = await fetch(`${registryUrl(config, port)}/subjects`, { signal: AbortSignal.timeout(2000) });
  await response.body?.cancel();
  return response.status === 200;
}

async function waitReady(config: StackConfig, port: number, pid: number): Promise<void> {
  // About 7 s on 2 cores, most of it reading the journal back from Kafka.
  await waitUntil(`Schema Registry on ${registryUrl(config, port)}`, () => registryReady(config, port), {
    timeoutMs: 120_000,
    pid,
    log: logFile(config.paths, name),
  });
}

function running(config: StackConfig, pid: number, port: number): ServiceStatus {
  return {
    name,
    state: 'running',
    pid,
    endpoint: registryUrl(config, port),
    log: logFile(config.paths, name),
    detail: `Apicurio Registry ${registryVersion}, schemas in Kafka topic ${topics.journal}`,
  };
}

export const registryService: Service = {
  name,

  async up(config, progress) {
    const already = runningPid(config.paths, name);
    if (already !== undefined) {
      const port = startedPort(already) ?? config.registryPort;
      if (port !== config.registryPort) {
        throw new DaemonStartError(`the Schema Registry (pid ${already}) already runs on port ${port}; run \`offsetlake stack down\` before moving it to ${config.registryPort}`);
      }
      // Cheap, and covers an earlier `up` that was interrupted while the registry started.
      await waitReady(config, port, already);
      return [running(config, already, port)];
    }
    const javaCommand = findJava(minJava, javaHint);
    const app = fetchRegistry(config, progress);
    if (await portAnswers(config.host, config.registryPort)) {
      throw new DaemonStartError(`port ${config.registryPort} on ${config.host} is taken; set OFFSETLAKE_REGISTRY_PORT to another port`);
    }
    // Without its broker the registry neither fails nor listens: it retries forever.
    if (!(await portAnswers(config.host, config.kafkaPort))) {
      throw new DaemonStartError(`the Schema Registry keeps its schemas in Kafka, which does not answer on ${config.host}:${config.kafkaPort}; start Kafka first`);
    }
    const home = registryHome(config);
    mkdirSync(home, { recursive: true });
    progress(`registry: starting Apicurio Registry ${registryVersion} on ${registryUrl(config)}`);
    const pid = startDaemon(config.paths, {
      name,
      command: javaCommand,
      args: [
        '-Xms64m',
        '-Xmx256m',
        '-XX:+UseSerialGC',
        // C1 only: starts about a second sooner, and a registry on a laptop is never CPU-bound.
        '-XX:TieredStopAtLevel=1',
        '-XX:+ExitOnOutOfMemoryError',
        `-Dquarkus.http.host=${config.host}`,
        `-Dquarkus.http.port=${config.registryPort}`,
        // Health and metrics get a listener of their own (9000 by default); any free port keeps it out of the way.
        `-Dquarkus.management.host=${config.host}`,
        '-Dquarkus.management.port=0',
        '-Dquarkus.http.access-log.enabled=false',
        // Its Kafka clients print every config value at INFO: some 600 lines of log per start.
        '-Dquarkus.log.category."org.apache.kafka".level=WARN',
        '-Dapicurio.storage.kind=kafkasql',
        `-Dapicurio.kafkasql.bootstrap.servers=${kafkaBootstrap(config)}`,
        `-Dapicurio.kafkasql.topic=${topics.journal}`,
        `-Dapicurio.kafkasql.snapshots.topic=${topics.snapshots}`,
        `-Dapicurio.events.kafka.topic=${topics.events}`,
        // Startup waits out several empty polls of the journal; at the default 5 s it took 25 s instead of 7.
        '-Dapicurio.kafkasql.consumer.poll.timeout=500',
        // Both default to /tmp, shared by everything on the machine.
        `-Dapicurio.storage.snapshot.location=${home}`,
        `-Dapicurio.import.work-dir=${home}`,
        '-jar',
        join(app, 'quarkus-run.jar'),
      ],
      cwd: home,
    });
    await waitReady(config, config.registryPort, pid);
    return [running(config, pid, config.registryPort)];
  },

  async down(config) {
    // Stops in about 2 s; SIGKILL only if it hangs.
    return [await downDaemon(config.paths, name, 20_000)];
  },

  async status(config) {
    return [daemonStatus(config.paths, name, (pid) => running(config, pid, startedPort(pid) ?? config.registryPort))];
  },
};
