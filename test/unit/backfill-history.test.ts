/**
 * The synthesized backfill definition keeps every execution under Step Functions' 25,000
 * history events. Executed locally with stand-in tasks (no I/O: a partition is a count of
 * chunks left), each local event is counted as the history events AWS writes for it.
 */
import { StateMachine } from 'aws-local-stepfunctions';
import { beforeAll, describe, expect, it } from 'vitest';
import { synthesizeBackfillDefinition, type SynthesizedBackfill } from '../../infra/definition.js';
import type { BackfillPartition } from '../../src/backfill/index.js';
import { planState } from '../../src/backfill/tasks.js';

let synthesized: SynthesizedBackfill;
beforeAll(() => {
  synthesized = synthesizeBackfillDefinition();
});

/**
 * AWS history events per local event: every state's entered/exited; a Lambda task adds
 * scheduled, started, succeeded; StartExecution adds scheduled, started, submitted,
 * succeeded; a Map adds its started and succeeded; Map iterations and the execution's
 * start and end are one each.
 */
function historyEvents(event: { type: string; state?: { name: string; type: string } }): number {
  if (event.type === 'StateEntered') {
    if (event.state!.type === 'Task') return event.state!.name === 'ContinueAsNew' ? 5 : 4;
    return event.state!.type === 'Map' ? 2 : 1;
  }
  if (event.type === 'StateExited') return event.state!.type === 'Map' ? 2 : 1;
  return 1; // ExecutionStarted/Succeeded, MapIterationStarted/Succeeded
}

interface Run { executions: { chunks: number; history: number }[] }

/** Backfills `partitions` partitions needing `chunksEach` chunks, execution after execution. */
async function backfill(partitions: number, chunksEach: number, chunksPerExecution?: number): Promise<Run> {
  const left = new Map(Array.from({ length: partitions }, (_, p) => [p, chunksEach]));
  const cursor = (partition: number): BackfillPartition => ({ table: 't', tableId: '1', partition, cursor: String(left.get(partition)!), target: '0', indexedStart: String(left.get(partition)!), done: left.get(partition)! === 0 });
  const plan = async (event: unknown) => planState(event, { partitions: [...left.keys()].filter((p) => left.get(p)! > 0).map(cursor), finished: 0 }) as never;
  const run: Run = { executions: [] };
  let input: unknown = { table: 't', ...(chunksPerExecution ? { chunksPerExecution } : {}) };
  const machine = new StateMachine(synthesized.definition as never);
  while (input) {
    let next: unknown;
    let chunks = 0;
    const execution = machine.run(input as never, {
      overrides: {
        taskResourceLocalHandlers: {
          Plan: plan,
          Replan: plan,
          Chunk: async (event) => {
            const partition = (event as unknown as { cursor: BackfillPartition }).cursor.partition;
            left.set(partition, left.get(partition)! - 1);
            chunks += 1;
            return cursor(partition) as never;
          },
          ContinueAsNew: async (event) => {
            next = (event as { Input: unknown }).Input;
            return { ExecutionArn: 'next' } as never;
          },
        },
      },
      context: { StateMachine: { Id: synthesized.stateMachineArn }, Execution: { Id: 'local' } } as never,
    });
    let history = 0;
    const counted = (async () => {
      for await (const event of execution.eventLogs) history += historyEvents(event as never);
    })();
    await execution.result;
    await counted;
    run.executions.push({ chunks, history });
    input = next;
  }
  expect([...left.values()].every((n) => n === 0)).toBe(true);
  return run;
}

describe('the backfill definition and the 25,000-event history limit', () => {
  it('one partition of 10^9 offsets in 100,000-offset chunks: 10,000 chunks in 7 executions, each under the limit', async () => {
    const run = await backfill(1, 10_000);
    expect(run.executions.map((e) => e.chunks)).toEqual([1500, 1500, 1500, 1500, 1500, 1500, 1000]);
    for (const e of run.executions) expect(e.history).toBeLessThan(25_000);
    expect(Math.max(...run.executions.map((e) => e.history))).toBeLessThanOrEqual(30 + 13 * 1500);
  }, 120_000);

  it('many partitions at the largest budget: at most chunksPerExecution partitions per execution, each under the limit', async () => {
    const run = await backfill(2_100, 2, 1_800);
    // 1,800 partitions × 1 chunk, the same again, then the last 300 partitions × 2.
    expect(run.executions.map((e) => e.chunks)).toEqual([1800, 1800, 600]);
    for (const e of run.executions) expect(e.history).toBeLessThanOrEqual(30 + 13 * 1_800);
  }, 120_000);

  it('a small budget continues as soon as it is spent', async () => {
    const run = await backfill(3, 5, 6);
    // 3 partitions × 2 chunks, 3 × 2, 3 × 1: each execution picks up where the last stopped.
    expect(run.executions.map((e) => e.chunks)).toEqual([6, 6, 3]);
  });
});
