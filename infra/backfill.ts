/**
 * The backfill state machine (Standard, JSONPath; no JSONata, no Distributed Map, so that
 * aws-local-stepfunctions runs exactly this definition locally):
 *
 *   Plan ─▶ HasWork? ─no─▶ Done
 *              │yes
 *              ▼
 *   Slots (Map over a few slot numbers; per slot:
 *       Chunk ─▶ Count ─▶ MoreChunks? ─idle───────────▶ SlotIdle
 *         ▲                   │ chunks ≥ budget ─▶ BudgetSpent
 *         └───────────────────┘ otherwise)
 *              ▼
 *   Replan ─▶ Unfinished? ─no─▶ Done
 *              │yes
 *              ▼
 *   ContinueAsNew (StartExecution of this machine, named continuation.name) ─▶ end
 *        └─ ExecutionAlreadyExists ─▶ AlreadyContinued
 *
 * The state is O(1) in the table's partitions: cursors live in the catalog. The plan
 * hands over counts, the next execution's number and name, and at most `maxConcurrency`
 * slot numbers; each Chunk step claims the next partition with work in the catalog (its
 * own first), runs its chunk and commits the cursor there (src/backfill/slot.ts), and
 * answers `idle` when nothing is left to claim. ContinueAsNew's input is the table, the
 * budget and the next execution's number. Measured at 5,000 partitions: every state's
 * input and output stays under 1 KiB (test/integration/state-machine.test.ts).
 *
 * The next execution's name is `<table>-<table id>-<number>` (src/backfill/executions.ts):
 * a retried StartExecution with the same name and input returns the same execution, and
 * ExecutionAlreadyExists means that execution was started already (by this chain, or by
 * the scheduled check resuming it, src/backfill/resume.ts): this one ends, one chain goes on.
 *
 * History events. One execution holds at most 25,000. A step costs 9 (Chunk: entered,
 * scheduled, started, succeeded, exited; Count and MoreChunks: entered, exited each); a
 * slot's Map iteration 4 more (iteration started and succeeded, its final Succeed state
 * entered and exited); Plan, HasWork, the Map's own four, Replan, Unfinished,
 * ContinueAsNew (or its caught failure and AlreadyContinued) and the execution's start
 * and end stay under 30. The plan runs at most min(maxConcurrency, chunksPerExecution)
 * slots of ⌊chunksPerExecution / slots⌋ steps each (an idle step included), so one
 * execution writes ≤ 30 + 9 × chunksPerExecution + 4 × slots events: 13,570 for the
 * default 1,500 over 10 slots (room for ~3,800 Lambda retries, 3 events each), 16,270 for
 * the allowed maximum 1,800 (src/backfill/limits.ts). A backfill of 10^9 offsets in
 * 100,000-offset chunks is 10,000 chunks: 7 executions, each started by the last.
 *
 * The task contract (functions/backfill, src/backfill/tasks.ts):
 *   Plan / Replan: {action: 'plan', table, input, slots}
 *                  → {table, tableId, chunksPerExecution, execution, continuation: {execution, name},
 *                     slots: [0, 1, …], chunksPerSlot, left, claimable, finished}
 *   Chunk:         {action: 'chunk', table, tableId, executionName, slot, step, budget}
 *                  → {idle, result: chunk result | null}
 * A step is idempotent (a retried step finds the record its first attempt committed with
 * its chunk, and changes nothing), so every task retries on any error.
 */
import { Duration } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { stackScopedName } from './names.js';
import { continueAsNewState, executionAlreadyExists, selfContinuingMachine } from './continue-as-new.js';
import { defaultSlots, maxSlots } from '../src/backfill/limits.js';

/** State names the local runner maps to the engine (taskResourceLocalHandlers is keyed by state name). */
export const backfillStates = {
  plan: 'Plan',
  replan: 'Replan',
  chunk: 'Chunk',
  continueAsNew: 'ContinueAsNew',
} as const;

/** Error names (Lambda's errorType) of requests that can never succeed: not retried. */
export const badRequestErrors = ['BackfillTaskError', 'ChunkRequestError', 'TableError'] as const;

export { executionAlreadyExists };

export interface BackfillStateMachineProps {
  /** The function behind Plan, Replan and Chunk (functions/backfill). */
  backfill: lambda.IFunction;
  /** Slots: how many partitions run their chunks at once (default 10, at most 40). */
  maxConcurrency?: number;
}

export class BackfillStateMachine extends Construct {
  readonly stateMachine: sfn.StateMachine;

  constructor(scope: Construct, id: string, props: BackfillStateMachineProps) {
    super(scope, id);
    const maxConcurrency = props.maxConcurrency ?? defaultSlots;
    if (!Number.isInteger(maxConcurrency) || maxConcurrency < 1 || maxConcurrency > maxSlots) {
      throw new Error(`backfill state machine: maxConcurrency must be a whole number from 1 to ${maxSlots}, got ${maxConcurrency}`);
    }
    // A fixed name (continue-as-new.ts says why).
    const name = stackScopedName(this, 'backfill', 80);

    const retryAll = (task: sfn.TaskStateBase): void => {
      // A bad request (a wrong table name, a malformed cursor) fails at once: retrying cannot fix it.
      task.addRetry({ errors: [...badRequestErrors], maxAttempts: 0 });
      task.addRetry({ errors: [sfn.Errors.ALL], interval: Duration.seconds(5), backoffRate: 2, maxAttempts: 8, maxDelay: Duration.minutes(2) });
    };
    const planTask = (stateName: string, resultPath?: string): tasks.LambdaInvoke => {
      const task = new tasks.LambdaInvoke(this, stateName, {
        stateName,
        lambdaFunction: props.backfill,
        payloadResponseOnly: true,
        retryOnServiceExceptions: false,
        payload: sfn.TaskInput.fromObject({
          action: 'plan',
          table: sfn.JsonPath.stringAt('$.table'),
          // The execution input (Replan: the state), so the plan keeps its budget and number.
          input: sfn.JsonPath.entirePayload,
          slots: maxConcurrency,
        }),
        // Plan: no ResultPath (its result replaces the state; aws-local-stepfunctions 3.0.0
        // would nest an explicit "$" under a key "$"). Replan: $.replan.
        ...(resultPath ? { resultPath } : {}),
      });
      retryAll(task);
      return task;
    };

    const plan = planTask(backfillStates.plan, undefined);
    const chunk = new tasks.LambdaInvoke(this, backfillStates.chunk, {
      stateName: backfillStates.chunk,
      lambdaFunction: props.backfill,
      payloadResponseOnly: true,
      retryOnServiceExceptions: false,
      payload: sfn.TaskInput.fromObject({
        action: 'chunk',
        table: sfn.JsonPath.stringAt('$.table'),
        tableId: sfn.JsonPath.stringAt('$.tableId'),
        executionName: sfn.JsonPath.stringAt('$.executionName'),
        slot: sfn.JsonPath.numberAt('$.slot'),
        step: sfn.JsonPath.numberAt('$.chunks'),
        budget: sfn.JsonPath.numberAt('$.budget'),
      }),
      resultPath: '$.step',
    });
    retryAll(chunk);
    // The step counter lives in the state: it is what bounds one execution's history. The
    // step's result is dropped here; only whether the slot found work goes on.
    const count = new sfn.Pass(this, 'Count', {
      parameters: {
        table: sfn.JsonPath.stringAt('$.table'),
        tableId: sfn.JsonPath.stringAt('$.tableId'),
        executionName: sfn.JsonPath.stringAt('$.executionName'),
        slot: sfn.JsonPath.numberAt('$.slot'),
        budget: sfn.JsonPath.numberAt('$.budget'),
        chunks: sfn.JsonPath.mathAdd(sfn.JsonPath.numberAt('$.chunks'), 1),
        idle: sfn.JsonPath.stringAt('$.step.idle'),
      },
    });
    const perSlot = chunk.next(count).next(
      new sfn.Choice(this, 'MoreChunks')
        .when(sfn.Condition.booleanEquals('$.idle', true), new sfn.Succeed(this, 'SlotIdle'))
        .when(sfn.Condition.numberGreaterThanEqualsJsonPath('$.chunks', '$.budget'), new sfn.Succeed(this, 'BudgetSpent'))
        .otherwise(chunk),
    );
    const slots = new sfn.Map(this, 'Slots', {
      itemsPath: '$.slots',
      maxConcurrency,
      itemSelector: {
        table: sfn.JsonPath.stringAt('$.table'),
        tableId: sfn.JsonPath.stringAt('$.tableId'),
        // With the slot's number, the owner of the slot's claims and the key of its step records.
        executionName: sfn.JsonPath.stringAt('$$.Execution.Name'),
        slot: sfn.JsonPath.numberAt('$$.Map.Item.Value'),
        budget: sfn.JsonPath.numberAt('$.chunksPerSlot'),
        chunks: 0,
      },
      resultPath: sfn.JsonPath.DISCARD,
    });
    slots.itemProcessor(perSlot);

    // The catalog, not the Map's results, says what is left: Replan reads it again.
    const replan = planTask(backfillStates.replan, '$.replan');
    const continueAsNew = continueAsNewState(this, backfillStates.continueAsNew, {
      'table.$': '$.table',
      'chunksPerExecution.$': '$.chunksPerExecution',
      'execution.$': '$.continuation.execution',
    });
    const done = new sfn.Succeed(this, 'Done');

    const definition = plan.next(
      new sfn.Choice(this, 'HasWork')
        .when(sfn.Condition.isPresent('$.slots[0]'), slots.next(replan).next(
          new sfn.Choice(this, 'Unfinished').when(sfn.Condition.isPresent('$.replan.slots[0]'), continueAsNew).otherwise(done),
        ))
        .otherwise(done),
    );

    this.stateMachine = selfContinuingMachine(this, name, definition);
  }
}
