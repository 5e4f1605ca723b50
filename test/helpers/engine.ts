import { randomUUID } from 'node:crypto';
import { openEngine, type Engine } from '../../src/engine.js';
import { createTopic } from '../../src/kafka/topics.js';
import { freshDatabase } from './database.js';

/** An engine on a catalog of its own (a fresh database) and the test broker; `close()` drops the database. */
export async function testEngine(prefix = 'engine'): Promise<Engine> {
  const db = await freshDatabase(prefix);
  const engine = await openEngine({ databaseUrl: db.url });
  return {
    ...engine,
    async close() {
      await engine.close();
      await db.drop();
    },
  };
}

/** A new topic with a unique name. */
export async function newTopic(engine: Engine, partitions = 1, name = 'topic'): Promise<string> {
  const topic = `${name}-${randomUUID().slice(0, 8)}`;
  await createTopic(engine.kafka, topic, partitions);
  return topic;
}
