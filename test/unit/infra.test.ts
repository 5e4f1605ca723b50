/**
 * The CDK app's synthesized template: event sources, runtime, memory, schedules, the
 * backfill state machine, and IAM statements no wider than needed. Synthesized
 * in-process with asset bundling skipped (the bundles are `cdk synth`'s job in CI).
 */
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveDefinitionString } from '../../infra/definition.js';
import { memoryForFileBytes, settingsFromContext, type OffsetlakeSettings } from '../../infra/config.js';
import { OffsetlakeStack } from '../../infra/stack.js';

const clusterArn = 'arn:aws:kafka:eu-west-1:123456789012:cluster/lake/0b1c2d3e-aaaa-bbbb-cccc-123456789012-7';
const MiB = 1024 * 1024;

function synth(context: Record<string, unknown>): Template {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const settings: OffsetlakeSettings = settingsFromContext((key) => context[key]);
  const stack = new OffsetlakeStack(app, 'Lake', { settings, env: { account: '123456789012', region: 'eu-west-1' } });
  return Template.fromStack(stack);
}

type Resource = { Type: string; Properties: Record<string, any> };
type Statement = { Effect: string; Action: string | string[]; Resource: unknown };

/** Inline policy statements per role logical id (managed policies are AWS's, listed apart). */
function statementsByRole(template: Template): Map<string, Statement[]> {
  const byRole = new Map<string, Statement[]>();
  for (const policy of Object.values(template.findResources('AWS::IAM::Policy')) as Resource[]) {
    for (const role of policy.Properties.Roles as { Ref: string }[]) {
      byRole.set(role.Ref, [...(byRole.get(role.Ref) ?? []), ...(policy.Properties.PolicyDocument.Statement as Statement[])]);
    }
  }
  return byRole;
}

function roleOf(template: Template, functionIdPrefix: string): string {
  const functions = template.findResources('AWS::Lambda::Function') as Record<string, Resource>;
  const [, fn] = Object.entries(functions).find(([id]) => id.startsWith(functionIdPrefix))!;
  return (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
}

const actions = (statement: Statement): string[] => (Array.isArray(statement.Action) ? statement.Action : [statement.Action]);
const resources = (statement: Statement): unknown[] => (Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource]);

describe('the CDK stack, MSK with IAM auth, a new VPC, a new database', () => {
  let template: Template;
  beforeAll(() => {
    template = synth({ mskClusterArn: clusterArn, kafkaBrokers: 'b-1.lake:9098,b-2.lake:9098', topics: 'orders,payments', fileBytesMiB: 128, batchSize: 5000, batchingWindowSeconds: 20 });
  });

  it('one event source mapping per topic: batch size, window, LATEST, named group, no retry limit, no record age, no bisect, no on-failure', () => {
    const mappings = template.findResources('AWS::Lambda::EventSourceMapping') as Record<string, Resource>;
    expect(Object.values(mappings).map((m) => m.Properties.Topics).sort()).toEqual([['orders'], ['payments']]);
    for (const { Properties: p } of Object.values(mappings)) {
      expect(p).toMatchObject({ EventSourceArn: clusterArn, BatchSize: 5000, MaximumBatchingWindowInSeconds: 20, StartingPosition: 'LATEST' });
      expect(p.AmazonManagedKafkaEventSourceConfig.ConsumerGroupId).toBe(`offsetlake-indexer-${p.Topics[0]}`);
      // Unset = Lambda's defaults for Kafka: infinite retries, records never age out.
      for (const key of ['MaximumRetryAttempts', 'MaximumRecordAgeInSeconds', 'DestinationConfig', 'FunctionResponseTypes', 'SourceAccessConfigurations']) {
        expect(p, key).not.toHaveProperty(key);
      }
      expect(p.BisectBatchOnFunctionError ?? false).toBe(false);
    }
  });

  it('five functions on nodejs22.x; the builders\' memory follows file_bytes', () => {
    const functions = Object.values(template.findResources('AWS::Lambda::Function', { Properties: { Runtime: Match.anyValue() } })) as Resource[];
    const ours = functions.filter((f) => f.Properties.Handler === 'index.handler');
    expect(ours).toHaveLength(5);
    for (const fn of ours) {
      expect(fn.Properties.Runtime).toBe('nodejs22.x');
      expect(fn.Properties.VpcConfig.SubnetIds).toBeDefined();
      expect(Object.keys(fn.Properties.Environment.Variables)).toEqual(expect.arrayContaining(['DATABASE_SECRET_ARN', 'DATABASE_HOST', 'KAFKA_BROKERS', 'KAFKA_AUTH']));
      expect(fn.Properties.Environment.Variables).not.toHaveProperty('DATABASE_URL');
    }
    expect(ours.map((f) => f.Properties.MemorySize).sort((a, b) => a - b)).toEqual([512, 1024, 1024, 1024, 2048]);
    expect(memoryForFileBytes(128 * MiB)).toBe(1024);
    expect(memoryForFileBytes(512 * MiB)).toBe(3328);
    expect(memoryForFileBytes(1024 * MiB)).toBe(6400);
    expect(memoryForFileBytes(4 * MiB)).toBe(1024);
  });

  it('schedules: the idle tick every minute, retention with discovery every 5 minutes', () => {
    const rules = Object.values(template.findResources('AWS::Events::Rule')) as Resource[];
    expect(rules.map((r) => r.Properties.ScheduleExpression).sort()).toEqual(['rate(1 minute)', 'rate(5 minutes)']);
  });

  it('Postgres through RDS Proxy with TLS, its credentials in Secrets Manager', () => {
    template.resourceCountIs('AWS::RDS::DBInstance', 1);
    template.hasResourceProperties('AWS::RDS::DBProxy', { RequireTLS: true, EngineFamily: 'POSTGRESQL' });
    // The database's generated credentials and the reader's token.
    template.resourceCountIs('AWS::SecretsManager::Secret', 2);
  });

  it('the backfill state machine: Standard, JSONPath, plan → Map of slot loops → continue as a new execution named after the next one', () => {
    const machine = Object.values(template.findResources('AWS::StepFunctions::StateMachine'))[0] as Resource;
    expect(machine.Properties.StateMachineType).toBe('STANDARD');
    expect(machine.Properties.StateMachineName).toBe('Lake-backfill');
    const definition = JSON.parse(resolveDefinitionString(machine.Properties.DefinitionString));
    expect(definition.QueryLanguage ?? 'JSONPath').toBe('JSONPath');
    expect(definition.StartAt).toBe('Plan');
    const states = definition.States;
    expect(Object.keys(states).sort()).toEqual(['AlreadyContinued', 'ContinueAsNew', 'Done', 'HasWork', 'Plan', 'Replan', 'Slots', 'Unfinished']);
    expect(states.Plan.Parameters).toEqual({ action: 'plan', 'table.$': '$.table', 'input.$': '$', slots: 10 });
    // The Map iterates slot numbers (at most its concurrency), not partitions; no cursor enters the state.
    expect(states.Slots.Type).toBe('Map');
    expect(states.Slots.ItemsPath).toBe('$.slots');
    expect(states.Slots.MaxConcurrency).toBe(10);
    expect(states.Slots.ItemProcessor.ProcessorConfig.Mode).toBe('INLINE');
    expect(states.Slots.ItemSelector).toEqual({
      'table.$': '$.table', 'tableId.$': '$.tableId', 'executionName.$': '$$.Execution.Name', 'slot.$': '$$.Map.Item.Value', 'budget.$': '$.chunksPerSlot', chunks: 0,
    });
    expect(states.Slots.ResultPath).toBeNull();
    expect(JSON.stringify(definition)).not.toMatch(/cursor|partitions/);
    const loop = states.Slots.ItemProcessor.States;
    expect(loop.Chunk.Next).toBe('Count');
    expect(loop.Count.Parameters['chunks.$']).toBe('States.MathAdd($.chunks, 1)');
    expect(Object.keys(loop.Count.Parameters).sort()).toEqual(['budget.$', 'chunks.$', 'executionName.$', 'idle.$', 'slot.$', 'table.$', 'tableId.$']);
    expect(loop.MoreChunks.Choices).toEqual([
      { Variable: '$.idle', BooleanEquals: true, Next: 'SlotIdle' },
      { Variable: '$.chunks', NumericGreaterThanEqualsPath: '$.budget', Next: 'BudgetSpent' },
    ]);
    expect(loop.MoreChunks.Default).toBe('Chunk');
    // A step is idempotent: any failure is retried, except a request that can never succeed.
    expect(loop.Chunk.Retry).toEqual([
      { ErrorEquals: ['BackfillTaskError', 'ChunkRequestError', 'TableError'], MaxAttempts: 0 },
      { ErrorEquals: ['States.ALL'], IntervalSeconds: 5, BackoffRate: 2, MaxAttempts: 8, MaxDelaySeconds: 120 },
    ]);
    expect(states.Plan.Retry).toEqual(loop.Chunk.Retry);
    expect(states.Replan.ResultPath).toBe('$.replan');
    expect(states.Unfinished.Choices).toEqual([{ Variable: '$.replan.slots[0]', IsPresent: true, Next: 'ContinueAsNew' }]);
    // ContinueAsNew: by name, with the table, the budget and the next number only; a name
    // already taken means the next execution was started: caught, not retried.
    expect(states.ContinueAsNew.Resource).toBe('arn:aws:states:::states:startExecution');
    expect(states.ContinueAsNew.Parameters).toEqual({
      'StateMachineArn.$': '$$.StateMachine.Id',
      'Name.$': '$.continuation.name',
      Input: { 'table.$': '$.table', 'chunksPerExecution.$': '$.chunksPerExecution', 'execution.$': '$.continuation.execution', 'AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$': '$$.Execution.Id' },
    });
    expect(states.ContinueAsNew.Retry[0]).toEqual({ ErrorEquals: ['StepFunctions.ExecutionAlreadyExistsException'], MaxAttempts: 0 });
    expect(states.ContinueAsNew.Catch).toEqual([{ ErrorEquals: ['StepFunctions.ExecutionAlreadyExistsException'], ResultPath: '$.alreadyContinued', Next: 'AlreadyContinued' }]);
    expect(states.AlreadyContinued.Type).toBe('Succeed');
    expect(JSON.stringify(definition)).not.toMatch(/JSONata|DISTRIBUTED/);
  });

  it('IAM: every inline statement names its actions and resources; the wildcards left are AWS\'s own requirements', () => {
    for (const [role, statements] of statementsByRole(template)) {
      for (const statement of statements) {
        expect(actions(statement).some((action) => action === '*' || action.endsWith(':*')), `${role}: ${JSON.stringify(statement.Action)}`).toBe(false);
        // X-Ray and Logs delivery for the state machine's log group accept only "*".
        const wildcardOk = actions(statement).every((action) => action.startsWith('logs:') || action.startsWith('xray:'));
        if (!wildcardOk) expect(resources(statement), `${role}: ${JSON.stringify(statement)}`).not.toContain('*');
      }
    }
  });

  it('IAM: kafka-cluster actions on the cluster, its topics and the indexer\'s groups only', () => {
    const indexer = statementsByRole(template).get(roleOf(template, 'Indexer'))!;
    const kafka = indexer.filter((s) => actions(s).some((a) => a.startsWith('kafka-cluster:')));
    const granted = new Map<string, unknown[]>();
    for (const s of kafka) for (const a of actions(s)) granted.set(a, [...(granted.get(a) ?? []), ...resources(s)]);
    const topic = (name: string) => `arn:aws:kafka:eu-west-1:123456789012:topic/lake/0b1c2d3e-aaaa-bbbb-cccc-123456789012-7/${name}`;
    const group = (name: string) => `arn:aws:kafka:eu-west-1:123456789012:group/lake/0b1c2d3e-aaaa-bbbb-cccc-123456789012-7/offsetlake-indexer-${name}`;
    expect(granted.get('kafka-cluster:Connect')).toEqual([clusterArn]);
    expect(granted.get('kafka-cluster:ReadData')).toEqual([topic('orders'), topic('payments')]);
    expect(granted.get('kafka-cluster:AlterGroup')).toEqual([group('orders'), group('payments')]);
    // The backfill function reads but has no consumer group.
    const backfill = statementsByRole(template).get(roleOf(template, 'Backfill'))!;
    expect(backfill.flatMap(actions).filter((a) => a.startsWith('kafka-cluster:')).sort()).toEqual(['kafka-cluster:Connect', 'kafka-cluster:DescribeCluster', 'kafka-cluster:DescribeTopic', 'kafka-cluster:ReadData']);
  });

  it('IAM: states:StartExecution only on the backfill machine itself (continue-as-new) and for retention\'s discovery', () => {
    const starts = [...statementsByRole(template)].flatMap(([role, statements]) => statements.filter((s) => actions(s).includes('states:StartExecution')).map((s) => [role, resources(s)] as const));
    expect(starts).toHaveLength(2);
    const selfArn = starts.find(([role]) => role.startsWith('BackfillMachine'))![1];
    expect(JSON.stringify(selfArn)).toContain(':stateMachine:Lake-backfill');
    const retention = starts.find(([role]) => role === roleOf(template, 'Retention'))![1];
    expect(retention).toEqual([{ Ref: expect.stringMatching(/^BackfillMachineStateMachine/) }]);
  });

  it('IAM: the five functions and RDS Proxy read the database secret; only the reader reads its token secret', () => {
    const reads = [...statementsByRole(template)].flatMap(([role, statements]) => statements.filter((s) => actions(s).includes('secretsmanager:GetSecretValue')).map((s) => [role, JSON.stringify(resources(s))] as const));
    const bySecret = new Map<string, Set<string>>();
    for (const [role, secret] of reads) bySecret.set(secret, (bySecret.get(secret) ?? new Set()).add(role));
    expect(bySecret.size).toBe(2);
    const tokenSecret = [...bySecret.keys()].find((secret) => secret.includes('ReaderToken'))!;
    expect(bySecret.get(tokenSecret)).toEqual(new Set([roleOf(template, 'Reader')]));
    const databaseSecret = [...bySecret.keys()].find((secret) => secret !== tokenSecret)!;
    const functionRoles = ['Indexer', 'Backfill', 'Tick', 'Retention', 'Reader'].map((id) => roleOf(template, id));
    expect(bySecret.get(databaseSecret)).toEqual(new Set([...functionRoles, expect.stringMatching(/^ProxyIAMRole/)]));
  });

  it('the reader behind a buffered function URL; the handler checks a bearer token from its own secret', () => {
    template.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'NONE', InvokeMode: 'BUFFERED' });
    const reader = (Object.values(template.findResources('AWS::Lambda::Function')) as Resource[]).find((f) => f.Properties.MemorySize === 2048)!;
    expect(Object.keys(reader.Properties.Environment.Variables)).toContain('OFFSETLAKE_TOKEN_SECRET_ARN');
    expect(Object.keys(template.findOutputs('ReaderUrl'))).toEqual(['ReaderUrl']);
  });
});

describe('the CDK stack, self-managed Kafka with SASL/SCRAM, an existing VPC, an existing database', () => {
  const kafkaSecret = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:kafka-scram-AbCdEf';
  const dbSecret = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:catalog-GhIjKl';
  let template: Template;
  beforeAll(() => {
    template = synth({
      kafka: 'self-managed', kafkaSecretArn: kafkaSecret, kafkaScramMechanism: 'SCRAM-SHA-256', kafkaBrokers: 'k1.example:9096', topics: 'events',
      vpcId: 'vpc-0123456789abcdef0', availabilityZones: 'eu-west-1a,eu-west-1b', privateSubnetIds: 'subnet-0aaaaaaaaaaaaaaaa,subnet-0bbbbbbbbbbbbbbbb',
      databaseInstanceId: 'catalog', databaseEndpoint: 'catalog.abc.eu-west-1.rds.amazonaws.com', databaseSecurityGroupId: 'sg-0123456789abcdef0', databaseSecretArn: dbSecret,
      fileBytesMiB: 512,
    });
  });

  it('a self-managed event source with SCRAM-256, inside the VPC', () => {
    const mapping = (Object.values(template.findResources('AWS::Lambda::EventSourceMapping')) as Resource[])[0]!.Properties;
    expect(mapping.SelfManagedEventSource.Endpoints.KafkaBootstrapServers).toEqual(['k1.example:9096']);
    expect(mapping.SourceAccessConfigurations).toEqual(expect.arrayContaining([{ Type: 'SASL_SCRAM_256_AUTH', URI: kafkaSecret }, { Type: 'VPC_SUBNET', URI: 'subnet-0aaaaaaaaaaaaaaaa' }]));
    expect(mapping).not.toHaveProperty('MaximumRetryAttempts');
    template.resourceCountIs('AWS::EC2::VPC', 0);
  });

  it('no database created: a proxy in front of the existing instance; functions read the Kafka and database secrets, the reader its token', () => {
    template.resourceCountIs('AWS::RDS::DBInstance', 0);
    template.hasResourceProperties('AWS::RDS::DBProxy', { Auth: [Match.objectLike({ SecretArn: dbSecret })] });
    const reads = [...statementsByRole(template)].flatMap(([, statements]) => statements.filter((s) => actions(s).includes('secretsmanager:GetSecretValue')).flatMap(resources));
    const secrets = new Set(reads.map((r) => JSON.stringify(r)));
    expect(secrets.size).toBe(3);
    expect(secrets).toContain(JSON.stringify(kafkaSecret));
    expect(secrets).toContain(JSON.stringify(dbSecret));
    expect([...secrets].filter((r) => r.includes('ReaderToken'))).toHaveLength(1);
    const memories = (Object.values(template.findResources('AWS::Lambda::Function')) as Resource[]).filter((f) => f.Properties.Handler === 'index.handler').map((f) => f.Properties.MemorySize);
    expect(memories.sort((a, b) => a - b)).toEqual([512, 2048, 3328, 3328, 3328]);
  });
});

describe('settings from context', () => {
  it('names the key that is missing or wrong', () => {
    expect(() => settingsFromContext(() => undefined)).toThrow(/context "mskClusterArn" is required/);
    expect(() => settingsFromContext((key) => ({ mskClusterArn: 'arn:aws:kafka:x' } as Record<string, unknown>)[key])).toThrow(/not an MSK cluster ARN/);
    const base = { mskClusterArn: clusterArn, kafkaBrokers: 'b:9098', topics: 't' } as Record<string, unknown>;
    expect(() => settingsFromContext((key) => ({ ...base, batchSize: '20000' })[key])).toThrow(/"batchSize" must be an integer from 1 to 10000/);
    expect(() => settingsFromContext((key) => ({ ...base, chunksPerExecution: 5000 })[key])).toThrow(/"chunksPerExecution" must be an integer from 1 to 1800/);
    expect(settingsFromContext((key) => base[key])).toMatchObject({ batchSize: 10_000, batchingWindowSeconds: 10, fileBytes: 128 * MiB, vpc: { kind: 'new' }, database: { kind: 'create' } });
  });
});
