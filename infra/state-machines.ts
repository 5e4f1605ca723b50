/**
 * The two state machines (backfill, index backfill), deployed from their definitions in
 * src (src/backfill/definition.ts, src/index-backfill/definition.ts: pure data that the
 * local runner executes too), their Tasks pointing at the deployed functions.
 *
 * Each is a Standard machine with a fixed name that continues as a new execution of
 * itself (StartExecution by name) before its history fills up. A fixed name, so the
 * machine's own ARN is known without referring to the machine: the StartExecution
 * permission on itself would otherwise be a circular dependency.
 */
import { ArnFormat, Aws, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { stackScopedName } from './names.js';
import { backfillDefinition, backfillMachineSuffix } from '../src/backfill/definition.js';
import { indexBackfillDefinition, indexBackfillMachineSuffix } from '../src/index-backfill/definition.js';
import type { AslDefinition } from '../src/state-machines/asl.js';

/**
 * The machine named `<stack>-<suffix>` running `definition` (its tokens, the functions'
 * ARNs and the partition, resolved by CloudFormation), allowed to invoke `functions` and
 * StartExecution on itself only (continue-as-new).
 */
function selfContinuingMachine(scope: Construct, suffix: string, definition: AslDefinition, functions: lambda.IFunction[]): sfn.StateMachine {
  const name = stackScopedName(scope, suffix, 80);
  const machine = new sfn.StateMachine(scope, 'StateMachine', {
    stateMachineName: name,
    stateMachineType: sfn.StateMachineType.STANDARD,
    // The definition's own TimeoutSeconds bounds an execution (a week).
    definitionBody: sfn.DefinitionBody.fromString(Stack.of(scope).toJsonString(definition)),
    logs: {
      destination: new logs.LogGroup(scope, 'Logs', { retention: logs.RetentionDays.ONE_MONTH }),
      level: sfn.LogLevel.ERROR,
    },
  });
  for (const fn of functions) fn.grantInvoke(machine);
  const selfArn = Stack.of(scope).formatArn({ service: 'states', resource: 'stateMachine', resourceName: name, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
  machine.addToRolePolicy(new iam.PolicyStatement({ actions: ['states:StartExecution'], resources: [selfArn] }));
  return machine;
}

export interface BackfillStateMachineProps {
  /** The function behind Plan, Replan and Chunk (functions/backfill). */
  backfill: lambda.IFunction;
}

export class BackfillStateMachine extends Construct {
  readonly stateMachine: sfn.StateMachine;

  constructor(scope: Construct, id: string, props: BackfillStateMachineProps) {
    super(scope, id);
    const definition = backfillDefinition({ partition: Aws.PARTITION, functionArns: { backfill: props.backfill.functionArn } });
    this.stateMachine = selfContinuingMachine(this, backfillMachineSuffix, definition, [props.backfill]);
  }
}

export interface IndexBackfillStateMachineProps {
  /** The function behind Step (functions/index-backfill). */
  step: lambda.IFunction;
}

export class IndexBackfillStateMachine extends Construct {
  readonly stateMachine: sfn.StateMachine;

  constructor(scope: Construct, id: string, props: IndexBackfillStateMachineProps) {
    super(scope, id);
    const definition = indexBackfillDefinition({ partition: Aws.PARTITION, functionArns: { indexBackfill: props.step.functionArn } });
    this.stateMachine = selfContinuingMachine(this, indexBackfillMachineSuffix, definition, [props.step]);
  }
}
