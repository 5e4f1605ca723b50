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

export interface SelfContinuingStateMachineProps {
  /** The machine is named `<stack>-<suffix>`. */
  suffix: string;
  /** Its definition, the functions' ARNs and the partition as tokens that CloudFormation resolves. */
  definition: AslDefinition;
  /** The functions its Task states invoke. */
  invokes: lambda.IFunction[];
}

/** A state machine allowed to invoke its functions and StartExecution on itself only (continue-as-new). */
export class SelfContinuingStateMachine extends Construct {
  readonly stateMachine: sfn.StateMachine;

  constructor(scope: Construct, id: string, props: SelfContinuingStateMachineProps) {
    super(scope, id);
    const name = stackScopedName(this, props.suffix, 80);
    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      stateMachineName: name,
      stateMachineType: sfn.StateMachineType.STANDARD,
      // The definition's own TimeoutSeconds bounds an execution (a week).
      definitionBody: sfn.DefinitionBody.fromString(Stack.of(this).toJsonString(props.definition)),
      logs: {
        destination: new logs.LogGroup(this, 'Logs', { retention: logs.RetentionDays.ONE_MONTH }),
        level: sfn.LogLevel.ERROR,
      },
    });
    for (const fn of props.invokes) fn.grantInvoke(this.stateMachine);
    const selfArn = Stack.of(this).formatArn({ service: 'states', resource: 'stateMachine', resourceName: name, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
    this.stateMachine.addToRolePolicy(new iam.PolicyStatement({ actions: ['states:StartExecution'], resources: [selfArn] }));
  }
}

/** The backfill state machine, its Plan, Replan and Chunk states invoking `backfill` (functions/backfill). */
export function backfillStateMachine(scope: Construct, id: string, backfill: lambda.IFunction): SelfContinuingStateMachine {
  const definition = backfillDefinition({ partition: Aws.PARTITION, functionArns: { backfill: backfill.functionArn } });
  return new SelfContinuingStateMachine(scope, id, { suffix: backfillMachineSuffix, definition, invokes: [backfill] });
}

/** The index backfill state machine, its Step state invoking `step` (functions/index-backfill). */
export function indexBackfillStateMachine(scope: Construct, id: string, step: lambda.IFunction): SelfContinuingStateMachine {
  const definition = indexBackfillDefinition({ partition: Aws.PARTITION, functionArns: { indexBackfill: step.functionArn } });
  return new SelfContinuingStateMachine(scope, id, { suffix: indexBackfillMachineSuffix, definition, invokes: [step] });
}
