/**
 * What both state machines (backfill, index backfill) share: a Standard machine with a
 * fixed name that continues as a new execution of itself (StartExecution by name) before
 * its history fills up. A fixed name, so the machine's own ARN is known without referring
 * to the machine: the StartExecution permission on itself would otherwise be a circular
 * dependency.
 */
import { ArnFormat, Aws, Duration, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';

/** StartExecution's error for a name already used (Step Functions' service integration names it so). */
export const executionAlreadyExists = 'StepFunctions.ExecutionAlreadyExistsException';

/**
 * The ContinueAsNew state: StartExecution of this machine named `$.continuation.name`,
 * with `input` (JSONPath fields) and the execution that started it. A name already taken
 * means the next execution was started already (a retried StartExecution whose answer was
 * lost, or a scheduled check): it goes on, this one ends (AlreadyContinued).
 */
export function continueAsNewState(scope: Construct, stateName: string, input: Record<string, string>): sfn.CustomState {
  const state = new sfn.CustomState(scope, stateName, {
    stateJson: {
      Type: 'Task',
      Resource: `arn:${Aws.PARTITION}:states:::states:startExecution`,
      Parameters: {
        'StateMachineArn.$': '$$.StateMachine.Id',
        'Name.$': '$.continuation.name',
        Input: { ...input, 'AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$': '$$.Execution.Id' },
      },
      ResultSelector: { 'executionArn.$': '$.ExecutionArn' },
      ResultPath: '$.continuedAs',
    },
  });
  state.addRetry({ errors: [executionAlreadyExists], maxAttempts: 0 });
  state.addRetry({ errors: [sfn.Errors.ALL], interval: Duration.seconds(5), backoffRate: 2, maxAttempts: 8 });
  state.addCatch(new sfn.Succeed(scope, 'AlreadyContinued'), { errors: [executionAlreadyExists], resultPath: '$.alreadyContinued' });
  return state;
}

/** The machine named `name` running `definition`, allowed StartExecution on itself only (continue-as-new). */
export function selfContinuingMachine(scope: Construct, name: string, definition: sfn.IChainable): sfn.StateMachine {
  const machine = new sfn.StateMachine(scope, 'StateMachine', {
    stateMachineName: name,
    stateMachineType: sfn.StateMachineType.STANDARD,
    definitionBody: sfn.DefinitionBody.fromChainable(definition),
    timeout: Duration.days(7),
    logs: {
      destination: new logs.LogGroup(scope, 'Logs', { retention: logs.RetentionDays.ONE_MONTH }),
      level: sfn.LogLevel.ERROR,
    },
  });
  const selfArn = Stack.of(scope).formatArn({ service: 'states', resource: 'stateMachine', resourceName: name, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
  machine.addToRolePolicy(new iam.PolicyStatement({ actions: ['states:StartExecution'], resources: [selfArn] }));
  return machine;
}
