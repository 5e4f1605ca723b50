/**
 * The cluster's fault scenarios of `npm run chaos` (bench/chaos, `brokers: 3`) marked
 * `ci`, each in its bounded (`--short`) version, on a three-broker stack of their own,
 * started for this file alone (chaos.test.ts has the one-broker stack; the shared stack
 * of the other files is left alone). Asserted: the invariants, judged by an independent
 * read_committed reader and a rebuild of every file, and that `serve` never answered a
 * wrong byte. Times (lag recovery) are reported by `npm run chaos`, never asserted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionStates } from '../../bench/chaos/cluster-faults.js';
import { runScenario, scenarios } from '../../bench/chaos/scenarios.js';
import { startChaosStack, type ChaosStack } from '../../bench/chaos/stack.js';
import { createTopic } from '../../src/kafka/topics.js';

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

describe('cluster faults (npm run chaos -- --short)', () => {
  for (const scenario of scenarios.filter((s) => s.ci && s.brokers === 3)) {
    it(`${scenario.name}: ${scenario.does}; nothing lost or duplicated, every partition tiles, every file rebuilds, serve answers no wrong byte`, async () => {
      const result = await runScenario(stack, scenario, { seed: 17, short: true, log: () => {} });
      expect(result.problems).toEqual([]);
      expect(result.produced).toBeGreaterThan(0);
      expect([result.indexed, result.lost, result.duplicated]).toEqual([result.produced, 0, 0]);
      expect(result.filesRebuilt).toBe(result.files);
      expect(result.faults).not.toMatch(/no fault met/);
      expect(result.reads?.served).toBeGreaterThan(0);
      expect(result.reads?.wrong).toBe(0);
    });
  }
});
