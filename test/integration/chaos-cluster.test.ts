/**
 * The cluster's fault scenarios of `npm run chaos` (bench/chaos, `brokers: 3`) marked
 * `ci`, each in its bounded (`--short`) version, on a three-broker stack of their own,
 * started for this file alone (chaos.test.ts has the one-broker stack; the shared stack
 * of the other files is left alone). Asserted: the invariants, judged by an independent
 * read_committed reader and a rebuild of every file, and that `serve` never answered a
 * wrong byte. Times (lag recovery) are reported by `npm run chaos`, never asserted.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moveLeaders, partitionStates } from '../../bench/chaos/cluster-faults.js';
import { runScenario, scenarios } from '../../bench/chaos/scenarios.js';
import { startChaosStack, type ChaosStack } from '../../bench/chaos/stack.js';
import { lastStableOffset } from '../../src/kafka/offsets.js';
import { produce } from '../../src/kafka/produce.js';
import { readCommitted } from '../../src/kafka/read.js';
import { createTopic } from '../../src/kafka/topics.js';
import { expectScenarioHeld } from '../helpers/chaos-expectations.js';
import { testedBlock } from '../helpers/docs-blocks.js';
import { readCommittedIndependently } from '../helpers/independent-kafka.js';

let stack: ChaosStack;
beforeAll(async () => {
  stack = await startChaosStack(() => {}, { brokers: 3 });
});
afterAll(async () => {
  await stack?.down();
});

describe('the three-broker stack', () => {
  it('has three brokers, and a topic created without a replication factor gets three replicas, all in sync, with min.insync.replicas=2', async () => {
    const metadata = await stack.engine.kafka.admin().metadata({ topics: [], forceUpdate: true });
    expect([...metadata.brokers.keys()].sort()).toEqual([1, 2, 3]);
    const topic = `cluster-defaults-${Date.now()}`;
    await createTopic(stack.engine.kafka, topic, 3);
    const partitions = (await partitionStates(stack, [topic])).get(topic)!;
    expect(partitions.map((p) => [p.replicas.length, p.isr.length])).toEqual([[3, 3], [3, 3], [3, 3]]);
    const { ConfigResourceTypes } = await import('@platformatic/kafka');
    const described = await stack.engine.kafka.admin().describeConfigs({ resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: topic, configurationKeys: ['min.insync.replicas'] }] });
    expect(described[0]?.configs.find((c) => c.name === 'min.insync.replicas')?.value).toBe('2');
  });
});

describe('docs/cluster.md', () => {
  it('`stack up --brokers 3` and `stack status` as the page shows them, on this stack: the running nodes are kept (same pids), and status lists the controller and each broker', async () => {
    const block = testedBlock('docs/cluster.md', 'cluster-stack');
    expect(block).toBeDefined();
    const { config } = stack;
    // This stack's home and ports, as a user moves them; no DATABASE_URL (the tests' catalog is another).
    const { DATABASE_URL: _shared, ...inherited } = process.env;
    const env = {
      ...inherited,
      OFFSETLAKE_HOME: config.paths.home,
      OFFSETLAKE_KAFKA_PORT: String(config.kafkaPort),
      OFFSETLAKE_CONTROLLER_PORT: String(config.controllerPort),
      OFFSETLAKE_REGISTRY_PORT: String(config.registryPort),
      OFFSETLAKE_POSTGRES_PORT: String(config.postgresPort),
      OFFSETLAKE_BROKER_PORTS: config.brokerPorts.join(','),
    };
    const before = await stack.startBrokers().then(() => kafkaPids());
    const outputs: string[] = [];
    for (const line of block!.split('\n')) {
      const [command, ...args] = line.trim().split(/\s+/);
      expect([command, args[0]]).toEqual(['npx', 'offsetlake']);
      outputs.push((await promisify(execFile)(process.execPath, ['bin/offsetlake.js', ...args.slice(1)], { env, timeout: 240_000 })).stdout);
    }
    expect(kafkaPids()).toEqual(before);
    const status = outputs.at(-1)!.split('\n').filter((line) => line.startsWith('kafka')).map((line) => line.split(/\s+/).slice(0, 3));
    expect(status).toEqual([
      ['kafka-controller', 'running', String(before[0])],
      ['kafka-1', 'running', String(before[1])],
      ['kafka-2', 'running', String(before[2])],
      ['kafka-3', 'running', String(before[3])],
    ]);
  });
});

describe('a command told nothing of the cluster\'s shape', () => {
  it('bootstraps from every broker that runs (no OFFSETLAKE_BROKERS, no KAFKA_BROKERS): with broker 1 stopped, `produce` still writes, and confluent-kafka reads the record back', async () => {
    const { config } = stack;
    const topic = `cluster-bootstrap-${Date.now()}`;
    await createTopic(stack.engine.kafka, topic, 1);
    // Only the stack's home and the first ports, as a user who started `stack up --brokers 3` in another shell has.
    const { DATABASE_URL: _catalog, KAFKA_BROKERS: _brokers, OFFSETLAKE_BROKERS: _shape, OFFSETLAKE_BROKER_PORTS: _ports, ...inherited } = process.env;
    const env = { ...inherited, OFFSETLAKE_HOME: config.paths.home, OFFSETLAKE_KAFKA_PORT: String(config.kafkaPort), OFFSETLAKE_CONTROLLER_PORT: String(config.controllerPort), OFFSETLAKE_REGISTRY_PORT: String(config.registryPort), OFFSETLAKE_POSTGRES_PORT: String(config.postgresPort) };
    await stack.stopBroker(1);
    try {
      const child = promisify(execFile)(process.execPath, ['bin/offsetlake.js', 'produce', topic, '--json'], { env, timeout: 120_000 });
      child.child.stdin!.end('{"key": "k", "value": "written with broker 1 down"}\n');
      const produced = JSON.parse((await child).stdout) as { partitions: { partition: number; firstOffset: string | number }[] };
      expect(produced.partitions.map((p) => p.partition)).toEqual([0]);
      const offset = BigInt(produced.partitions[0]!.firstOffset);
      const [records] = await readCommittedIndependently(stack.env.KAFKA_BROKERS.split(','), [{ topic, partition: 0, start: offset, end: offset + 1n }]);
      expect(records!.map((r) => [r.key?.toString(), r.value?.toString()])).toEqual([['k', 'written with broker 1 down']]);
    } finally {
      await stack.startBrokers();
    }
  });
});

/** The pids of the stack's controller and brokers 1-3, from their pid files. */
function kafkaPids(): number[] {
  return ['kafka-controller', 'kafka-1', 'kafka-2', 'kafka-3'].map((name) => Number(readFileSync(`${stack.config.paths.run}/${name}.pid`, 'utf8').trim()));
}

describe('a committed read whose leader moves', () => {
  it('meets the old leader\'s refusal (NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH), looks the leader up again, says the retry, and returns exactly the committed records confluent-kafka finds', async () => {
    const { kafka } = stack.engine;
    const topic = `cluster-read-${Date.now()}`;
    await createTopic(kafka, topic, 1);
    // Five transactions: five batches, so that a read of one batch per Fetch has Fetches left after the move.
    // Stamped now: the cluster keeps Kafka's default 7-day retention, which deletes older records whenever its check runs.
    const now = Date.now();
    for (let t = 0; t < 5; t += 1) {
      await produce(kafka, topic, Array.from({ length: 20 }, (_, i) => ({ partition: 0, key: `k${t}-${i}`, value: `value ${t}-${i}`, timestamp: now + i })), { transactionalId: `${topic}-tx` });
    }
    const said: string[] = [];
    kafka.onRetry = (line) => said.push(line);
    try {
      const end = await lastStableOffset(kafka, topic, 0);
      const reader = readCommitted(kafka, topic, 0, 0n, end, { maxBytes: 1, prefetch: false });
      const first = await reader.next();
      expect(first?.records.length).toBeGreaterThan(0);
      expect(await moveLeaders(stack, topic)).toBe(1);
      const records = [...first!.records];
      for await (const batch of reader) records.push(...batch.records);
      const [independent] = await readCommittedIndependently(stack.env.KAFKA_BROKERS.split(','), [{ topic, partition: 0, start: 0n, end }]);
      expect(records.map((r) => [r.offset, r.key?.toString(), r.value?.toString()])).toEqual(independent!.map((r) => [r.offset, r.key?.toString(), r.value?.toString()]));
      expect(said.some((line) => /NOT_LEADER_OR_FOLLOWER|FENCED_LEADER_EPOCH/.test(line) && line.includes(`${topic}-0`) && /try 2 of \d+/.test(line))).toBe(true);
    } finally {
      kafka.onRetry = undefined;
    }
  });
});

describe('cluster faults (npm run chaos -- --short)', () => {
  for (const scenario of scenarios.filter((s) => s.ci && s.brokers === 3)) {
    it(`${scenario.name}: ${scenario.does}; nothing lost or duplicated, every partition tiles, every file rebuilds, serve answers no wrong byte`, async () => {
      const result = await runScenario(stack, scenario, { seed: 17, short: true, log: () => {} });
      expectScenarioHeld(scenario, result);
      // every cluster scenario of CI reads through serve
      expect(result.reads).toBeDefined();
    });
  }
});
