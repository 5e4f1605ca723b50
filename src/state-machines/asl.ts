/**
 * What both state machines (backfill, index backfill) share, as Amazon States Language
 * data: a Standard, JSONPath machine (no JSONata, no Distributed Map, so that
 * aws-local-stepfunctions runs the very definition that deploys) that continues as a new
 * execution of itself, by name, before its history fills up (an execution holds at most
 * 25,000 events). Pure: no AWS, no I/O. infra/stack.ts deploys these definitions with
 * the deployed functions' ARNs; the local runner executes them with placeholders
 * (localTargets) and every Task overridden by state name.
 */

export type Json = null | boolean | number | string | Json[] | { [field: string]: Json };

/** A state: its Type, and the fields of the States Language for that type. */
export interface AslState {
  Type: 'Task' | 'Pass' | 'Choice' | 'Map' | 'Wait' | 'Succeed' | 'Fail';
  [field: string]: Json;
}

export interface AslDefinition {
  StartAt: string;
  States: Record<string, AslState>;
  TimeoutSeconds?: number;
}

/** Where a definition's Task states point: the AWS partition and the Lambda functions' ARNs (by role). */
export interface StateMachineTargets<Functions extends string> {
  /** `aws`, `aws-cn`, …: the partition of the Step Functions service integration's ARN. */
  partition: string;
  functionArns: Record<Functions, string>;
}

/** The region and account of local runs' placeholder ARNs (the runner overrides every Task: they are never called). */
const localRegion = 'us-east-1';
const localAccount = '000000000000';

/** Placeholder targets for a local run: `arn:aws:lambda:<local region>:<local account>:function:<role>`. */
export function localTargets<Functions extends string>(functions: readonly Functions[]): StateMachineTargets<Functions> {
  const functionArns = Object.fromEntries(functions.map((role) => [role, `arn:aws:lambda:${localRegion}:${localAccount}:function:${role}`]));
  return { partition: 'aws', functionArns: functionArns as Record<Functions, string> };
}

/** A definition as a local run executes it, with the name and ARN its context object gives ($$.StateMachine). */
export interface LocalMachine {
  definition: AslDefinition;
  stateMachineName: string;
  stateMachineArn: string;
}

/**
 * The machine of the default stack (`Offsetlake`, infra/app.ts) named `<stack>-<suffix>`
 * as infra/names.ts names it, in the local region and account.
 */
export function localMachine(suffix: string, definition: AslDefinition): LocalMachine {
  const stateMachineName = `Offsetlake-${suffix}`;
  return { definition, stateMachineName, stateMachineArn: `arn:aws:states:${localRegion}:${localAccount}:stateMachine:${stateMachineName}` };
}

/** An execution may run a week at most: a backfill chain goes on in the next one long before. */
const executionTimeoutSeconds = 7 * 24 * 60 * 60;

/** StartExecution's error for a name already used (Step Functions' service integration names it so). */
export const executionAlreadyExists = 'StepFunctions.ExecutionAlreadyExistsException';

/**
 * A Lambda task's retries: a request that can never succeed (`badRequests`, Lambda's
 * errorType) fails at once; anything else is retried with backoff, since every task is
 * idempotent (a retried step finds what its first attempt committed).
 */
export function taskRetries(badRequests: readonly string[]): Json[] {
  return [
    { ErrorEquals: [...badRequests], MaxAttempts: 0 },
    { ErrorEquals: ['States.ALL'], IntervalSeconds: 5, MaxAttempts: 8, BackoffRate: 2, MaxDelaySeconds: 120 },
  ];
}

/** The name of the state that starts the next execution (continueAsNewStates). */
export const continueAsNewState = 'ContinueAsNew';

/**
 * The ContinueAsNew state and its AlreadyContinued: StartExecution
 * of this machine named `$.continuation.name`, with `input` (a Parameters template) and the
 * execution that started it. A name already taken means the next execution was started
 * already (a retried StartExecution whose answer was lost, or the scheduled check): it goes
 * on, this one ends.
 */
function continueAsNewStates(partition: string, input: Record<string, string>): Record<string, AslState> {
  return {
    [continueAsNewState]: {
      Type: 'Task',
      End: true,
      Resource: `arn:${partition}:states:::states:startExecution`,
      Parameters: {
        'StateMachineArn.$': '$$.StateMachine.Id',
        'Name.$': '$.continuation.name',
        Input: { ...input, 'AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$': '$$.Execution.Id' },
      },
      ResultSelector: { 'executionArn.$': '$.ExecutionArn' },
      ResultPath: '$.continuedAs',
      Retry: [
        { ErrorEquals: [executionAlreadyExists], MaxAttempts: 0 },
        { ErrorEquals: ['States.ALL'], IntervalSeconds: 5, MaxAttempts: 8, BackoffRate: 2 },
      ],
      Catch: [{ ErrorEquals: [executionAlreadyExists], ResultPath: '$.alreadyContinued', Next: 'AlreadyContinued' }],
    },
    AlreadyContinued: { Type: 'Succeed' },
  };
}

/**
 * A machine that starts at `startAt` and runs `states`, one of which goes on to
 * ContinueAsNew (added here, with AlreadyContinued), which starts the next execution with
 * `continueInput`; an execution times out after a week.
 */
export function selfContinuingDefinition(partition: string, startAt: string, states: Record<string, AslState>, continueInput: Record<string, string>): AslDefinition {
  return { StartAt: startAt, States: { ...states, ...continueAsNewStates(partition, continueInput) }, TimeoutSeconds: executionTimeoutSeconds };
}
