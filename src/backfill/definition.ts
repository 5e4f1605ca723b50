/**
 * The backfill state machine's definition, as data (src/state-machines/asl.ts says what
 * both machines share; infra/stack.ts deploys it, src/backfill/local-execution.ts runs it):
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
import { continueAsNewState, localMachine, localTargets, selfContinuingDefinition, taskRetries, type AslDefinition, type LocalMachine, type StateMachineTargets } from '../state-machines/asl.js';
import { defaultSlots, maxSlots } from './limits.js';

/** State names the local runner maps to the engine (taskResourceLocalHandlers is keyed by state name). */
export const backfillStates = {
  plan: 'Plan',
  replan: 'Replan',
  chunk: 'Chunk',
  continueAsNew: continueAsNewState,
} as const;

/** Error names (Lambda's errorType) of requests that can never succeed: not retried. */
export const badRequestErrors = ['BackfillTaskError', 'ChunkRequestError', 'TableError'] as const;

/** The one function the machine invokes: behind Plan, Replan and Chunk (functions/backfill). */
export type BackfillFunctions = 'backfill';

/** The machine is named `<stack>-backfill` (infra/names.ts). */
export const backfillMachineSuffix = 'backfill';

export interface BackfillDefinitionOptions {
  /** Slots: how many partitions run their chunks at once (default 10, at most 40). */
  maxConcurrency?: number;
}

/** The backfill state machine's definition, its Tasks pointing at `targets`. */
export function backfillDefinition(targets: StateMachineTargets<BackfillFunctions>, options: BackfillDefinitionOptions = {}): AslDefinition {
  const maxConcurrency = options.maxConcurrency ?? defaultSlots;
  if (!Number.isInteger(maxConcurrency) || maxConcurrency < 1 || maxConcurrency > maxSlots) {
    throw new Error(`backfill state machine: maxConcurrency must be a whole number from 1 to ${maxSlots}, got ${maxConcurrency}`);
  }
  const backfill = targets.functionArns.backfill;
  const retries = taskRetries(badRequestErrors);
  // The execution input (Replan: the state), so the plan keeps its budget and number.
  const planRequest = { action: 'plan', 'table.$': '$.table', 'input.$': '$', slots: maxConcurrency };
  return selfContinuingDefinition(targets.partition, backfillStates.plan, {
    // No ResultPath: the plan replaces the state (aws-local-stepfunctions 3.0.0 would nest an explicit "$" under a key "$").
    [backfillStates.plan]: { Type: 'Task', Resource: backfill, Parameters: planRequest, Retry: retries, Next: 'HasWork' },
    HasWork: { Type: 'Choice', Choices: [{ Variable: '$.slots[0]', IsPresent: true, Next: 'Slots' }], Default: 'Done' },
    Slots: {
      Type: 'Map',
      ItemsPath: '$.slots',
      MaxConcurrency: maxConcurrency,
      ItemSelector: {
        'table.$': '$.table',
        'tableId.$': '$.tableId',
        // With the slot's number, the owner of the slot's claims and the key of its step records.
        'executionName.$': '$$.Execution.Name',
        'slot.$': '$$.Map.Item.Value',
        'budget.$': '$.chunksPerSlot',
        chunks: 0,
      },
      ItemProcessor: {
        ProcessorConfig: { Mode: 'INLINE' },
        StartAt: backfillStates.chunk,
        States: {
          [backfillStates.chunk]: {
            Type: 'Task',
            Resource: backfill,
            Parameters: {
              action: 'chunk',
              'table.$': '$.table',
              'tableId.$': '$.tableId',
              'executionName.$': '$.executionName',
              'slot.$': '$.slot',
              'step.$': '$.chunks',
              'budget.$': '$.budget',
            },
            ResultPath: '$.step',
            Retry: retries,
            Next: 'Count',
          },
          // The step counter lives in the state: it is what bounds one execution's history.
          // The step's result is dropped here; only whether the slot found work goes on.
          Count: {
            Type: 'Pass',
            Parameters: {
              'table.$': '$.table',
              'tableId.$': '$.tableId',
              'executionName.$': '$.executionName',
              'slot.$': '$.slot',
              'budget.$': '$.budget',
              'chunks.$': 'States.MathAdd($.chunks, 1)',
              'idle.$': '$.step.idle',
            },
            Next: 'MoreChunks',
          },
          MoreChunks: {
            Type: 'Choice',
            Choices: [
              { Variable: '$.idle', BooleanEquals: true, Next: 'SlotIdle' },
              { Variable: '$.chunks', NumericGreaterThanEqualsPath: '$.budget', Next: 'BudgetSpent' },
            ],
            Default: backfillStates.chunk,
          },
          SlotIdle: { Type: 'Succeed' },
          BudgetSpent: { Type: 'Succeed' },
        },
      },
      ResultPath: null,
      Next: backfillStates.replan,
    },
    // The catalog, not the Map's results, says what is left: Replan reads it again.
    [backfillStates.replan]: { Type: 'Task', Resource: backfill, Parameters: planRequest, ResultPath: '$.replan', Retry: retries, Next: 'Unfinished' },
    Unfinished: { Type: 'Choice', Choices: [{ Variable: '$.replan.slots[0]', IsPresent: true, Next: backfillStates.continueAsNew }], Default: 'Done' },
    Done: { Type: 'Succeed' },
  }, {
    'table.$': '$.table',
    'chunksPerExecution.$': '$.chunksPerExecution',
    'execution.$': '$.continuation.execution',
  });
}

/** What a local run executes: the default definition, placeholder ARNs (the runner overrides every Task). */
export function localBackfillMachine(): LocalMachine {
  return localMachine(backfillMachineSuffix, backfillDefinition(localTargets(['backfill'])));
}
