/** src/kafka/connect.ts: where the brokers come from (no broker needed). */
import { describe, expect, test } from 'vitest';
import { kafkaConnectOptions, parseBrokers } from '../../src/kafka/connect-options.js';

describe('Kafka connect options', () => {
  test('KAFKA_BROKERS is a comma-separated host:port list; a bare host gets 9092', () => {
    expect(parseBrokers('a:1, b ,[::1]:9093')).toEqual(['a:1', 'b:9092', '[::1]:9093']);
    expect(kafkaConnectOptions({}, { KAFKA_BROKERS: 'x:29092,y:29093' })).toEqual({ brokers: ['x:29092', 'y:29093'], clientId: 'offsetlake' });
  });

  test('flags win over the environment', () => {
    expect(kafkaConnectOptions({ brokers: 'f:1', clientId: 'c' }, { KAFKA_BROKERS: 'e:2', KAFKA_CLIENT_ID: 'd' })).toEqual({ brokers: ['f:1'], clientId: 'c' });
    expect(kafkaConnectOptions({}, { KAFKA_BROKERS: 'e:2', KAFKA_CLIENT_ID: 'd' }).clientId).toBe('d');
  });

  test('bad or missing brokers are named', () => {
    expect(() => kafkaConnectOptions({}, {})).toThrow('no Kafka broker given: set KAFKA_BROKERS');
    expect(() => parseBrokers(' , ')).toThrow('KAFKA_BROKERS names no broker');
    expect(() => parseBrokers('a:99999')).toThrow('KAFKA_BROKERS: "a:99999" has no valid port (1-65535)');
    expect(() => kafkaConnectOptions({ brokers: 'a:b:c' }, {})).toThrow('--brokers: "a:b:c" is not host:port');
  });
});
