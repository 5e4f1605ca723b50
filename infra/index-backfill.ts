/**
 * The index backfill state machine (Standard, JSONPath, so that aws-local-stepfunctions
 * runs exactly this definition locally): a standalone index's backfill, one Lambda step
 * at a time, with no deadline.
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
import { Duration } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { continueAsNewState, selfContinuingMachine } from './continue-as-new.js';
import { stackScopedName } from './names.js';

/** State names the local runner maps to the engine (taskResourceLocalHandlers is keyed by state name). */
export const indexBackfillStates = {
  step: 'Step',
  continueAsNew: 'ContinueAsNew',
} as const;

/** Lambda's errorType of requests that can never succeed: not retried. */
export const indexBadRequestErrors = ['IndexBackfillTaskError'] as const;

export interface IndexBackfillStateMachineProps {
  /** The function behind Step (functions/index-backfill). */
  step: lambda.IFunction;
  /** How long a step whose lease another driver holds waits before it steps again (default 30 s, the default lease_ttl). */
  leaseWait?: Duration;
}

export class IndexBackfillStateMachine extends Construct {
  readonly stateMachine: sfn.StateMachine;

  constructor(scope: Construct, id: string, props: IndexBackfillStateMachineProps) {
    super(scope, id);
    // A fixed name (continue-as-new.ts says why).
    const name = stackScopedName(this, 'index-backfill', 80);

    const step = new tasks.LambdaInvoke(this, indexBackfillStates.step, {
      stateName: indexBackfillStates.step,
      lambdaFunction: props.step,
      payloadResponseOnly: true,
      retryOnServiceExceptions: false,
      payload: sfn.TaskInput.fromObject({
        action: 'step',
        indexId: sfn.JsonPath.stringAt('$.indexId'),
        execution: sfn.JsonPath.numberAt('$.execution'),
        step: sfn.JsonPath.numberAt('$.steps'),
      }),
      resultPath: '$.result',
    });
    // A bad request fails at once; anything else (Kafka, Postgres, a lost lease) is retried: nothing of a failed step was committed.
    step.addRetry({ errors: [...indexBadRequestErrors], maxAttempts: 0 });
    step.addRetry({ errors: [sfn.Errors.ALL], interval: Duration.seconds(5), backoffRate: 2, maxAttempts: 8, maxDelay: Duration.minutes(2) });

    // The counter lives in the state (it bounds the execution's history); the step's result is dropped here.
    const count = new sfn.Pass(this, 'Count', {
      parameters: {
        indexId: sfn.JsonPath.stringAt('$.indexId'),
        execution: sfn.JsonPath.numberAt('$.execution'),
        stepsPerExecution: sfn.JsonPath.numberAt('$.stepsPerExecution'),
        steps: sfn.JsonPath.mathAdd(sfn.JsonPath.numberAt('$.steps'), 1),
        done: sfn.JsonPath.stringAt('$.result.done'),
        held: sfn.JsonPath.stringAt('$.result.held'),
        continuation: sfn.JsonPath.objectAt('$.result.continuation'),
      },
    });

    const continueAsNew = continueAsNewState(this, indexBackfillStates.continueAsNew, {
      'indexId.$': '$.indexId',
      'execution.$': '$.continuation.execution',
      'stepsPerExecution.$': '$.stepsPerExecution',
    });

    const waitForLease = new sfn.Wait(this, 'WaitForLease', { time: sfn.WaitTime.duration(props.leaseWait ?? Duration.seconds(30)) });
    const more = new sfn.Choice(this, 'More')
      .when(sfn.Condition.booleanEquals('$.done', true), new sfn.Succeed(this, 'Done'))
      .when(sfn.Condition.numberGreaterThanEqualsJsonPath('$.steps', '$.stepsPerExecution'), continueAsNew)
      .when(sfn.Condition.booleanEquals('$.held', true), waitForLease.next(step))
      .otherwise(step);
    // The execution's input has no counter: Start adds it.
    const start = new sfn.Pass(this, 'Start', {
      parameters: {
        indexId: sfn.JsonPath.stringAt('$.indexId'),
        execution: sfn.JsonPath.numberAt('$.execution'),
        stepsPerExecution: sfn.JsonPath.numberAt('$.stepsPerExecution'),
        steps: 0,
      },
    });

    this.stateMachine = selfContinuingMachine(this, name, start.next(step).next(count).next(more));
  }
}
