/**
 * `stack up --brokers N`: which counts and ports are taken, what is said of the others, and
 * the nodes a cluster is made of (a controller of its own and brokers 1…3, the shape
 * src/stack/kafka.ts explains), written from the description, not from the code.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseBrokerCount, stackConfig } from '../../src/stack/config.js';
import { kafkaBootstrap, kafkaNodes } from '../../src/stack/kafka.js';

const home = mkdtempSync(join(tmpdir(), 'offsetlake-brokers-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe('stack brokers', () => {
  it('one broker by default: a single node that is broker and controller, plain "kafka", clients reach it on the Kafka port', () => {
    const config = stackConfig({ home }, { OFFSETLAKE_KAFKA_PORT: '41500' });
    expect(kafkaNodes(config).map((n) => [n.name, n.nodeId, n.roles, n.port])).toEqual([['kafka', 1, 'broker,controller', 41500]]);
    expect(kafkaBootstrap(config)).toBe('127.0.0.1:41500');
  });

  it('three brokers: a controller on the controller port and brokers 1, 2, 3 on the Kafka port and OFFSETLAKE_BROKER_PORTS; clients get all three', () => {
    const config = stackConfig({ home }, { OFFSETLAKE_BROKERS: '3', OFFSETLAKE_KAFKA_PORT: '41500', OFFSETLAKE_CONTROLLER_PORT: '41501', OFFSETLAKE_BROKER_PORTS: '41502, 41503' });
    expect(kafkaNodes(config).map((n) => [n.name, n.nodeId, n.roles, n.port])).toEqual([
      ['kafka-controller', 0, 'controller', 41501],
      ['kafka-1', 1, 'broker', 41500],
      ['kafka-2', 2, 'broker', 41502],
      ['kafka-3', 3, 'broker', 41503],
    ]);
    expect(kafkaBootstrap(config)).toBe('127.0.0.1:41500,127.0.0.1:41502,127.0.0.1:41503');
    // the flag wins over the environment
    expect(stackConfig({ home, brokers: 1 }, { OFFSETLAKE_BROKERS: '3' }).brokers).toBe(1);
  });

  it('refuses a count other than 1 or 3, and a cluster without a port for each broker, saying what to set', () => {
    expect(() => parseBrokerCount('--brokers', '2')).toThrow('--brokers must be 1 or 3 (one broker, or a cluster of three), got "2"');
    expect(() => stackConfig({ home }, { OFFSETLAKE_BROKERS: 'three' })).toThrow('OFFSETLAKE_BROKERS must be 1 or 3');
    expect(() => stackConfig({ home, brokers: 3 }, { OFFSETLAKE_BROKER_PORTS: '41502' })).toThrow('3 brokers need 2 ports besides the Kafka port (OFFSETLAKE_BROKER_PORTS or --broker-ports N,N), got 1: 41502');
    expect(() => stackConfig({ home, brokers: 3 }, { OFFSETLAKE_BROKER_PORTS: '41502,x' })).toThrow('OFFSETLAKE_BROKER_PORTS must be a port number from 1 to 65535, got "x"');
  });
});
