/**
 * The backfill state machine (Standard, JSONPath; no JSONata, no Distributed Map, so that
 * aws-local-stepfunctions runs exactly this definition locally):
 *
 *   Plan ─▶ HasWork? ─no─▶ Done
 *              │yes
 *              ▼
 *   Partitions (Map over the plan's partitions; per partition:
 *       Chunk ─▶ Count ─▶ MoreChunks? ─done──────▶ PartitionDone
 *         ▲                   │ chunks ≥ budget ─▶ BudgetSpent
 *         └───────────────────┘ otherwise)
 *              ▼
 *   Replan ─▶ Unfinished? ─no─▶ Done
 *              │yes
 *              ▼
 *   ContinueAsNew (StartExecution of this state machine with the plan's cursors) ─▶ end
 *
 * History events. One execution holds at most 25,000. A chunk costs 9 (Chunk: entered,
 * scheduled, started, succeeded, exited; Count and MoreChunks: entered, exited each); a
 * partition's Map iteration 4 more (iteration started and succeeded, its final Succeed
 * state entered and exited); Plan, HasWork, Replan, Unfinished, ContinueAsNew and the
 * Map's own events under 30. The plan hands one execution at most `chunksPerExecution`
 * chunks over at most as many partitions (each gets `chunksPerPartition` =
 * ⌊chunksPerExecution / partitions⌋ ≥ 1), so one execution writes ≤ 30 + 9 × chunks +
 * 4 × partitions ≤ 30 + 13 × chunksPerExecution events: 19,530 for the default 1,500
 * (room for ~1,800 retry events, 3 per Lambda retry), 23,430 for the allowed maximum
 * 1,800 (src/backfill/limits.ts). A backfill of 10^9 offsets in 100,000-offset
 * chunks is 10,000 chunks: 7 executions, each started by the last.
 *
 * The task contract (functions/backfill, src/backfill/tasks.ts):
 *   Plan / Replan: {action: 'plan', table, chunksPerExecution?, execution?}
 *                  → {table, chunksPerExecution, execution, chunksPerPartition, partitions: [cursor]}
 *   Chunk:         {action: 'chunk', table, cursor} → cursor (with `done`)
 * A chunk is idempotent (its range is committed contiguously, once), so every task retries
 * on any error: a chunk run twice changes nothing.
 */
import { ArnFormat, Aws, Duration, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';

/** State names the local runner maps to the engine (taskResourceLocalHandlers is keyed by state name). */
export const backfillStates = {
  plan: 'Plan',
  replan: 'Replan',
  chunk: 'Chunk',
  continueAsNew: 'ContinueAsNew',
} as const;

/** Error names (Lambda's errorType) of requests that can never succeed: not retried. */
export const badRequestErrors = ['BackfillTaskError', 'ChunkRequestError', 'TableError'] as const;

export interface BackfillStateMachineProps {
  /** The function behind Plan, Replan and Chunk (functions/backfill). */
  backfill: lambda.IFunction;
  /** How many partitions run their chunks at once. */
  maxConcurrency?: number;
}

export class BackfillStateMachine extends Construct {
  readonly stateMachine: sfn.StateMachine;

  constructor(scope: Construct, id: string, props: BackfillStateMachineProps) {
    super(scope, id);
    const stack = Stack.of(this);
    // A fixed name, so the machine's own ARN is known without referring to the machine:
    // the StartExecution permission on itself would otherwise be a circular dependency.
    const name = `${stack.stackName}-backfill`;
    const selfArn = stack.formatArn({ service: 'states', resource: 'stateMachine', resourceName: name, arnFormat: ArnFormat.COLON_RESOURCE_NAME });

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
          // The execution input, so the plan can take its defaults and the last execution's cursors.
          input: sfn.JsonPath.entirePayload,
        }),
        // Plan: no ResultPath (its result replaces the state; aws-local-stepfunctions 3.0.0
        // would nest an explicit "$" under a key "$"). Replan: $.next.
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
        cursor: sfn.JsonPath.objectAt('$.cursor'),
      }),
      resultPath: '$.cursor',
    });
    retryAll(chunk);
    // The chunk counter lives in the state: it is what bounds one execution's history.
    const count = new sfn.Pass(this, 'Count', {
      parameters: {
        table: sfn.JsonPath.stringAt('$.table'),
        cursor: sfn.JsonPath.objectAt('$.cursor'),
        budget: sfn.JsonPath.numberAt('$.budget'),
        chunks: sfn.JsonPath.mathAdd(sfn.JsonPath.numberAt('$.chunks'), 1),
      },
    });
    const perPartition = chunk.next(count).next(
      new sfn.Choice(this, 'MoreChunks')
        .when(sfn.Condition.booleanEquals('$.cursor.done', true), new sfn.Succeed(this, 'PartitionDone'))
        .when(sfn.Condition.numberGreaterThanEqualsJsonPath('$.chunks', '$.budget'), new sfn.Succeed(this, 'BudgetSpent'))
        .otherwise(chunk),
    );
    const partitions = new sfn.Map(this, 'Partitions', {
      itemsPath: '$.partitions',
      maxConcurrency: props.maxConcurrency ?? 10,
      itemSelector: {
        table: sfn.JsonPath.stringAt('$.table'),
        cursor: sfn.JsonPath.objectAt('$$.Map.Item.Value'),
        budget: sfn.JsonPath.numberAt('$.chunksPerPartition'),
        chunks: 0,
      },
      resultPath: sfn.JsonPath.DISCARD,
    });
    partitions.itemProcessor(perPartition);

    // The catalog, not the Map's results, says what is left: Replan reads it again.
    const replan = planTask(backfillStates.replan, '$.next');
    const continueAsNew = new sfn.CustomState(this, backfillStates.continueAsNew, {
      stateJson: {
        Type: 'Task',
        Resource: `arn:${Aws.PARTITION}:states:::states:startExecution`,
        Parameters: {
          'StateMachineArn.$': '$$.StateMachine.Id',
          Input: {
            'table.$': '$.table',
            'chunksPerExecution.$': '$.chunksPerExecution',
            'execution.$': 'States.MathAdd($.execution, 1)',
            'cursors.$': '$.next.partitions',
            'AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$': '$$.Execution.Id',
          },
        },
        ResultSelector: { 'executionArn.$': '$.ExecutionArn' },
        ResultPath: '$.continuedAs',
        Retry: [{ ErrorEquals: ['States.ALL'], IntervalSeconds: 5, BackoffRate: 2, MaxAttempts: 8 }],
      },
    });
    const done = new sfn.Succeed(this, 'Done');

    const definition = plan.next(
      new sfn.Choice(this, 'HasWork')
        .when(sfn.Condition.isPresent('$.partitions[0]'), partitions.next(replan).next(
          new sfn.Choice(this, 'Unfinished').when(sfn.Condition.isPresent('$.next.partitions[0]'), continueAsNew).otherwise(done),
        ))
        .otherwise(done),
    );

    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      stateMachineName: name,
      stateMachineType: sfn.StateMachineType.STANDARD,
      definitionBody: sfn.DefinitionBody.fromChainable(definition),
      timeout: Duration.days(7),
      logs: {
        destination: new logs.LogGroup(this, 'Logs', { retention: logs.RetentionDays.ONE_MONTH }),
        level: sfn.LogLevel.ERROR,
      },
    });
    // Continue-as-new: StartExecution on this machine only.
    this.stateMachine.addToRolePolicy(new iam.PolicyStatement({ actions: ['states:StartExecution'], resources: [selfArn] }));
  }
}
