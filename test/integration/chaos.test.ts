/**
 * The fault scenarios of `npm run chaos` (bench/chaos) marked `ci`, each in its bounded
 * (`--short`) version, on a stack of their own (the scenarios kill its Postgres and restart its
 * broker; the shared stack other test files use is left alone). Asserted: the
 * invariants, judged by an independent read_committed reader and a rebuild of every
 * file. Times are reported by `npm run chaos`, never asserted.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScenario, scenarios } from '../../bench/chaos/scenarios.js';
import { startChaosStack, type ChaosStack } from '../../bench/chaos/stack.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { resolveSettings } from '../../src/table/settings.js';
import { dropTable } from '../../src/catalog/tables.js';
import { produce } from '../../src/kafka/produce.js';
import { createTopic } from '../../src/kafka/topics.js';
import { defaultRunnerOptions, LocalRunner } from '../../src/local/runner.js';
import { expectScenarioHeld } from '../helpers/chaos-expectations.js';
import { auditTable } from '../helpers/table-audit.js';

let stack: ChaosStack;
beforeAll(async () => {
  stack = await startChaosStack(() => {});
});
afterAll(async () => {
  await stack?.down();
});

describe('faults (npm run chaos -- --short)', () => {
  // The one-broker scenarios marked for CI (the others are `npm run chaos` only, to keep this file near 90 s; the cluster's are in chaos-cluster.test.ts).
  for (const scenario of scenarios.filter((s) => s.ci && s.brokers === undefined)) {
    it(`${scenario.name}: ${scenario.does}; nothing lost or duplicated, every partition tiles, every file rebuilds${scenario.cleanPassTwin ? '; the catalog equals one clean pass of the topic file by file' : ''}`, async () => {
      const result = await runScenario(stack, scenario, { seed: 17, short: true, log: () => {} });
      expectScenarioHeld(scenario, result);
    });
  }
});

describe('the audit the scenarios are judged by', () => {
  it('is not blind: a file gone from the catalog (a gap, its records lost) and a file whose checksum is wrong (it does not rebuild) are each found', async () => {
    const { engine } = stack;
    const topic = `audit-${randomUUID().slice(0, 8)}`;
    await createTopic(engine.kafka, topic, 1);
    const table = await createTableFromTopic(engine, { name: `audit_${randomUUID().slice(0, 6)}`, topic, format: 'json', settings: resolveSettings({ file_bytes: '300B' }) });
    try {
      const values = Array.from({ length: 12 }, (_, i) => ({ value: JSON.stringify({ i, pad: 'x'.repeat(80) }) }));
      await produce(engine.kafka, topic, values, { transactionalId: `${topic}-tx` });
      await new LocalRunner(engine, rangeBuilder(engine.catalog), { ...defaultRunnerOptions, once: true, pollIntervalMs: 50 }, () => {}).run();
      const files = await listFiles(engine.catalog, table.tableId);
      expect(files.length).toBeGreaterThanOrEqual(3);
      expect((await auditTable(engine, table)).problems).toEqual([]);

      const [wrong, gone] = [files[0]!, files[1]!];
      await engine.catalog.query('UPDATE offsetlake.data_file SET sha256 = $2 WHERE data_file_id = $1', [wrong.dataFileId, Buffer.alloc(32)]);
      await engine.catalog.query('DELETE FROM offsetlake.data_file WHERE data_file_id = $1', [gone.dataFileId]);
      const audit = await auditTable(engine, table);
      expect(audit.lost).toBe(Number(gone.recordCount) + Number(wrong.recordCount));
      expect(audit.filesRebuilt).toBe(files.length - 2);
      expect(audit.problems.join('\n')).toMatch(new RegExp(`file ${wrong.dataFileId} .* does not rebuild`));
      expect(audit.problems.join('\n')).toMatch(new RegExp(`a range starts at ${files[2]!.startOffset}, expected ${gone.startOffset}`));
    } finally {
      await dropTable(engine.catalog, table.name);
    }
  });
});
