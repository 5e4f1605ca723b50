/**
 * The faults of a three-broker cluster that the cluster scenarios inject (a reassignment
 * and the preferred-leader election Kafka runs after it: what an operator or MSK itself
 * does), and the waits between them that an operator makes (every replica back in sync
 * before the next broker goes down, as MSK's rolling patch waits).
 */
import { Admin, kGetApi, kGetBootstrapConnection, type API, type ClusterPartitionMetadata, type Connection } from '@platformatic/kafka';
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

/** Waits until every replica of `topic` is in sync again, as MSK waits before it restarts the next broker. */
export async function waitInSync(stack: ChaosStack, topic: string, timeoutMs = 120_000): Promise<void> {
  const ok = await waitForPartitions(stack, [topic], (p) => p.leader >= 0 && p.isr.length === p.replicas.length, timeoutMs);
  if (!ok) throw new Error(`the replicas of ${topic} were not all in sync ${timeoutMs / 1000} s after the fault was repaired`);
}

type ReassignArgs = [timeoutMs: number, allowReplicationFactorChange: boolean, topics: { name: string; partitions: { partitionIndex: number; replicas: number[] | null }[] }[]];
interface ReassignResponse { errorCode: number; errorMessage: string | null; responses: { name: string; partitions: { partitionIndex: number; errorCode: number; errorMessage: string | null }[] }[] }

/** AlterPartitionReassignments (which the admin client has no method for), sent to any broker: it forwards it to the controller. */
async function reassign(stack: ChaosStack, topic: string, replicas: number[][]): Promise<void> {
  const admin = stack.engine.kafka.admin();
  const [api, connection] = await Promise.all([
    new Promise<API<ReassignArgs, ReassignResponse>>((done, fail) => admin[kGetApi]<ReassignArgs, ReassignResponse>('AlterPartitionReassignments', (error, found) => (error || !found ? fail(error) : done(found)))),
    new Promise<Connection>((done, fail) => admin[kGetBootstrapConnection]((error, found) => (error || !found ? fail(error) : done(found)))),
  ]);
  const response = await api.async(connection, 30_000, false, [{ name: topic, partitions: replicas.map((list, partitionIndex) => ({ partitionIndex, replicas: list })) }]);
  const failed = response.responses.flatMap((t) => t.partitions).filter((p) => p.errorCode !== 0);
  if (response.errorCode !== 0 || failed.length > 0) throw new Error(`the reassignment of ${topic} failed: ${response.errorMessage ?? failed.map((p) => `partition ${p.partitionIndex}: ${p.errorMessage ?? p.errorCode}`).join('; ')}`);
}

/**
 * Moves the leader of every partition of `topic`: a reassignment that puts first in each
 * replica list a replica that does not lead now, which the controller then makes the
 * leader by a preferred-leader election of its own (the chaos cluster checks leader
 * imbalance every second: auto.leader.rebalance.enable, as on MSK, only sooner). The
 * current leader is not always the first replica (a broker restarted just before still
 * catching up), so rotating the list by one could name the leader again and move nothing.
 * Returns how many leaders moved.
 */
export async function moveLeaders(stack: ChaosStack, topic: string): Promise<number> {
  const before = (await partitionStates(stack, [topic])).get(topic)!;
  const reordered = before.map((p) => {
    const next = p.replicas.find((replica) => replica !== p.leader) ?? p.replicas[0]!;
    return [next, ...p.replicas.filter((replica) => replica !== next)];
  });
  await reassign(stack, topic, reordered);
  // Only the order changed, so no data moves: the election follows within the imbalance check's second.
  // Waited for as the new order itself: metadata read just after the reassignment may still
  // show the old order, whose first replica is the old leader (a CI run saw 0 moves so).
  const deadline = Date.now() + 30_000;
  let after = before;
  let elected = false;
  while (!elected && Date.now() < deadline) {
    await sleep(250);
    after = (await partitionStates(stack, [topic]).catch(() => undefined))?.get(topic) ?? after;
    elected = after.length === reordered.length
      && after.every((p, i) => p.replicas.join(',') === reordered[i]!.join(',') && p.leader === reordered[i]![0] && p.isr.length === p.replicas.length);
  }
  if (!elected) throw new Error(`30 s after the reassignment of ${topic}, its leaders are not its preferred replicas: ${after.map((p, i) => `partition ${i} leader ${p.leader}, replicas ${p.replicas.join(',')}`).join('; ')}`);
  return after.filter((p, i) => p.leader !== before[i]!.leader).length;
}

/** The broker that leads `partition` of `topic` now. */
export async function leaderOf(stack: ChaosStack, topic: string, partition: number): Promise<number> {
  const leader = (await partitionStates(stack, [topic])).get(topic)![partition]?.leader ?? -1;
  if (leader < 0) throw new Error(`${topic}-${partition} has no leader`);
  return leader;
}
