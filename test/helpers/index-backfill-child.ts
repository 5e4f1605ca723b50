/**
 * A driver of one index's backfill in a process of its own (DATABASE_URL, KAFKA_BROKERS),
 * owner `child-driver`, one file per chunk: the test kills it (OFFSETLAKE_FAULT) and
 * another driver goes on.
 */
import { openEngine } from '../../src/runtime/engine.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { runIndexBackfill } from '../../src/index-backfill/index.js';

const engine = await openEngine();
try {
  await runIndexBackfill({ catalog: engine.catalog, source: kafkaSource(engine.kafka), owner: 'child-driver' }, BigInt(process.argv[2]!), { chunkFiles: 1 });
} finally {
  await engine.close();
}
