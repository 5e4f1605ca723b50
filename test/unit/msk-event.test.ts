import { describe, expect, it } from 'vitest';
import { EventShapeError, parseKafkaEvent, toKafkaEvent } from '../../src/indexer/kafka-event.js';
import { loadEvent } from '../fixtures/events.js';

describe('parseKafkaEvent', () => {
  it('reads an MSK event with several partitions, absent keys and headers as lists of {name: bytes}', () => {
    const batches = parseKafkaEvent(loadEvent('msk'));
    expect(batches.map((b) => [b.topic, b.partition, b.firstOffset, b.lastOffset, b.records.length])).toEqual([
      ['orders', 0, 15n, 18n, 2],
      ['orders', 3, 7n, 7n, 1],
    ]);
    const [first, second] = batches[0]!.records;
    expect(Buffer.from(first!.key!).toString()).toBe('order-1');
    expect(Buffer.from(first!.value!).toString()).toBe('{"id":1}');
    expect(first!.headers.map(([name, value]) => [name, Buffer.from(value!).toString()])).toEqual([['source', 'web'], ['trace', '12']]);
    expect(second!.key).toBeNull();
    expect(batches[1]!.records[0]).toMatchObject({ key: null, value: null, timestamp: 1764410402000 });
  });

  it('reads a self-managed event whose partition is a string and whose header bytes are signed', () => {
    const [batch] = parseKafkaEvent(loadEvent('self-managed'));
    expect(batch).toMatchObject({ topic: 'clicks', partition: 2, firstOffset: 100n });
    expect(Array.from(batch!.records[0]!.headers[0]![1]!)).toEqual([255, 0, 127]);
  });

  it('round-trips what toKafkaEvent makes (the events tests and the chaos harness deliver)', () => {
    const batches = parseKafkaEvent(loadEvent('msk'));
    expect(parseKafkaEvent(JSON.parse(JSON.stringify(toKafkaEvent(batches, 'localhost:9092'))))).toEqual(batches);
  });

  it('keeps a null header value null and an empty one empty through what toKafkaEvent makes', () => {
    const records = [{ offset: 4n, timestamp: 1, key: Buffer.alloc(0), value: null, headers: [['h', null], ['h', Buffer.alloc(0)], ['h', Buffer.from([1])]] as [string, Buffer | null][] }];
    const [batch] = parseKafkaEvent(JSON.parse(JSON.stringify(toKafkaEvent([{ topic: 't', partition: 0, records }], 'localhost:9092'))));
    expect(batch!.records[0]!.headers.map(([name, value]) => [name, value === null ? null : Array.from(value)])).toEqual([['h', null], ['h', []], ['h', [1]]]);
    expect(batch!.records[0]!.key).toEqual(Buffer.alloc(0));
    expect(batch!.records[0]!.value).toBeNull();
  });

  it('refuses malformed events with the place and the problem', () => {
    const cases: [unknown, string][] = [
      [null, 'malformed Kafka event: event: expected an object, got null'],
      [{ ...loadEvent('msk'), eventSource: 'aws:sqs' }, 'eventSource: expected one of aws:kafka, SelfManagedKafka, aws:SelfManagedKafka, got "aws:sqs"'],
      [{ eventSource: 'aws:kafka', records: [] }, 'records: expected an object of "topic-partition": [records], got []'],
      [{ eventSource: 'aws:kafka', records: { 'a-0': [{ topic: 'a', partition: 0, offset: -1, timestamp: 1 }] } }, 'records["a-0"][0].offset: expected a non-negative integer, got -1'],
      [{ eventSource: 'aws:kafka', records: { 'a-0': [{ topic: 'a', partition: 0, offset: 1, timestamp: 1, value: 'not base64!' }] } }, 'records["a-0"][0].value: expected base64 text, got "not base64!"'],
      [{ eventSource: 'aws:kafka', records: { 'a-0': [{ topic: 'a', partition: 0, offset: 1, timestamp: 1, value: 'QUJD RA==' }] } }, 'records["a-0"][0].value: expected base64 text, got "QUJD RA=="'],
      [{ eventSource: 'aws:kafka', records: { 'a-0': [{ topic: 'a', partition: 0, offset: 1, timestamp: 1, value: 'QUJ-' }] } }, 'records["a-0"][0].value: expected base64 text, got "QUJ-"'],
      [{ eventSource: 'aws:kafka', records: { 'a-0': [{ topic: 'a', partition: 0, offset: 1, timestamp: 1, value: 'QUJ_' }] } }, 'records["a-0"][0].value: expected base64 text, got "QUJ_"'],
      [{ eventSource: 'aws:kafka', records: { 'a-0': [{ topic: 'a', partition: 0, offset: 1, timestamp: 1, value: 'QQ==QQ==' }] } }, 'records["a-0"][0].value: expected base64 text, got "QQ==QQ=="'],
      [{ eventSource: 'aws:kafka', records: { 'a-0': [{ topic: 'a', partition: 0, offset: 1, timestamp: 1, value: '=QQQ' }] } }, 'records["a-0"][0].value: expected base64 text, got "=QQQ"'],
      [{ eventSource: 'aws:kafka', records: { 'a-0': [{ topic: 'a', partition: 0, offset: 1, timestamp: 1, value: 'QUJDRA=A' }] } }, 'records["a-0"][0].value: expected base64 text, got "QUJDRA=A"'],
      [{ eventSource: 'aws:kafka', records: { 'a-0': [{ topic: 'a', partition: 0, offset: 5, timestamp: 1 }, { topic: 'a', partition: 0, offset: 5, timestamp: 1 }] } }, 'records["a-0"][1].offset: offsets must increase within a partition: 5 follows 5'],
      [{ eventSource: 'aws:kafka', records: { 'a-0': [{ topic: 'a', partition: 1, offset: 5, timestamp: 1 }] } }, 'records["a-0"]: holds records of a-1'],
      [{ eventSource: 'aws:kafka', records: { 'a-0': [{ topic: 'a', partition: 0, offset: 5, timestamp: 1, headers: [{ h: 'x' }] }] } }, 'records["a-0"][0].headers[0].h: expected a list of bytes, got "x"'],
    ];
    for (const [event, message] of cases) {
      expect(() => parseKafkaEvent(event)).toThrow(EventShapeError);
      expect(() => parseKafkaEvent(event)).toThrow(message);
    }
  });
});
