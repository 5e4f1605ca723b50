/**
 * The index backfill state machine's definition, as data (src/state-machines/asl.ts says
 * what both machines share; infra/stack.ts deploys it, src/index-backfill/local-execution.ts
 * runs it): a standalone index's backfill, one Lambda step at a time, with no deadline.
 *
 *   Step ─▶ Count ─▶ More? ─done─────────────────▶ Done
 *     ▲                │ steps ≥ stepsPerExecution ─▶ ContinueAsNew (StartExecution of this
 *     │                │                               machine, named continuation.name) ─▶ end
 *     │                │ held ─▶ WaitForLease ─┐          └─ ExecutionAlreadyExists ─▶ AlreadyContinued
 *     └────────────────┴───────────────────────┘ otherwise
 *
 * A step (src/index-backfill/tasks.ts) moves the index to its next state or gives one
 * chunk of files their entries, and answers whether anything is left (`done`) and
 * whether another driver holds the lease (`held`: the machine waits, then steps again).
 * The state holds the index id, the execution's number, its step budget and counter:
 * O(1), whatever the table's size; the cursor is the catalog's.
 *
 * History events: a step costs 9 (Step: entered, scheduled, started, succeeded, exited;
 * Count and More: entered, exited each), 11 when it waits for the lease; the start,
 * ContinueAsNew and the end stay under 20. One execution runs at most stepsPerExecution
 * steps: at the default 1,500, ≤ 16,520 of the 25,000 an execution may hold, room for
 * ~2,800 Lambda retries (3 events each); the allowed maximum, 2,000, writes ≤ 22,020.
 *
 * Input: {indexId, execution, stepsPerExecution} (indexBackfillStart(id, n) gives execution n; the
 * scheduled check starts one for every index not active that no driver holds: src/index-backfill/resume.ts).
 */
import { continueAsNewState, localMachine, localTargets, selfContinuingDefinition, taskRetries, type AslDefinition, type LocalMachine, type StateMachineTargets } from '../state-machines/asl.js';

/** State names the local runner maps to the engine (taskResourceLocalHandlers is keyed by state name). */
export const indexBackfillStates = {
  step: 'Step',
  continueAsNew: continueAsNewState,
} as const;

/** Lambda's errorType of requests that can never succeed: not retried. */
export const indexBadRequestErrors = ['IndexBackfillTaskError'] as const;

/** The one function the machine invokes: behind Step (functions/index-backfill). */
export type IndexBackfillFunctions = 'indexBackfill';

/** The machine is named `<stack>-index-backfill` (infra/names.ts). */
export const indexBackfillMachineSuffix = 'index-backfill';

/** Seconds a step whose lease another driver holds waits before it steps again: the default lease_ttl. */
const leaseWaitSeconds = 30;

/** The index backfill state machine's definition, its Task pointing at `targets`. */
export function indexBackfillDefinition(targets: StateMachineTargets<IndexBackfillFunctions>): AslDefinition {
  return selfContinuingDefinition(targets.partition, 'Start', {
    // The execution's input has no counter: Start adds it.
    Start: {
      Type: 'Pass',
      Parameters: { 'indexId.$': '$.indexId', 'execution.$': '$.execution', 'stepsPerExecution.$': '$.stepsPerExecution', steps: 0 },
      Next: indexBackfillStates.step,
    },
    // A bad request fails at once; anything else (Kafka, Postgres, a lost lease) is retried: nothing of a failed step was committed.
    [indexBackfillStates.step]: {
      Type: 'Task',
      Resource: targets.functionArns.indexBackfill,
      Parameters: { action: 'step', 'indexId.$': '$.indexId', 'execution.$': '$.execution', 'step.$': '$.steps' },
      ResultPath: '$.result',
      Retry: taskRetries(indexBadRequestErrors),
      Next: 'Count',
    },
    // The counter lives in the state (it bounds the execution's history); the step's result is dropped here.
    Count: {
      Type: 'Pass',
      Parameters: {
        'indexId.$': '$.indexId',
        'execution.$': '$.execution',
        'stepsPerExecution.$': '$.stepsPerExecution',
        'steps.$': 'States.MathAdd($.steps, 1)',
        'done.$': '$.result.done',
        'held.$': '$.result.held',
        'continuation.$': '$.result.continuation',
      },
      Next: 'More',
    },
    More: {
      Type: 'Choice',
      Choices: [
        { Variable: '$.done', BooleanEquals: true, Next: 'Done' },
        { Variable: '$.steps', NumericGreaterThanEqualsPath: '$.stepsPerExecution', Next: indexBackfillStates.continueAsNew },
        { Variable: '$.held', BooleanEquals: true, Next: 'WaitForLease' },
      ],
      Default: indexBackfillStates.step,
    },
    WaitForLease: { Type: 'Wait', Seconds: leaseWaitSeconds, Next: indexBackfillStates.step },
    Done: { Type: 'Succeed' },
  }, {
    'indexId.$': '$.indexId',
    'execution.$': '$.continuation.execution',
    'stepsPerExecution.$': '$.stepsPerExecution',
  });
}

/** What a local run executes: the default definition, a placeholder ARN (the runner overrides every Task). */
export function localIndexBackfillMachine(): LocalMachine {
  return localMachine(indexBackfillMachineSuffix, indexBackfillDefinition(localTargets(['indexBackfill'])));
}
