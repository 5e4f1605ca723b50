/**
 * Topics and partitions: which partitions a topic has, where each one's leader is,
 * and the two administrative writes tests and the demo need (create a topic, delete
 * records below an offset, as retention would).
 */
import { ConfigResourceTypes, type Admin, type ClusterMetadata } from '@platformatic/kafka';
import type { KafkaConnection } from './connect.js';
import { isUnknownTopicLibraryError, KafkaRequestError, protocolErrorCodes, UnknownPartitionError, UnknownTopicError } from './errors.js';

export interface PartitionLeader {
  topic: string;
  /** Kafka's topic UUID (Fetch v13+ names topics by it). */
  topicId: string;
  partition: number;
  /** Node id of the leader; -1 while there is none. */
  leader: number;
  leaderEpoch: number;
  host: string;
  port: number;
}

/** Metadata of some topics; an unknown topic is an UnknownTopicError naming it. */
export async function topicMetadata(client: Pick<Admin, 'metadata'>, topics: string[], forceUpdate = false): Promise<ClusterMetadata> {
  try {
    // The library sorts the array it is given in place; hand it a copy.
    return await client.metadata({ topics: [...topics], forceUpdate });
  } catch (error) {
    if (isUnknownTopicLibraryError(error)) {
      const named = topics.find((t) => (error as Error).message.includes(t)) ?? topics[0] ?? '';
      // The library names the topic only when its index is known; check each one if several were asked.
      if (topics.length > 1) {
        for (const topic of topics) {
          try { await client.metadata({ topics: [topic], forceUpdate: true }); } catch (e) { if (isUnknownTopicLibraryError(e)) throw new UnknownTopicError(topic, { cause: error }); }
        }
      }
      throw new UnknownTopicError(named, { cause: error });
    }
    throw error;
  }
}

/** The partition ids of a topic, ascending (0 … n-1). Always asks the broker (new partitions show up at once). */
export async function topicPartitions(kafka: KafkaConnection, topic: string): Promise<number[]> {
  return (await describeTopic(kafka, topic)).partitions;
}

/** A topic's Kafka id (a new one when the topic is deleted and created again) and partition ids, asked of the broker. */
export async function describeTopic(kafka: KafkaConnection, topic: string): Promise<{ topicId: string; partitions: number[] }> {
  const metadata = await topicMetadata(kafka.admin(), [topic], true);
  const info = metadata.topics.get(topic);
  if (!info) throw new UnknownTopicError(topic);
  return { topicId: info.id, partitions: Array.from({ length: info.partitionsCount }, (_, i) => i) };
}

/** The leader of a partition, from the client's metadata (cached for the library's metadataMaxAge unless `forceUpdate`). */
export async function partitionLeader(client: Admin, topic: string, partition: number, forceUpdate = false): Promise<PartitionLeader> {
  const metadata = await topicMetadata(client, [topic], forceUpdate);
  const info = metadata.topics.get(topic);
  if (!info) throw new UnknownTopicError(topic);
  const p = info.partitions[partition];
  if (!Number.isInteger(partition) || partition < 0 || partition >= info.partitionsCount || !p) {
    throw new UnknownPartitionError(topic, partition, info.partitionsCount);
  }
  const broker = metadata.brokers.get(p.leader);
  return { topic, topicId: info.id, partition, leader: p.leader, leaderEpoch: p.leaderEpoch, host: broker?.host ?? '', port: broker?.port ?? -1 };
}

/** Checks that every named partition exists, with one metadata request per call. */
export async function checkPartitions(client: Pick<Admin, 'metadata'>, partitions: { topic: string; partition: number }[]): Promise<ClusterMetadata> {
  const topics = [...new Set(partitions.map((p) => p.topic))];
  const metadata = await topicMetadata(client, topics, true);
  for (const { topic, partition } of partitions) {
    const info = metadata.topics.get(topic);
    if (!info) throw new UnknownTopicError(topic);
    if (!Number.isInteger(partition) || partition < 0 || partition >= info.partitionsCount) throw new UnknownPartitionError(topic, partition, info.partitionsCount);
  }
  return metadata;
}

export interface CreateTopicOptions {
  /** Replication factor; the broker's default when absent. */
  replicas?: number;
  /** Topic configs, e.g. `{ 'retention.ms': '60000', 'message.timestamp.type': 'LogAppendTime' }`. */
  configs?: Record<string, string>;
  /** Succeed when the topic already exists (its partition count is not checked). Default false. */
  ifNotExists?: boolean;
  /** How long to wait for every partition to have a leader (ms). Default 30 s. */
  leaderTimeoutMs?: number;
}

const TOPIC_ALREADY_EXISTS = 36;

/** Creates a topic and waits until every partition has a leader (so reads and writes work at once). */
export async function createTopic(kafka: KafkaConnection, topic: string, partitions: number, options: CreateTopicOptions = {}): Promise<void> {
  if (!Number.isInteger(partitions) || partitions < 1) throw new Error(`a topic needs at least one partition, got ${partitions} for "${topic}"`);
  const admin = kafka.admin();
  try {
    await admin.createTopics({
      topics: [topic],
      partitions,
      ...(options.replicas !== undefined ? { replicas: options.replicas } : {}),
      configs: Object.entries(options.configs ?? {}).map(([name, value]) => ({ name, value })),
    });
  } catch (error) {
    const codes = protocolErrorCodes(error);
    if (codes.includes(TOPIC_ALREADY_EXISTS)) {
      if (!options.ifNotExists) throw new KafkaRequestError('CreateTopics', topic, undefined, TOPIC_ALREADY_EXISTS, { cause: error });
    } else if (codes.length > 0) {
      throw new KafkaRequestError('CreateTopics', topic, undefined, codes[0]!, { cause: error });
    } else {
      throw error;
    }
  }
  const deadline = Date.now() + (options.leaderTimeoutMs ?? 30_000);
  for (;;) {
    try {
      const metadata = await admin.metadata({ topics: [topic], forceUpdate: true });
      const info = metadata.topics.get(topic);
      if (info && info.partitionsCount > 0 && info.partitions.every((p) => p && p.leader >= 0)) return;
    } catch (error) {
      if (!isUnknownTopicLibraryError(error)) throw error;
    }
    if (Date.now() > deadline) throw new Error(`topic "${topic}" was created but its partitions have no leader after ${options.leaderTimeoutMs ?? 30_000} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Deletes a topic (tests clean up with it). */
export async function deleteTopic(kafka: KafkaConnection, topic: string): Promise<void> {
  await kafka.admin().deleteTopics({ topics: [topic] });
}

/**
 * Deletes the records of a partition below `beforeOffset`, as retention does: afterwards
 * the partition's earliest offset is `beforeOffset`. `-1n` means "up to the high
 * watermark". Returns the new earliest offset (Kafka's low watermark).
 */
export async function deleteRecords(kafka: KafkaConnection, topic: string, partition: number, beforeOffset: bigint): Promise<bigint> {
  const admin = kafka.admin();
  await checkPartitions(admin, [{ topic, partition }]);
  let result;
  try {
    result = await admin.deleteRecords({ topics: [{ name: topic, partitions: [{ partition, offset: beforeOffset }] }] });
  } catch (error) {
    const code = protocolErrorCodes(error)[0];
    if (code !== undefined) throw new KafkaRequestError(`DeleteRecords before offset ${beforeOffset}`, topic, partition, code, { cause: error });
    throw error;
  }
  const low = result.find((t) => t.name === topic)?.partitions.find((p) => p.partition === partition)?.lowWatermark;
  if (low === undefined) throw new Error(`DeleteRecords of ${topic}-${partition} returned no low watermark`);
  return low;
}

/** The topic's `cleanup.policy` (`delete`, `compact` or both), as the broker describes it. */
export async function cleanupPolicy(kafka: KafkaConnection, topic: string): Promise<string> {
  const described = await kafka.admin().describeConfigs({
    resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: topic, configurationKeys: ['cleanup.policy'] }],
  });
  return described[0]?.configs.find((c) => c.name === 'cleanup.policy')?.value ?? 'delete';
}

/**
 * Why a topic cannot back a table, if it cannot: compaction removes records from the
 * middle of a partition, so files whose offsets it touched could never be rebuilt.
 */
export function compactionProblem(topic: string, policy: string): string | undefined {
  if (!policy.split(',').map((p) => p.trim()).includes('compact')) return undefined;
  return `topic "${topic}" has cleanup.policy=${policy}: compaction deletes records inside a partition, so files over it could not be rebuilt from Kafka byte for byte; use a topic with cleanup.policy=delete`;
}
