/**
 * `cdklocal deploy -c localstackCore=true`: the part of the stack that LocalStack's
 * open-source core (`localstack-core` from PyPI, started on the host, without Docker and
 * without an auth token) deploys and runs: the backfill state machine, the tick and
 * retention schedules, and the secrets the stack creates. Left out, because they need
 * Docker or LocalStack's paid tier:
 *
 * - every Lambda function. LocalStack runs functions in Docker containers; without Docker
 *   CreateFunction ends in state Failed (the runtime image cannot be pulled), which fails
 *   the stack. With them go the reader's function URL, the migrations custom resource
 *   (its provider is a function too) and the grants to the functions' roles;
 * - the Kafka event source mappings (MSK and self-managed: paid tier);
 * - RDS and RDS Proxy (paid tier: CloudFormation "deploys" them as empty fallbacks, and the
 *   functions' `rds-db:connect` grant, since removed, failed on the proxy's missing ARN);
 * - the security groups and VPC endpoints: nothing is left to put in the VPC.
 *
 * The state machine's tasks and the schedules' targets name functions `<stack>-backfill`,
 * `-tick` and `-retention` that this stack does not create: an execution or a schedule
 * deploys, starts and then fails at its Lambda call. test/unit/infra.test.ts checks that
 * what is kept here matches the full stack (infra/stack.ts) property for property, so the
 * two cannot drift apart silently.
 */
import { ArnFormat, Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as rds from 'aws-cdk-lib/aws-rds';
import type { Construct } from 'constructs';
import { backfillStateMachine, type SelfContinuingStateMachine } from './state-machines.js';
import { stackScopedName } from './names.js';
import { functionLogins, readerTokenSecret, scheduleTickAndRetention } from './shared-resources.js';
import type { OffsetlakeStackProps } from './stack.js';

export class LocalstackCoreStack extends Stack {
  readonly backfillStateMachine: SelfContinuingStateMachine;

  constructor(scope: Construct, id: string, props: OffsetlakeStackProps) {
    super(scope, id, props);
    const settings = props.settings;

    // A function this stack names but does not create (Lambda needs Docker).
    const uncreatedFunction = (id: string, suffix: string): lambda.IFunction => lambda.Function.fromFunctionAttributes(this, id, {
      functionArn: this.formatArn({ service: 'lambda', resource: 'function', resourceName: stackScopedName(this, suffix, 64), arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
      // No function, so no resource policy for the schedules' invoke permission.
      skipPermissions: true,
    });

    this.backfillStateMachine = backfillStateMachine(this, 'BackfillMachine', uncreatedFunction('Backfill', 'backfill'));

    // The same secrets as infra/stack.ts: the reader's token, the functions' logins and, for a database the stack
    // creates, its generated credentials (there RDS makes this secret; here nothing uses it).
    readerTokenSecret(this);
    functionLogins(this, settings);
    if (settings.database.kind === 'create') new rds.DatabaseSecret(this, 'DatabaseSecret', { username: 'offsetlake' });

    scheduleTickAndRetention(this, settings, uncreatedFunction('Tick', 'tick'), uncreatedFunction('Retention', 'retention'));
  }
}
