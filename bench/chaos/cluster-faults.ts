/**
 * The faults of a three-broker cluster that the cluster scenarios inject, through Kafka's
 * own tools where Kafka has one (a reassignment, a preferred-leader election: what an
 * operator or MSK itself does), and the waits between them that an operator makes (every
 * replica back in sync before the next broker goes down, as MSK's rolling patch waits).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Admin, type ClusterPartitionMetadata } from '@platformatic/kafka';
import { sleep } from '../../src/stack/process.js';
import type { ChaosStack } from './stack.js';

/** Partitions of `topics` as one broker answers (default: any of the stack's), asked now, not from a cache. */
export async function partitionStates(stack: ChaosStack, topics: string[], viaBroker?: number): Promise<Map<string, ClusterPartitionMetadata[]>> {
  const brokers = stack.brokers.filter((node) => viaBroker === undefined || node.nodeId === viaBroker);
  // A client of its own: a paused broker holds the stack engine's requests to it until they time out.
  const admin = new Admin({ clientId: 'chaos-metadata', bootstrapBrokers: brokers.map((node) => `${stack.config.host}:${node.port}`), retries: 2, timeout: 3000 });
  try {
    const metadata = await admin.metadata({ topics: [...topics], forceUpdate: true });
    return new Map(topics.map((topic) => [topic, metadata.topics.get(topic)?.partitions ?? []]));
  } finally {
    await admin.close().catch(() => {});
  }
}

/** Polls until `check` holds for every partition of `topics` (asked of `viaBroker`, or any); whether it did within `timeoutMs`. */
export async function waitForPartitions(stack: ChaosStack, topics: string[], check: (partition: ClusterPartitionMetadata) => boolean, timeoutMs: number, viaBroker?: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const states = await partitionStates(stack, topics, viaBroker).catch(() => undefined);
    if (states && [...states.values()].every((partitions) => partitions.length > 0 && partitions.every(check))) return true;
    await sleep(250);
  }
  return false;
}

/** The internal topic the transactional producer's commits go through: it must be in sync too before the next fault. */
const transactionLog = '__transaction_state';

/** Waits until every replica of `topic` (and of the transaction log) is in sync again, as MSK waits before it restarts the next broker. */
export async function waitInSync(stack: ChaosStack, topic: string, timeoutMs = 120_000): Promise<void> {
  const ok = await waitForPartitions(stack, [topic, transactionLog], (p) => p.leader >= 0 && p.isr.length === p.replicas.length, timeoutMs);
  if (!ok) throw new Error(`the replicas of ${topic} and ${transactionLog} were not all in sync ${timeoutMs / 1000} s after the fault was repaired`);
}

/**
 * Moves the leader of every partition of `topic`: a reassignment that rotates each
 * replica list by one (its first replica is the preferred leader), then a preferred-leader
 * election of those partitions, both by Kafka's own tools. Returns how many leaders moved.
 */
export async function moveLeaders(stack: ChaosStack, topic: string): Promise<number> {
  const before = (await partitionStates(stack, [topic])).get(topic)!;
  const folder = mkdtempSync(join(tmpdir(), 'chaos-reassign-'));
  try {
    const reassignment = join(folder, 'reassignment.json');
    const rotated = before.map((p) => [...p.replicas.slice(1), p.replicas[0]!]);
    writeFileSync(reassignment, JSON.stringify({ version: 1, partitions: rotated.map((replicas, partition) => ({ topic, partition, replicas })) }));
    await stack.kafkaTool('org.apache.kafka.tools.reassign.ReassignPartitionsCommand', ['--reassignment-json-file', reassignment, '--execute']);
    // Only the order changed, so no data moves: the reassignment ends at once, and the election can follow.
    const reordered = await waitForPartitions(stack, [topic], (p) => p.replicas.length === rotated[0]!.length && p.isr.length === p.replicas.length, 30_000);
    if (!reordered) throw new Error(`the reassignment of ${topic} did not complete within 30 s`);
    const election = join(folder, 'election.json');
    writeFileSync(election, JSON.stringify({ partitions: before.map((_, partition) => ({ topic, partition })) }));
    await stack.kafkaTool('org.apache.kafka.tools.LeaderElectionCommand', ['--election-type', 'PREFERRED', '--path-to-json-file', election]);
    const after = (await partitionStates(stack, [topic])).get(topic)!;
    return after.filter((p, i) => p.leader !== before[i]!.leader).length;
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/** The broker that leads `partition` of `topic` now. */
export async function leaderOf(stack: ChaosStack, topic: string, partition: number): Promise<number> {
  const leader = (await partitionStates(stack, [topic])).get(topic)![partition]?.leader ?? -1;
  if (leader < 0) throw new Error(`${topic}-${partition} has no leader`);
  return leader;
}
