/**
 * One read_committed Fetch sent with the library's request codec of a chosen version, its
 * response body returned undecoded: the broker's own bytes, for fixtures and for tests that
 * compare our decoding with what another client reads.
 */
import * as lib from '@platformatic/kafka';
import { FetchIsolationLevels, type fetchV17 } from '@platformatic/kafka';
import type { KafkaConnection } from '../../src/kafka/connect.js';
import { partitionLeader } from '../../src/kafka/topics.js';

type FetchArgs = [number, number, number, number, number, number, fetchV17.FetchRequestTopic[], never[], string];
type Codec = { createRequest: (...a: FetchArgs) => never };

export async function rawFetchBody(kafka: KafkaConnection, topic: string, partition: number, from: bigint, maxBytes: number, version: number): Promise<Buffer> {
  const client = kafka.reader();
  const leader = await partitionLeader(client, topic, partition);
  const connection = await client.connections.get({ host: leader.host, port: leader.port });
  const codec = (lib as unknown as Record<string, Codec | undefined>)[`fetchV${version}`];
  if (!codec) throw new Error(`the library has no Fetch v${version} request codec`);
  const topics: fetchV17.FetchRequestTopic[] = [{
    topicId: version <= 12 ? topic : leader.topicId,
    partitions: [{ partition, currentLeaderEpoch: leader.leaderEpoch, fetchOffset: from, lastFetchedEpoch: -1, partitionMaxBytes: maxBytes }],
  }];
  const flexible = version >= 12;
  return new Promise((resolve, reject) => {
    connection.send(1, version, () => codec.createRequest(0, 1, maxBytes, FetchIsolationLevels.READ_COMMITTED, 0, -1, topics, [], ''),
      (_c, _k, _v, reader) => Buffer.from(reader.buffer.slice(reader.position, reader.length)),
      flexible, flexible, (error, body) => (error ? reject(error) : resolve(body as Buffer)));
  });
}
