/**
 * Issue 25.2: a topic deleted and created again under the same name is another topic (a
 * new Kafka topic id, offsets from 0 again). A table made on the old one must not read the
 * new one as its own, nor let retention expire its files by the new topic's offsets: its
 * partitions wait, saying what happened and what to do, and everything else goes on.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFiles } from '../../src/catalog/file-reads.js';
import { partitionStatus } from '../../src/table-topic/status.js';
import { findTable } from '../../src/catalog/tables.js';
import { produce } from '../../src/kafka/produce.js';
import { createTopic, deleteTopic } from '../../src/kafka/topics.js';
import type { Engine } from '../../src/runtime/engine.js';
import { runCli } from '../helpers/cli.js';
import { newTopic, testEngine } from '../helpers/engine.js';

let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('topic_identity');
});
afterAll(async () => {
  await engine.close();
});

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 200));
  }
}

const offsetlake = (...args: string[]) => runCli(engine.config.databaseUrl, args);

describe('a topic deleted and created again under a running `run`', () => {
  it('is not read as the old one: its table waits saying why, lag is unknown, retention expires nothing and exits 1, check names why its files cannot be rebuilt; a table made on the new topic indexes it', async () => {
    const topic = await newTopic(engine, 1, 'recreated');
    expect((await offsetlake('table', 'create', 'old_orders', '--topic', topic, '--file-window', '1s')).code).toBe(0);
    const old = await findTable(engine.catalog, 'old_orders');
    expect(old.topicId).toMatch(/^[0-9a-f-]{36}$/);

    const run = spawn(process.execPath, ['bin/offsetlake.js', 'run'], { env: { ...process.env, DATABASE_URL: engine.config.databaseUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    run.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((done) => run.on('exit', (code) => done(code)));
    try {
      await produce(engine.kafka, topic, Array.from({ length: 100 }, (_, i) => ({ value: JSON.stringify({ old: i }) })));
      const indexedEnd = async () => (await partitionStatus(engine, 'old_orders'))[0]!.indexedEnd;
      await until(async () => (await indexedEnd()) === 100n, 'the old topic to be indexed');
      const filesBefore = await listFiles(engine.catalog, old.tableId);
      expect(filesBefore.reduce((n, f) => n + Number(f.recordCount), 0)).toBe(100);

      await deleteTopic(engine.kafka, topic);
      for (let attempt = 0; ; attempt++) {
        try {
          await createTopic(engine.kafka, topic, 1);
          break;
        } catch (error) {
          if (attempt > 100) throw error; // the old topic may still be being deleted
          await new Promise((done) => setTimeout(done, 200));
        }
      }
      await produce(engine.kafka, topic, Array.from({ length: 60 }, (_, i) => ({ value: JSON.stringify({ new: i }) })));
      // and past the old end, so that a reader that trusted offsets would read on into it
      await produce(engine.kafka, topic, Array.from({ length: 60 }, (_, i) => ({ value: JSON.stringify({ new: 60 + i }) })));

      const said = /^Kafka topic "recreated-\w+" was deleted and created again since table old_orders was made on it \(topic id [0-9a-f-]{36}, now [0-9a-f-]{36}\): its offsets are another topic's\. Table old_orders reads nothing more from it and retention expires none of its files; to index the new topic, drop the table and create it again \(`offsetlake table drop old_orders`, then `offsetlake table create old_orders --topic recreated-\w+` with its settings\)/;
      await until(async () => said.test((await partitionStatus(engine, 'old_orders'))[0]!.waitingReason ?? ''), 'the partition to say why it waits');
      const [status] = await partitionStatus(engine, 'old_orders');
      expect(status!.indexedEnd).toBe(100n);
      expect(status!.lag).toBeNull();
      expect(status!.topicProblem).toMatch(said);
      // the runner's next look at its tables says it too, once
      await until(() => /table old_orders: Kafka topic "recreated-\w+" was deleted and created again since table old_orders was made on it/.test(stderr), 'the runner to say it');
      const told = await offsetlake('status', 'old_orders');
      expect(told.code).toBe(1);
      expect(told.stderr).toMatch(/old_orders: Kafka topic "recreated-\w+" was deleted and created again since table old_orders was made on it/);

      const retention = await offsetlake('retention', '--json');
      expect(retention.code).toBe(1);
      expect(JSON.parse(retention.stdout).failedTables.map((f: { table: string; step: string; reason: string }) => [f.table, f.step, said.test(f.reason)])).toEqual([
        ['old_orders', 'retention', true],
        ['old_orders', 'discovery', true],
      ]);
      const after = await listFiles(engine.catalog, old.tableId, { includeExpired: true });
      expect(after.map((f) => [f.dataFileId, f.expiredAt])).toEqual(filesBefore.map((f) => [f.dataFileId, null]));

      const check = await offsetlake('check', 'old_orders');
      expect(check.code).toBe(1);
      expect(check.stderr).toMatch(/cannot be rebuilt: Kafka topic "recreated-\w+" was deleted and created again since table old_orders was made on it/);

      // the new topic is a topic like any other: a table made on it now indexes it
      expect((await offsetlake('table', 'create', 'new_orders', '--topic', topic, '--file-window', '1s')).code).toBe(0);
      await produce(engine.kafka, topic, Array.from({ length: 5 }, (_, i) => ({ value: JSON.stringify({ newer: i }) })));
      await until(async () => (await partitionStatus(engine, 'new_orders'))[0]!.indexedEnd === 125n, 'the new table to index what came after it');
      expect((await partitionStatus(engine, 'old_orders'))[0]!.indexedEnd).toBe(100n);
    } finally {
      run.kill('SIGTERM');
    }
    expect(await exited, stderr).toBe(0);
  }, 240_000);
});
