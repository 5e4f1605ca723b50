/**
 * The read_committed Fetch requests that src/kafka/read.ts sends, sent by hand, so that a
 * benchmark can time their parts or take a response without decoding its records.
 */
import * as lib from '@platformatic/kafka';
import { FetchIsolationLevels, kGetApi, type Admin, type API, type fetchV17, type Reader } from '@platformatic/kafka';
import type { KafkaConnection } from '../src/kafka/connect.js';
import { partitionLeader } from '../src/kafka/topics.js';

type FetchArgs = [number, number, number, number, number, number, fetchV17.FetchRequestTopic[], never[], string];
type Codec = { createRequest: (...a: FetchArgs) => never; parseResponse: (c: number, k: number, v: number, r: Reader) => fetchV17.FetchResponse };

export interface FetchSender {
  /** The Fetch version both sides speak. */
  version: number;
  /** The library's decoder of a whole response (record batches into objects). */
  parseResponse: Codec['parseResponse'];
  /** One sessionless read_committed Fetch of `maxBytes` from `from`; `parse` gets the response body as it arrived. */
  send<T>(from: bigint, maxBytes: number, parse: (correlationId: number, apiKey: number, apiVersion: number, reader: Reader) => T): Promise<T>;
}

export async function fetchSender(kafka: KafkaConnection, topic: string, partition: number): Promise<FetchSender> {
  const client: Admin = kafka.reader();
  const leader = await partitionLeader(client, topic, partition);
  const connection = await client.connections.get({ host: leader.host, port: leader.port });
  const api = await new Promise<API<FetchArgs, fetchV17.FetchResponse>>((resolve, reject) =>
    client[kGetApi]<FetchArgs, fetchV17.FetchResponse>('Fetch', (e, a) => (e || !a ? reject(e) : resolve(a))),
  );
  const codec = (lib as unknown as Record<string, Codec>)[`fetchV${api.version}`]!;
  const topics = (from: bigint, maxBytes: number): fetchV17.FetchRequestTopic[] => [{
    topicId: api.version <= 12 ? topic : leader.topicId,
    partitions: [{ partition, currentLeaderEpoch: leader.leaderEpoch, fetchOffset: from, lastFetchedEpoch: -1, partitionMaxBytes: maxBytes }],
  }];
  const flexible = api.version >= 12;
  return {
    version: api.version,
    parseResponse: codec.parseResponse,
    send: (from, maxBytes, parse) =>
      new Promise((resolve, reject) => {
        connection.send(api.key, api.version, () => codec.createRequest(0, 1, maxBytes, FetchIsolationLevels.READ_COMMITTED, 0, -1, topics(from, maxBytes), [], ''), parse, flexible, flexible, (e, r) => (e ? reject(e) : resolve(r as never)));
      }),
  };
}
