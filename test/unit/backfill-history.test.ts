/**
 * The backfillMachine backfill definition keeps every execution under Step Functions' 25,000
 * history events. Executed locally with stand-in tasks (no I/O: a partition is a count of
 * chunks left, and a slot claims partitions from an in-memory table as the catalog's
 * claimNextBackfill does), each local event is counted as the history events AWS writes
 * for it.
 */
import { StateMachine } from 'aws-local-stepfunctions';
import { beforeAll, describe, expect, it } from 'vitest';
import { localBackfillMachine } from '../../src/backfill/definition.js';
import type { LocalMachine } from '../../src/state-machines/asl.js';
import { parsePlanRequest, planState } from '../../src/backfill/tasks.js';
import type { SlotStepResult } from '../../src/backfill/slot.js';

let backfillMachine: LocalMachine;
beforeAll(() => {
  backfillMachine = localBackfillMachine();
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

interface Run { executions: { chunks: number; steps: number; slots: number; history: number }[] }

/** Partitions needing chunks, and which slot holds each (released: no holder), as the catalog keeps them. */
class Partitions {
  readonly left: number[];
  readonly holder: (string | undefined)[];
  constructor(partitions: number, chunksEach: number) {
    this.left = Array.from({ length: partitions }, () => chunksEach);
    this.holder = this.left.map(() => undefined);
  }
  /** The slot's own partition first, then the free one with work with the lowest id. */
  claim(slot: string): number | undefined {
    const mine = this.holder.findIndex((holder, p) => holder === slot && this.left[p]! > 0);
    const next = mine >= 0 ? mine : this.left.findIndex((left, p) => left > 0 && this.holder[p] === undefined);
    if (next < 0) return undefined;
    this.holder[next] = slot;
    return next;
  }
  release(slot: string): void {
    this.holder.forEach((holder, p) => {
      if (holder === slot) this.holder[p] = undefined;
    });
  }
  progress() {
    const left = this.left.filter((n) => n > 0).length;
    return { left, claimable: this.left.filter((n, p) => n > 0 && this.holder[p] === undefined).length, finished: this.left.length - left };
  }
}

/** Backfills `partitions` partitions needing `chunksEach` chunks, execution after execution. */
async function backfill(partitions: number, chunksEach: number, chunksPerExecution?: number): Promise<Run> {
  const table = new Partitions(partitions, chunksEach);
  let lastExecution = 0;
  const plan = async (event: unknown) => {
    const request = parsePlanRequest(event);
    const execution = request.execution ?? (lastExecution += 1);
    return planState(request, '1', execution, table.progress()) as never;
  };
  const run: Run = { executions: [] };
  let input: unknown = { table: 't', ...(chunksPerExecution ? { chunksPerExecution } : {}) };
  const machine = new StateMachine(backfillMachine.definition as never);
  while (input) {
    let next: unknown;
    let chunks = 0;
    let steps = 0;
    const slots = new Set<number>();
    const execution = machine.run(input as never, {
      overrides: {
        taskResourceLocalHandlers: {
          Plan: plan,
          Replan: plan,
          Chunk: async (event) => {
            const request = event as { executionName: string; slot: number; step: number; budget: number };
            const slot = `${request.executionName}/${request.slot}`;
            steps += 1;
            slots.add(request.slot);
            const partition = table.claim(slot);
            const result: SlotStepResult = { idle: partition === undefined, result: null };
            if (partition !== undefined) {
              table.left[partition]! -= 1;
              chunks += 1;
              if (table.left[partition] === 0 || request.step + 1 >= request.budget) table.release(slot);
            }
            return result as never;
          },
          ContinueAsNew: async (event) => {
            next = (event as { Input: unknown }).Input;
            return { ExecutionArn: 'next' } as never;
          },
        },
      },
      context: { StateMachine: { Id: backfillMachine.stateMachineArn }, Execution: { Id: 'local', Name: `local-${run.executions.length + 1}` } } as never,
    });
    let history = 0;
    const counted = (async () => {
      for await (const event of execution.eventLogs) history += historyEvents(event as never);
    })();
    await execution.result;
    await counted;
    run.executions.push({ chunks, steps, slots: slots.size, history });
    input = next;
  }
  expect(table.left.every((n) => n === 0)).toBe(true);
  return run;
}

/** The bound src/backfill/definition.ts states: 30 + 9 per step + 4 per slot. */
const bound = (e: { steps: number; slots: number }) => 30 + 9 * e.steps + 4 * e.slots;

describe('the backfill definition and the 25,000-event history limit', () => {
  it('one partition of 10^9 offsets in 100,000-offset chunks: 10,000 chunks in 7 executions, each under the limit', async () => {
    const run = await backfill(1, 10_000);
    expect(run.executions.map((e) => e.chunks)).toEqual([1500, 1500, 1500, 1500, 1500, 1500, 1000]);
    for (const e of run.executions) {
      expect(e.steps).toBeLessThanOrEqual(1_500);
      expect(e.history).toBeLessThanOrEqual(bound(e));
    }
    expect(Math.max(...run.executions.map((e) => e.history))).toBeLessThanOrEqual(30 + 9 * 1_500 + 4);
  }, 120_000);

  it('many partitions at the largest budget: 10 slots, at most chunksPerExecution steps per execution, each under the limit', async () => {
    const run = await backfill(2_100, 2, 1_800);
    // 10 slots × 180 steps: 900 partitions × 2 chunks, the same again, then the last 300 × 2.
    expect(run.executions.map((e) => e.chunks)).toEqual([1800, 1800, 600]);
    for (const e of run.executions) {
      expect(e.slots).toBe(10);
      expect(e.steps).toBeLessThanOrEqual(1_800);
      expect(e.history).toBeLessThanOrEqual(bound(e));
      expect(e.history).toBeLessThanOrEqual(30 + 9 * 1_800 + 4 * 10);
    }
  }, 120_000);

  it('a small budget continues as soon as it is spent', async () => {
    const run = await backfill(3, 5, 6);
    // 3 slots × 2 steps, 3 × 2, then 3 × 1 (and a step each that finds nothing left): each execution picks up where the last stopped.
    expect(run.executions.map((e) => e.chunks)).toEqual([6, 6, 3]);
    expect(run.executions.map((e) => e.slots)).toEqual([3, 3, 3]);
  });
});
