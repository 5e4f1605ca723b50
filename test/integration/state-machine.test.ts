/**
 * The backfill state machine's definition (the one that deploys), executed locally with
 * aws-local-stepfunctions against the real broker and Postgres: its Task states run the
 * Lambda's task code, ContinueAsNew starts the next local execution.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChunkResult } from '../../src/backfill/index.js';
import { backfillStates } from '../../src/catalog/backfill.js';
import { listFiles } from '../../src/catalog/file-reads.js';
import { addPartitions, findTable } from '../../src/catalog/tables.js';
import { backfillProgress } from '../../src/catalog/backfill-executions.js';
import type { HistorySource } from '../../src/backfill/chunk.js';
import type { Engine } from '../../src/runtime/engine.js';
import { rangeBuilder } from '../../src/indexer/range-builder.js';
import { indexerFor } from '../../src/indexer/handler.js';
import { kafkaSource } from '../../src/kafka/source.js';
import { produce, type RecordToProduce } from '../../src/kafka/produce.js';
import { StateMachine } from 'aws-local-stepfunctions';
import { localBackfillMachine } from '../../src/backfill/definition.js';
import { localBackfillStarter, runBackfillStateMachine, type LocalBackfillSummary } from '../../src/backfill/local-execution.js';
import { LocalExecutions } from '../../src/state-machines/local-executions.js';
import { resumeBackfills, type ResumedBackfill } from '../../src/backfill/resume.js';
import { chunkTask, planTask } from '../../src/backfill/tasks.js';
import type { SlotStepResult } from '../../src/backfill/slot.js';
import { newTopic, testEngine, testTable } from '../helpers/engine.js';
import { checkTable } from '../helpers/verify.js';

let engine: Engine;
beforeAll(async () => {
  engine = await testEngine('statemachine');
});
afterAll(async () => {
  await engine.close();
});

const t0 = Date.UTC(2026, 10, 29, 12, 0, 0);

/** `count` small JSON records per partition, timestamps 10 ms apart. */
function records(partitions: number, count: number, from = 0): RecordToProduce[] {
  return Array.from({ length: partitions * count }, (_, i) => ({
    partition: i % partitions,
    key: null,
    value: `{"n":${from + i}}`,
    timestamp: t0 + (from + i) * 10,
  }));
}

const tableOf = (topic: string, settings: Record<string, string>) => testTable(engine, topic, settings);

async function fileRanges(tableId: bigint): Promise<string[]> {
  return (await listFiles(engine.catalog, tableId)).map((f) => `${f.partition}:${f.startOffset}-${f.endOffset}/${f.recordCount}/${f.source}`).sort();
}

describe('the backfill state machine, executed locally', () => {
  it('backfills two partitions in 500-offset chunks to Kafka\'s earliest in two executions while live indexing commits between its chunks; backfilled and live files together tile [target, indexed_end) with every record in one file', async () => {
    // Prepare: 1,500 records in each of two partitions, then the table (its indexed ranges start at the LSO, 1,500).
    const topic = await newTopic(engine, 2, 'sm-backfill');
    await produce(engine.kafka, topic, records(2, 1_500));
    const table = await tableOf(topic, { backfill_offsets: '500', file_window: '10m' });
    const runtime = { catalog: engine.catalog, source: kafkaSource(engine.kafka), build: rangeBuilder(engine.catalog), owner: 'live-sm', clock: Date.now, indexers: new Map(), releaseAfterEvent: false };

    // Every commit, in the order it completed: backfill chunks (reported by the execution) and live ranges.
    /** For a live commit: how many offsets each partition's backfill still had to go (indexed_start − target) right after it. */
    type Commit = { kind: 'backfill' | 'live'; execution: number; partition: number; start: bigint; end: bigint; backfillLeft?: bigint[] };
    const commits: Commit[] = [];
    let execution = 0;
    let finished = false;
    /** Produces `count` records per partition and indexes them live (read, seal by flush, commit under the lease), logging each commit. */
    const liveRound = async (count: number, from: number) => {
      await produce(engine.kafka, topic, records(2, count, from));
      for (const partition of [0, 1]) {
        const live = await indexerFor(runtime, table, partition);
        await live.advance();
        const range = await live.flush();
        await live.release();
        expect(range, `live range of partition ${partition}`).toBeDefined();
        // What the catalog says at that moment: where each partition's backfill stands.
        const states = await backfillStates(engine.catalog, table.tableId);
        const backfillLeft = states.map((state) => state.indexedStart - (state.target ?? state.indexedStart));
        commits.push({ kind: 'live', execution: finished ? 0 : execution, partition, start: range!.startOffset, end: range!.endOffset, backfillLeft });
      }
    };
    // Live indexing after the table was made, before any backfill: 100 more per partition, indexed at indexed_end.
    await liveRound(100, 10_000);

    // While the execution runs: a live round inside the execution's first chunk after one chunk has
    // committed, and another inside the second execution's first chunk. The chunk waits for it (its
    // build is the hook), so both rounds commit while an execution is running, between its chunks.
    const build = rangeBuilder(engine.catalog);
    const rounds = [
      { due: () => execution === 1 && commits.some((c) => c.kind === 'backfill'), count: 50, from: 20_000, heldPartition: -1 },
      { due: () => execution === 2, count: 50, from: 30_000, heldPartition: -1 },
    ];
    const chunkOptions = {
      build: async (...args: Parameters<typeof build>) => {
        for (const round of rounds) {
          if (round.heldPartition < 0 && round.due()) {
            round.heldPartition = args[1]; // this partition's chunk waits for the round
            await liveRound(round.count, round.from);
          }
        }
        return build(...args);
      },
    };

    // Act: a budget of 4 chunks per execution over 2 partitions = 2 chunks each; each partition needs 3.
    const chunks: ChunkResult[] = [];
    const executions: unknown[] = [];
    const summary = await runBackfillStateMachine(engine, table.name, (chunk) => {
      chunks.push(chunk);
      commits.push({ kind: 'backfill', execution, partition: chunk.partition, start: BigInt(chunk.chunk!.start), end: BigInt(chunk.chunk!.end) });
    }, {
      chunksPerExecution: 4,
      chunk: chunkOptions,
      onExecution: (n, input) => {
        execution = n;
        executions.push(input);
      },
    }).finally(() => {
      finished = true;
    });

    // Assess: two executions, named after the table and their number; the second was started
    // by the first with no cursor (they live in the catalog), and picked up where it stopped.
    expect(summary.executions).toBe(2);
    expect(summary.executionNames).toEqual([`${table.name}-${table.tableId}-1`, `${table.name}-${table.tableId}-2`]);
    expect(executions[0]).toEqual({ table: table.name, execution: 1, chunksPerExecution: 4 });
    expect(executions[1]).toMatchObject({ table: table.name, chunksPerExecution: 4, execution: 2 });
    expect(Object.keys(executions[1] as object).sort()).toEqual(['AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID', 'chunksPerExecution', 'execution', 'table']);

    const byPartition = (partition: number) => chunks.filter((c) => c.partition === partition).map((c) => [c.outcome, c.chunk?.start, c.chunk?.end]);
    for (const partition of [0, 1]) {
      expect(byPartition(partition)).toEqual([
        ['committed', '1000', '1500'],
        ['committed', '500', '1000'],
        ['committed', '0', '500'],
      ]);
    }
    expect(summary.chunks).toBe(6);
    expect(summary.records).toBe(3_000);
    expect(summary.partitions.map((p) => [p.partition, p.indexedStart, p.done])).toEqual([[0, '0', true], [1, '0', true]]);

    // Live indexing went on during the backfill: both rounds ran, each inside a running execution
    // (1, then 2), each with a backfill chunk of that execution committed after it; when each live
    // range committed, the catalog's backfill of the partition whose chunk was held had not reached its target.
    expect(rounds.map((r) => r.heldPartition >= 0)).toEqual([true, true]);
    const during = commits.filter((c) => c.kind === 'live' && c.execution > 0);
    expect(during.map((c) => [c.execution, c.partition])).toEqual([[1, 0], [1, 1], [2, 0], [2, 1]]);
    for (const live of during) {
      const after = commits.slice(commits.indexOf(live) + 1);
      expect(after.some((c) => c.kind === 'backfill' && c.execution === live.execution), `a backfill chunk of execution ${live.execution} committed after live ${live.start}-${live.end}`).toBe(true);
      const held = rounds[live.execution - 1]!.heldPartition;
      expect(live.backfillLeft![held]! > 0n, `partition ${held}'s backfill had ${live.backfillLeft![held]} offsets to go`).toBe(true);
    }
    const first = commits.findIndex((c) => c.kind === 'backfill');
    expect(first, 'a backfill chunk committed before the first live range of execution 1').toBeLessThan(commits.indexOf(during[0]!));
    // The live ranges follow each other at indexed_end: [1,500, 1,600), [1,600, 1,650), [1,650, 1,700) per partition.
    for (const partition of [0, 1]) {
      expect(commits.filter((c) => c.kind === 'live' && c.partition === partition).map((c) => [c.start, c.end])).toEqual([[1_500n, 1_600n], [1_600n, 1_650n], [1_650n, 1_700n]]);
    }

    // The catalog's order of commits agrees: file ids interleave, backfill files on both sides of the live ones.
    const files = await listFiles(engine.catalog, table.tableId);
    const duringIds = files.filter((f) => f.source === 'live' && f.startOffset >= 1_600n).map((f) => f.dataFileId);
    const backfillIds = files.filter((f) => f.source === 'backfill').map((f) => f.dataFileId);
    expect(backfillIds.some((id) => id < duringIds.reduce((a, b) => (a < b ? a : b)))).toBe(true);
    expect(backfillIds.some((id) => id > duringIds.reduce((a, b) => (a > b ? a : b)))).toBe(true);

    // Backfilled and live files together tile [backfill target, indexed_end) in both partitions:
    // backfill [0, 1,500), live [1,500, 1,700); every committed record is in exactly one file; every file rebuilds.
    const check = await checkTable(engine, await findTable(engine.catalog, table.name));
    for (const partition of [0, 1]) {
      const [state] = await backfillStates(engine.catalog, table.tableId, [partition]);
      expect([state!.target, state!.indexedStart, state!.indexedEnd]).toEqual([0n, 0n, 1_700n]);
      const tiles = (source: 'live' | 'backfill') => [...new Set(check.files.filter((f) => f.partition === partition && f.source === source).map((f) => `${f.startOffset}-${f.endOffset}`))]
        .map((r) => r.split('-').map(BigInt)).sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
      const backfilled = tiles('backfill');
      const live = tiles('live');
      expect(backfilled[0]![0]).toBe(0n);
      expect(backfilled.at(-1)![1]).toBe(1_500n);
      expect(live[0]![0]).toBe(1_500n);
      expect(live.at(-1)![1]).toBe(1_700n);
      expect(check.committedOffsets.get(partition)!.length).toBe(1_700);
    }
    const recordsOf = (source: 'live' | 'backfill') => check.files.filter((f) => f.source === source).reduce((n, f) => n + Number(f.recordCount), 0);
    expect([recordsOf('backfill'), recordsOf('live')]).toEqual([3_000, 400]);
    expect(new Set(check.files.filter((f) => f.source === 'backfill').map((f) => f.sealReason))).toEqual(new Set(['chunk']));

    // A second backfill finds nothing to do: one execution, no chunk, the same files.
    const filesBefore = await fileRanges(table.tableId);
    const again = await runBackfillStateMachine(engine, table.name);
    expect([again.executions, again.chunks]).toEqual([1, 0]);
    expect(await fileRanges(table.tableId)).toEqual(filesBefore);
  });

  it('an unknown table fails the execution with the engine\'s message, after one attempt (a bad request is not retried)', async () => {
    await expect(runBackfillStateMachine(engine, 'no_such_table')).rejects.toThrow('no table named "no_such_table"');
    const { definition, stateMachineArn } = localBackfillMachine();
    let attempts = 0;
    const execution = new StateMachine(definition as never).run({ table: 'no_such_table' } as never, {
      overrides: {
        taskResourceLocalHandlers: {
          Plan: async (event) => {
            attempts += 1;
            return (await planTask({ catalog: engine.catalog, kafka: engine.kafka }, event)) as never;
          },
        },
        retryIntervalOverrides: { Plan: 0 },
      },
      context: { StateMachine: { Id: stateMachineArn }, Execution: { Id: 'local' } } as never,
    });
    await expect(execution.result).rejects.toThrow('no table named');
    expect(attempts).toBe(1);
  });

  it('history = none: the plan has no partition and the execution ends at once', async () => {
    const topic = await newTopic(engine, 1, 'sm-none');
    await produce(engine.kafka, topic, records(1, 300));
    const table = await tableOf(topic, { history: 'none', backfill_offsets: '100' });
    const chunks: ChunkResult[] = [];
    const summary = await runBackfillStateMachine(engine, table.name, (chunk) => chunks.push(chunk));
    expect([summary.executions, summary.chunks, chunks.length]).toEqual([1, 0, 0]);
    expect(await fileRanges(table.tableId)).toEqual([]);
  });

  it('since: the first execution starts at the first offset at or after the time', async () => {
    const topic = await newTopic(engine, 1, 'sm-since');
    await produce(engine.kafka, topic, records(1, 1_000));
    // Offset 250 is the first record at or after t0 + 2,495 ms (records are 10 ms apart).
    const table = await tableOf(topic, { history: `since=${new Date(t0 + 2_495).toISOString()}`, backfill_offsets: '400' });
    const chunks: ChunkResult[] = [];
    const summary = await runBackfillStateMachine(engine, table.name, (chunk) => chunks.push(chunk));
    expect(chunks.map((c) => [c.outcome, c.chunk?.start, c.chunk?.end])).toEqual([
      ['committed', '600', '1000'],
      ['committed', '250', '600'],
    ]);
    expect([summary.executions, summary.records]).toEqual([1, 750]);
  });

  it('a chunk whose success was lost is retried by the definition\'s Retry and changes nothing', async () => {
    const topic = await newTopic(engine, 1, 'sm-retry');
    await produce(engine.kafka, topic, records(1, 900));
    const table = await tableOf(topic, { backfill_offsets: '300' });
    const { definition, stateMachineArn } = localBackfillMachine();
    const deps = { catalog: engine.catalog, kafka: engine.kafka };
    const steps: SlotStepResult[] = [];
    let calls = 0;
    const machine = new StateMachine(definition as never);
    const execution = machine.run({ table: table.name } as never, {
      overrides: {
        taskResourceLocalHandlers: {
          Plan: async (event) => (await planTask(deps, event)) as never,
          Replan: async (event) => (await planTask(deps, event)) as never,
          Chunk: async (event) => {
            calls += 1;
            const step = await chunkTask(deps, event);
            steps.push(step);
            // The second chunk commits, then its response is lost: Lambda reports a failure.
            if (calls === 2) throw new Error('Lambda.SdkClientException: response lost after the chunk committed');
            return step as never;
          },
        },
        retryIntervalOverrides: { Chunk: 0 },
      },
      context: { StateMachine: { Id: stateMachineArn }, Execution: { Id: 'local', Name: `${table.name}-retry` } } as never,
    });
    await execution.result;
    // The retried step finds the record its first attempt committed with its chunk; the slot's
    // last step finds nothing left to claim.
    expect(steps.map((s) => s.result && [s.result.outcome, s.result.chunk?.start, s.result.chunk?.end, s.result.cursor])).toEqual([
      ['committed', '600', '900', '600'],
      ['committed', '300', '600', '300'],
      ['skipped', undefined, undefined, '300'],
      ['committed', '0', '300', '0'],
      null,
    ]);
    expect(steps.map((s) => s.idle)).toEqual([false, false, false, false, true]);
    const check = await checkTable(engine, await findTable(engine.catalog, table.name));
    expect(check.committedOffsets.get(0)!.length).toBe(900);
    expect(check.files.reduce((n, f) => n + Number(f.recordCount), 0)).toBe(900);
  });
});

describe('ContinueAsNew by name', () => {
  /** 900 records in one partition, three 300-offset chunks, one chunk per execution: three executions. */
  async function threeExecutions(name: string) {
    const topic = await newTopic(engine, 1, name);
    await produce(engine.kafka, topic, records(1, 900));
    return tableOf(topic, { backfill_offsets: '300' });
  }
  const names = (table: { name: string; tableId: bigint }, ...numbers: number[]) => numbers.map((n) => `${table.name}-${table.tableId}-${n}`);
  const chunkRanges = (chunks: ChunkResult[]) => chunks.map((c) => [c.outcome, c.chunk?.start, c.chunk?.end]);

  it('names the next execution <table>-<table id>-<number>; a StartExecution retried after its answer was lost starts it once', async () => {
    const table = await threeExecutions('sm-names');
    const executions = new LocalExecutions(localBackfillMachine().stateMachineArn);
    const starts: string[] = [];
    const chunks: ChunkResult[] = [];
    const summary = await runBackfillStateMachine(engine, table.name, (chunk) => chunks.push(chunk), {
      chunksPerExecution: 1,
      executions,
      retryIntervalOverrides: { ContinueAsNew: 0 },
      afterTask: (state, payload) => {
        if (state !== 'ContinueAsNew') return;
        starts.push((payload as { Name: string }).Name);
        // The first StartExecution started execution 2, then its answer was lost: the state's Retry asks again.
        if (starts.length === 1) throw new Error('States.TaskFailed: the answer of StartExecution was lost');
      },
    });
    expect(starts).toEqual(names(table, 2, 2, 3));
    expect(summary.executionNames).toEqual(names(table, 1, 2, 3));
    expect(chunkRanges(chunks)).toEqual([['committed', '600', '900'], ['committed', '300', '600'], ['committed', '0', '300']]);
    // A name is used once: starting execution 2 again now (it ended) is ExecutionAlreadyExists.
    expect(() => executions.start(names(table, 2)[0]!, { table: table.name, execution: 2 })).toThrow(expect.objectContaining({ name: 'StepFunctions.ExecutionAlreadyExistsException' }));
    const check = await checkTable(engine, await findTable(engine.catalog, table.name));
    expect(check.committedOffsets.get(0)!.length).toBe(900);
  });

  it('a name the scheduled check took first ends the chain at AlreadyContinued: the check\'s execution goes on, one chain', async () => {
    const table = await threeExecutions('sm-taken');
    const executions = new LocalExecutions(localBackfillMachine().stateMachineArn);
    const resumed: (() => Promise<LocalBackfillSummary>)[] = [];
    const chunks: ChunkResult[] = [];
    const startBackfill = localBackfillStarter(engine, (_start, run) => resumed.push(run), { executions, progress: (chunk) => chunks.push(chunk) });
    const states: string[] = [];
    let checked: ResumedBackfill[] | undefined;
    const first = await runBackfillStateMachine(engine, table.name, (chunk) => chunks.push(chunk), {
      chunksPerExecution: 1,
      executions,
      onEvent: (event) => {
        if (event.type === 'StateEntered') states.push(event.state.name);
      },
      // After the first execution's only step its slot has handed its claim back: a scheduled
      // check that runs now finds no execution working on the backfill and starts execution 2.
      afterTask: async (state) => {
        if (state === 'Chunk' && !checked) checked = await resumeBackfills(engine.catalog, startBackfill, { table: table.name, chunksPerExecution: 1 });
      },
    });
    expect(checked).toEqual([{ table: table.name, execution: names(table, 2)[0], outcome: 'started' }]);
    expect(first.executionNames).toEqual(names(table, 1));
    expect(states.slice(-2)).toEqual(['ContinueAsNew', 'AlreadyContinued']);

    // The execution the check started goes on as execution 3; nothing ran twice.
    const rest = await resumed[0]!();
    expect(rest.executionNames).toEqual(names(table, 2, 3));
    expect(chunkRanges(chunks)).toEqual([['committed', '600', '900'], ['committed', '300', '600'], ['committed', '0', '300']]);
    const check = await checkTable(engine, await findTable(engine.catalog, table.name));
    expect(check.committedOffsets.get(0)!.length).toBe(900);
    expect(check.files.reduce((n, f) => n + Number(f.recordCount), 0)).toBe(900);
  });
});

describe('the backfill state machine at 5,000 partitions', () => {
  /**
   * A plan of 5,000 partitions: the table's catalog rows say 5,000 partitions, each with
   * one offset of history ([0, 1), planned: cursor 1, target 0), and the chunks read that
   * history from an empty source instead of Kafka. A topic of 5,000 partitions on the local
   * broker would cost minutes and thousands of files on a shared 2-core machine, and
   * nothing about a state's size depends on what a chunk reads: Plan, Replan and every
   * slot step run the real task code against the real catalog (claims, commits, step
   * records), so the states have their real shapes. Every state's input and output, the
   * executions' inputs and outputs, and every Lambda payload and result are measured as
   * serialized JSON.
   */
  it('4 executions of 1,500, 1,500, 1,500 and 500 chunks; every state\'s input and output stays under 256 KiB (under 4 KiB: nothing grows with the partitions)', async () => {
    const partitions = 5_000;
    const topic = await newTopic(engine, 1, 'sm-5000');
    const table = await tableOf(topic, {});
    await addPartitions(engine.catalog, table.tableId, new Map(Array.from({ length: partitions - 1 }, (_, i) => [i + 1, 1n])));
    await engine.catalog.query(
      'UPDATE offsetlake.lake_partition SET indexed_start = 1, indexed_end = 1, backfill_cursor = 1, backfill_target = 0 WHERE table_id = $1',
      [table.tableId],
    );
    const emptyHistory: HistorySource = {
      earliest: async () => 0n,
      read: async function* () {},
    };

    const sizes = { measured: 0, largest: 0, where: '' };
    const measure = (where: string, value: unknown) => {
      const bytes = Buffer.byteLength(JSON.stringify(value ?? null));
      sizes.measured += 1;
      if (bytes > sizes.largest) Object.assign(sizes, { largest: bytes, where });
    };
    const summary = await runBackfillStateMachine(engine, table.name, undefined, {
      chunk: { history: emptyHistory },
      onEvent: (event) => {
        if (event.type === 'ExecutionStarted') measure('execution input', event.input);
        if (event.type === 'ExecutionSucceeded') measure('execution output', event.output);
        if ('parentState' in event) measure(`${event.parentState.name} input (an iteration's event)`, event.parentState.input);
        if ('state' in event) {
          measure(`${event.state.name} input`, event.state.input);
          if (event.type === 'StateExited') measure(`${event.state.name} output`, event.state.output);
        }
      },
      afterTask: (state, payload, result) => {
        measure(`${state} payload`, payload);
        measure(`${state} result`, result);
      },
    });

    expect(summary.chunks).toBe(partitions);
    expect(summary.executionNames).toEqual([1, 2, 3, 4].map((n) => `${table.name}-${table.tableId}-${n}`));
    expect(summary.partitions.filter((p) => p.done && p.cursor === '0').length).toBe(partitions);
    expect(await backfillProgress(engine.catalog, table.tableId)).toEqual({ left: 0, claimable: 0, finished: partitions });
    console.log(`5,000 partitions: ${summary.chunks} chunks in ${summary.executions} executions, ${summary.elapsedMs} ms; ${sizes.measured} inputs, outputs and payloads measured, the largest ${sizes.largest} bytes (${sizes.where})`);
    expect(sizes.measured).toBeGreaterThan(6 * partitions);
    expect(sizes.largest).toBeLessThan(256 * 1024);
    expect(sizes.largest).toBeLessThan(4 * 1024);
  }, 600_000);
});
