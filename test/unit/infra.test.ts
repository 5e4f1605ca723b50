/**
 * The CDK app's synthesized template: event sources, runtime, memory, schedules, the
 * backfill state machine, and IAM statements no wider than needed. Synthesized
 * in-process with asset bundling skipped (the bundles are `cdk synth`'s job in CI).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type AppProps, Stack } from 'aws-cdk-lib';
import { stackScopedName } from '../../infra/names.js';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { offsetlakeApp } from '../../infra/app.js';
import { resolveDefinitionString } from '../helpers/template-definitions.js';
import { localstackCoreFromContext, memoryForFileBytes, settingsFromContext, type OffsetlakeSettings } from '../../infra/config.js';
import { OffsetlakeStack } from '../../infra/stack.js';
import { latestCatalogVersion } from '../../src/catalog/migrations.js';
import { readerLoginLimits } from '../../src/catalog/reader-login.js';

const clusterArn = 'arn:aws:kafka:eu-west-1:123456789012:cluster/lake/0b1c2d3e-aaaa-bbbb-cccc-123456789012-7';
const MiB = 1024 * 1024;

/** The MSK cluster's network: its VPC, private subnets and security group. */
const clusterNetwork = {
  vpcId: 'vpc-0123456789abcdef0', availabilityZones: 'eu-west-1a,eu-west-1b', privateSubnetIds: 'subnet-0aaaaaaaaaaaaaaaa,subnet-0bbbbbbbbbbbbbbbb',
  kafkaSecurityGroupId: 'sg-0cccccccccccccccc',
};

/**
 * Every app of this file synthesizes into one folder, removed at the end: an App without
 * an outdir makes a new cdk.outXXXXXX in the system's temporary folder and leaves it.
 */
const outdirs = mkdtempSync(join(tmpdir(), 'offsetlake-infra-test-'));
let apps = 0;
afterAll(() => rmSync(outdirs, { recursive: true, force: true }));

function testApp(props: AppProps = {}): App {
  return new App({ ...props, outdir: join(outdirs, String(++apps)) });
}

function synthStacks(context: Record<string, unknown>, ids: string[]): Template[] {
  const app = testApp({ context: { 'aws:cdk:bundling-stacks': [] } });
  const settings: OffsetlakeSettings = settingsFromContext((key) => context[key]);
  const stacks = ids.map((id) => new OffsetlakeStack(app, id, { settings, env: { account: '123456789012', region: 'eu-west-1' } }));
  return stacks.map((stack) => Template.fromStack(stack));
}

function synth(context: Record<string, unknown>): Template {
  return synthStacks(context, ['Lake'])[0]!;
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

function functionNamed(template: Template, functionIdPrefix: string): Resource {
  const functions = template.findResources('AWS::Lambda::Function') as Record<string, Resource>;
  return Object.entries(functions).find(([id]) => new RegExp(`^${functionIdPrefix}[0-9A-F]{8}$`).test(id))![1];
}

/** The secret a construct id starts with, as the JSON of how the template refers to it (a Ref to it or to its attachment). */
function secretNamed(template: Template, idPrefix: string): string {
  const ids = Object.keys(template.toJSON().Resources as Record<string, Resource>);
  const attachment = ids.find((id) => id.startsWith(`${idPrefix}Attachment`) && template.toJSON().Resources[id].Type === 'AWS::SecretsManager::SecretTargetAttachment');
  const secret = ids.find((id) => id.startsWith(idPrefix) && template.toJSON().Resources[id].Type === 'AWS::SecretsManager::Secret');
  return JSON.stringify({ Ref: attachment ?? secret });
}

/** Which roles may read each secret (GetSecretValue), by the JSON of the secret's reference. */
function secretReads(template: Template): Map<string, Set<string>> {
  const bySecret = new Map<string, Set<string>>();
  for (const [role, statements] of statementsByRole(template)) {
    for (const statement of statements.filter((s) => actions(s).includes('secretsmanager:GetSecretValue'))) {
      for (const secret of resources(statement)) bySecret.set(JSON.stringify(secret), (bySecret.get(JSON.stringify(secret)) ?? new Set()).add(role));
    }
  }
  return bySecret;
}

const actions = (statement: Statement): string[] => (Array.isArray(statement.Action) ? statement.Action : [statement.Action]);
const resources = (statement: Statement): unknown[] => (Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource]);

describe('the CDK stack, MSK with IAM auth in the cluster\'s VPC, a new database', () => {
  let template: Template;
  beforeAll(() => {
    template = synth({ mskClusterArn: clusterArn, kafkaBrokers: 'b-1.lake:9098,b-2.lake:9098', topics: 'orders,payments', fileBytesMiB: 128, batchSize: 5000, batchingWindowSeconds: 20, ...clusterNetwork });
  });

  it('one event source mapping per topic: batch size, window, LATEST, named group, no retry limit, no record age, BisectBatchOnFunctionError unset, no on-failure', () => {
    const mappings = template.findResources('AWS::Lambda::EventSourceMapping') as Record<string, Resource>;
    expect(Object.values(mappings).map((m) => m.Properties.Topics).sort()).toEqual([['orders'], ['payments']]);
    for (const { Properties: p } of Object.values(mappings)) {
      expect(p).toMatchObject({ EventSourceArn: clusterArn, BatchSize: 5000, MaximumBatchingWindowInSeconds: 20, StartingPosition: 'LATEST' });
      expect(p.AmazonManagedKafkaEventSourceConfig.ConsumerGroupId).toBe(`offsetlake-indexer-${p.Topics[0]}`);
      // Unset = Lambda's defaults for Kafka: infinite retries, records never age out.
      for (const key of ['MaximumRetryAttempts', 'MaximumRecordAgeInSeconds', 'DestinationConfig', 'FunctionResponseTypes', 'SourceAccessConfigurations']) {
        expect(p, key).not.toHaveProperty(key);
      }
      expect(p).not.toHaveProperty('BisectBatchOnFunctionError');
    }
  });

  it('seven functions on nodejs22.x in the cluster\'s private subnets; the builders\' memory follows file_bytes', () => {
    const functions = Object.values(template.findResources('AWS::Lambda::Function', { Properties: { Runtime: Match.anyValue() } })) as Resource[];
    // The token rotation function is apart: it reaches neither the VPC nor the catalog.
    const ours = functions.filter((f) => f.Properties.Handler === 'index.handler' && f !== functionNamed(template, 'ReaderTokenRotation'));
    expect(ours).toHaveLength(7);
    template.resourceCountIs('AWS::EC2::VPC', 0);
    for (const fn of ours) {
      expect(fn.Properties.Runtime).toBe('nodejs22.x');
      // Graviton unless -c architecture=x86_64; the bundles carry that processor's native binaries (test/integration/lambda-bundles.test.ts).
      expect(fn.Properties.Architectures).toEqual(['arm64']);
      expect(fn.Properties.VpcConfig.SubnetIds).toEqual(['subnet-0aaaaaaaaaaaaaaaa', 'subnet-0bbbbbbbbbbbbbbbb']);
      expect(Object.keys(fn.Properties.Environment.Variables)).toEqual(expect.arrayContaining(['DATABASE_SECRET_ARN', 'DATABASE_HOST', 'KAFKA_BROKERS', 'KAFKA_AUTH']));
      expect(fn.Properties.Environment.Variables).not.toHaveProperty('DATABASE_URL');
    }
    expect(ours.map((f) => f.Properties.MemorySize).sort((a, b) => a - b)).toEqual([512, 512, 1024, 1024, 1024, 1024, 2048]);
    expect(memoryForFileBytes(128 * MiB)).toBe(1024);
    expect(memoryForFileBytes(512 * MiB)).toBe(3328);
    expect(memoryForFileBytes(1024 * MiB)).toBe(6400);
    expect(memoryForFileBytes(4 * MiB)).toBe(1024);
  });

  it('schedules: the idle tick every minute, retention with discovery every 5 minutes', () => {
    const rules = Object.values(template.findResources('AWS::Events::Rule')) as Resource[];
    expect(rules.map((r) => r.Properties.ScheduleExpression).sort()).toEqual(['rate(1 minute)', 'rate(5 minutes)']);
  });

  it('the functions are let into the cluster\'s security group on the broker ports', () => {
    template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
      GroupId: 'sg-0cccccccccccccccc', FromPort: 9092, ToPort: 9098, IpProtocol: 'tcp',
      SourceSecurityGroupId: { 'Fn::GetAtt': [Match.stringLikeRegexp('^FunctionsSecurityGroup'), 'GroupId'] },
    });
  });

  it('Postgres through RDS Proxy with TLS, Multi-AZ, a pinned minor version, its credentials in Secrets Manager', () => {
    template.resourceCountIs('AWS::RDS::DBInstance', 1);
    template.hasResourceProperties('AWS::RDS::DBInstance', { MultiAZ: true, EngineVersion: '17.9', AutoMinorVersionUpgrade: false });
    template.hasResourceProperties('AWS::RDS::DBProxy', { RequireTLS: true, EngineFamily: 'POSTGRESQL' });
    // Issue 46: the server-side bounds in a parameter group, in Postgres's units (kB, ms), the DuckLake logins' own
    template.hasResourceProperties('AWS::RDS::DBParameterGroup', { Family: 'postgres17', Parameters: {
      temp_file_limit: String(1024 * 1024), idle_in_transaction_session_timeout: String(readerLoginLimits.idleInTransactionMs),
      log_min_duration_statement: '10000', log_lock_waits: '1', log_temp_files: '102400',
    } });
    expect(readerLoginLimits.temp_file_limit).toBe('1GB');
    expect(readerLoginLimits.idle_in_transaction_session_timeout).toBe('1h');
    template.hasResourceProperties('AWS::RDS::DBInstance', { DBParameterGroupName: { Ref: Match.stringLikeRegexp('^DatabaseParameters') } });
    template.hasResourceProperties('AWS::RDS::DBProxyTargetGroup', { ConnectionPoolConfigurationInfo: Match.objectLike({ ConnectionBorrowTimeout: 30 }) });
    // The database's generated credentials, the reader's, the writers' and the DuckLake reader's logins, and the reader's token.
    template.resourceCountIs('AWS::SecretsManager::Secret', 5);
  });

  it('the index backfill state machine: Standard, JSONPath, Start → Step → Count → More, looping on Step (after WaitForLease when the lease is held), continuing as a new execution after stepsPerExecution steps', () => {
    const [machine] = Object.entries(template.findResources('AWS::StepFunctions::StateMachine')).filter(([id]) => id.startsWith('IndexBackfillMachine')).map(([, m]) => m as Resource);
    expect(machine!.Properties.StateMachineType).toBe('STANDARD');
    expect(machine!.Properties.StateMachineName).toBe('Lake-index-backfill');
    const definition = JSON.parse(resolveDefinitionString(machine!.Properties.DefinitionString));
    expect(definition.QueryLanguage ?? 'JSONPath').toBe('JSONPath');
    expect(definition.StartAt).toBe('Start');
    const states = definition.States;
    expect(Object.keys(states).sort()).toEqual(['AlreadyContinued', 'ContinueAsNew', 'Count', 'Done', 'More', 'Start', 'Step', 'WaitForLease']);
    expect(states.Step.Parameters).toEqual({ action: 'step', 'indexId.$': '$.indexId', 'execution.$': '$.execution', 'step.$': '$.steps' });
    expect(states.Step.Retry.map((r: { ErrorEquals: string[]; MaxAttempts: number }) => [r.ErrorEquals, r.MaxAttempts])).toEqual([[['IndexBackfillTaskError'], 0], [['States.ALL'], 8]]);
    expect(states.More.Choices.map((c: { Next: string }) => c.Next)).toEqual(['Done', 'ContinueAsNew', 'WaitForLease']);
    expect(states.More.Default).toBe('Step');
    expect(states.WaitForLease.Next).toBe('Step');
    expect(states.ContinueAsNew.Parameters).toEqual({
      'StateMachineArn.$': '$$.StateMachine.Id',
      'Name.$': '$.continuation.name',
      Input: { 'indexId.$': '$.indexId', 'execution.$': '$.continuation.execution', 'stepsPerExecution.$': '$.stepsPerExecution', 'AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$': '$$.Execution.Id' },
    });
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
        // X-Ray and Logs delivery for the state machine's log group accept only "*", and so
        // does GetRandomPassword, which CDK grants every rotation function (it reads no secret).
        const wildcardOk = actions(statement).every((action) => action.startsWith('logs:') || action.startsWith('xray:') || action === 'secretsmanager:GetRandomPassword');
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

  it('IAM: states:StartExecution only on each state machine itself (continue-as-new) and, for the scheduled check, on both machines', () => {
    const starts = [...statementsByRole(template)].flatMap(([role, statements]) => statements.filter((s) => actions(s).includes('states:StartExecution')).map((s) => [role, resources(s)] as const));
    expect(starts).toHaveLength(4);
    const selfArn = starts.find(([role]) => role.startsWith('BackfillMachine'))![1];
    expect(JSON.stringify(selfArn)).toContain(':stateMachine:Lake-backfill"');
    const indexSelfArn = starts.find(([role]) => role.startsWith('IndexBackfillMachine'))![1];
    expect(JSON.stringify(indexSelfArn)).toContain(':stateMachine:Lake-index-backfill"');
    const retention = starts.filter(([role]) => role === roleOf(template, 'Retention')).map(([, resources]) => resources);
    expect(retention).toEqual([[{ Ref: expect.stringMatching(/^BackfillMachineStateMachine/) }], [{ Ref: expect.stringMatching(/^IndexBackfillMachineStateMachine/) }]]);
  });

  it('IAM: each function reads only its own database login: the writers theirs, the reader its login and token, migrate alone the owner (and the other logins, to make them); the DuckLake reader\'s login (for attach) no function but migrate; RDS Proxy the four logins', () => {
    const read = secretReads(template);
    const owner = secretNamed(template, 'DatabaseSecret');
    const readerLogin = secretNamed(template, 'ReaderDatabaseLogin');
    const writerLogin = secretNamed(template, 'WriterDatabaseLogin');
    const duckLakeLogin = secretNamed(template, 'DuckLakeReaderLogin');
    const token = secretNamed(template, 'ReaderToken');
    expect(read.size).toBe(5);
    expect(read.get(duckLakeLogin)).toEqual(new Set([roleOf(template, 'Migrate'), expect.stringMatching(/^ProxyIAMRole/)]));
    expect(JSON.stringify(functionNamed(template, 'Migrate').Properties.Environment.Variables.DUCKLAKE_READER_DATABASE_SECRET_ARN)).toBe(duckLakeLogin);
    template.hasOutput('DuckLakeReaderSecretArn', { Value: JSON.parse(duckLakeLogin) });
    const writers = ['Indexer', 'Backfill', 'IndexBackfill', 'Tick', 'Retention'].map((id) => roleOf(template, id));
    const proxy = expect.stringMatching(/^ProxyIAMRole/);
    expect(read.get(owner)).toEqual(new Set([roleOf(template, 'Migrate'), proxy]));
    expect(read.get(writerLogin)).toEqual(new Set([...writers, roleOf(template, 'Migrate'), proxy]));
    expect(read.get(readerLogin)).toEqual(new Set([roleOf(template, 'Reader'), roleOf(template, 'Migrate'), proxy]));
    expect(read.get(token)).toEqual(new Set([roleOf(template, 'Reader'), roleOf(template, 'ReaderTokenRotation')]));
    // Each function is told the login it may read.
    const told = [...['Indexer', 'Backfill', 'IndexBackfill', 'Tick', 'Retention'].map((id) => [id, writerLogin] as const), ['Reader', readerLogin] as const, ['Migrate', owner] as const];
    for (const [id, secret] of told) expect(JSON.stringify(functionNamed(template, id).Properties.Environment.Variables.DATABASE_SECRET_ARN), id).toBe(secret);
    const migrate = functionNamed(template, 'Migrate').Properties.Environment.Variables;
    expect([JSON.stringify(migrate.READER_DATABASE_SECRET_ARN), JSON.stringify(migrate.WRITER_DATABASE_SECRET_ARN)]).toEqual([readerLogin, writerLogin]);
    template.hasResourceProperties('AWS::RDS::DBProxy', { Auth: [owner, readerLogin, writerLogin, duckLakeLogin].map((secret) => Match.objectLike({ SecretArn: JSON.parse(secret) })) });
  });

  it('IAM: the reader can read neither the owner\'s secret nor any secret but its login and token; the token rotation function reaches the token only', () => {
    const reader = roleOf(template, 'Reader');
    const readable = [...secretReads(template)].filter(([, roles]) => roles.has(reader)).map(([secret]) => secret).sort();
    expect(readable).toEqual([secretNamed(template, 'ReaderDatabaseLogin'), secretNamed(template, 'ReaderToken')].sort());
    const secretActions = statementsByRole(template).get(reader)!.flatMap(actions).filter((a) => a.startsWith('secretsmanager:'));
    expect([...new Set(secretActions)].sort()).toEqual(['secretsmanager:DescribeSecret', 'secretsmanager:GetSecretValue']);
    const rotation = statementsByRole(template).get(roleOf(template, 'ReaderTokenRotation'))!;
    const token = JSON.parse(secretNamed(template, 'ReaderToken'));
    for (const statement of rotation.filter((s) => actions(s).some((a) => a.startsWith('secretsmanager:') && a !== 'secretsmanager:GetRandomPassword'))) {
      expect(resources(statement), JSON.stringify(statement)).toEqual([token]);
    }
    expect(rotation.flatMap(actions).filter((a) => !a.startsWith('secretsmanager:'))).toEqual([]);
  });

  it('IAM: no function gets rds-db:connect (the proxy takes passwords, IAM authentication is off)', () => {
    const connect = [...statementsByRole(template)].filter(([, statements]) => statements.some((s) => actions(s).some((a) => a.startsWith('rds-db:'))));
    expect(connect.map(([role]) => role)).toEqual([]);
    template.hasResourceProperties('AWS::RDS::DBProxy', { Auth: Match.arrayWith([Match.objectLike({ IAMAuth: 'DISABLED' })]) });
  });

  it('rotation every 30 days, hosted single-user Postgres, for the owner\'s secret and the two logins, not at deploy; each rotation function may reach the database', () => {
    const schedules = Object.values(template.findResources('AWS::SecretsManager::RotationSchedule')) as Resource[];
    const hosted = schedules.filter((r) => r.Properties.HostedRotationLambda);
    const rotated = hosted.map((r) => (r.Properties.SecretId as { Ref: string }).Ref).sort();
    expect(rotated).toEqual([expect.stringMatching(/^DatabaseSecretAttachment/), expect.stringMatching(/^DuckLakeReaderLoginAttachment/), expect.stringMatching(/^ReaderDatabaseLoginAttachment/), expect.stringMatching(/^WriterDatabaseLoginAttachment/)]);
    for (const { Properties: p } of hosted) {
      expect(p).toMatchObject({ RotateImmediatelyOnUpdate: false, RotationRules: { ScheduleExpression: 'rate(30 days)' }, HostedRotationLambda: { RotationType: 'PostgreSQLSingleUser' } });
      const group = (p.HostedRotationLambda.VpcSecurityGroupIds as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', { FromPort: 5432, ToPort: 5432, GroupId: { 'Fn::GetAtt': [Match.stringLikeRegexp('^DatabaseSecurityGroup'), 'GroupId'] }, SourceSecurityGroupId: { 'Fn::GetAtt': [group, 'GroupId'] } });
    }
  });

  it('the reader token rotates every 30 days (not at deploy) with its own function, outside the VPC, which Secrets Manager alone, for this account only, may invoke', () => {
    const schedules = (Object.values(template.findResources('AWS::SecretsManager::RotationSchedule')) as Resource[]).filter((r) => !r.Properties.HostedRotationLambda);
    expect(schedules).toHaveLength(1);
    const rotation = Object.keys(template.findResources('AWS::Lambda::Function')).find((id) => /^ReaderTokenRotation[0-9A-F]{8}$/.test(id))!;
    expect(schedules[0]!.Properties).toEqual({
      SecretId: JSON.parse(secretNamed(template, 'ReaderToken')), RotationLambdaARN: { 'Fn::GetAtt': [rotation, 'Arn'] },
      RotationRules: { ScheduleExpression: 'rate(30 days)' }, RotateImmediatelyOnUpdate: false,
    });
    expect(functionNamed(template, 'ReaderTokenRotation').Properties).not.toHaveProperty('VpcConfig');
    const invokers = (Object.values(template.findResources('AWS::Lambda::Permission')) as Resource[]).filter((p) => JSON.stringify(p.Properties.FunctionName).includes(rotation));
    expect(invokers.map((p) => [p.Properties.Principal, p.Properties.SourceAccount])).toEqual([['secretsmanager.amazonaws.com', '123456789012']]);
  });

  it('an errors alarm on each of the eight functions, each notifying the one SNS topic whose ARN is the output AlarmTopicArn', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as Resource[];
    const topic = Object.keys(template.findResources('AWS::SNS::Topic'));
    expect(topic).toHaveLength(1);
    for (const alarm of alarms) expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topic[0] }]);
    const errors = alarms.filter((a) => a.Properties.Namespace === 'AWS/Lambda' && a.Properties.MetricName === 'Errors');
    const watched = errors.map((a) => (a.Properties.Dimensions as { Name: string; Value: { Ref: string } }[]).find((d) => d.Name === 'FunctionName')!.Value.Ref).sort();
    const functions = ['Indexer', 'Backfill', 'IndexBackfill', 'Tick', 'Retention', 'Reader', 'Migrate', 'ReaderTokenRotation'].map((id) => Object.keys(template.findResources('AWS::Lambda::Function')).find((key) => new RegExp(`^${id}[0-9A-F]{8}$`).test(key))!).sort();
    expect(watched).toEqual(functions);
    for (const alarm of errors) expect(alarm.Properties).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', TreatMissingData: 'notBreaching', Statistic: 'Sum', Period: 300 });
    expect(template.findOutputs('AlarmTopicArn').AlarmTopicArn!.Value).toEqual({ Ref: topic[0] });
  });

  it('alarms on the scheduled jobs: each schedule\'s failed invocations, the async failure queue, and both state machines\' failed, timed-out and aborted executions', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as Resource[];
    const rulesWatched = alarms.filter((a) => a.Properties.Namespace === 'AWS/Events' && a.Properties.MetricName === 'FailedInvocations')
      .map((a) => (a.Properties.Dimensions as { Value: { Ref: string } }[])[0]!.Value.Ref).sort();
    expect(rulesWatched).toEqual([expect.stringMatching(/^RetentionSchedule/), expect.stringMatching(/^TickSchedule/)]);
    const machineMetrics = alarms.filter((a) => a.Properties.Namespace === 'AWS/States')
      .map((a) => `${(a.Properties.Dimensions as { Value: { Ref: string } }[])[0]!.Value.Ref.replace(/StateMachine[0-9A-F]{8}$/, '')} ${a.Properties.MetricName}`).sort();
    expect(machineMetrics).toEqual(['BackfillMachine', 'IndexBackfillMachine'].flatMap((m) => ['ExecutionsAborted', 'ExecutionsFailed', 'ExecutionsTimedOut'].map((n) => `${m} ${n}`)));
    const queue = alarms.filter((a) => a.Properties.Namespace === 'AWS/SQS');
    expect(queue.map((a) => [a.Properties.MetricName, a.Properties.Threshold])).toEqual([['ApproximateNumberOfMessagesVisible', 1]]);
  });

  it('a lag alarm on the largest table lag at the default 1,000,000 offsets for three 5-minute periods, alarms on each scheduled job\'s failures and on the reader\'s 5xx, all on the dashboard', () => {
    const alarms = Object.entries(template.findResources('AWS::CloudWatch::Alarm')) as [string, Resource][];
    const own = alarms.filter(([, a]) => a.Properties.Namespace === 'offsetlake');
    const lag = own.filter(([, a]) => a.Properties.MetricName === 'MaxTableLagRecords');
    expect(lag.map(([, a]) => a.Properties)).toEqual([expect.objectContaining({ Dimensions: [{ Name: 'service', Value: 'offsetlake' }], Statistic: 'Maximum', Period: 300, Threshold: 1_000_000, EvaluationPeriods: 3, ComparisonOperator: 'GreaterThanOrEqualToThreshold' })]);
    expect(own.filter(([, a]) => a.Properties.MetricName === 'TableLagRecords')).toEqual([]);
    const jobs = own.filter(([, a]) => a.Properties.MetricName === 'JobFailures').map(([, a]) => a.Properties);
    expect(jobs.map((a) => (a.Dimensions as { Name: string; Value: string }[]).find((d) => d.Name === 'job')!.Value).sort()).toEqual(['retention', 'rotate-token', 'tick']);
    for (const job of jobs) expect(job).toMatchObject({ Statistic: 'Sum', Period: 300, Threshold: 1, EvaluationPeriods: 1 });
    const reader5xx = alarms.filter(([, a]) => a.Properties.Namespace === 'AWS/Lambda' && a.Properties.MetricName === 'Url5xxCount').map(([, a]) => a.Properties);
    expect(reader5xx).toHaveLength(1);
    expect(reader5xx[0]!.Dimensions).toEqual([{ Name: 'FunctionName', Value: { Ref: Object.keys(template.findResources('AWS::Lambda::Function')).find((id) => /^Reader[0-9A-F]{8}$/.test(id)) } }]);
    expect(reader5xx[0]).toMatchObject({ Statistic: 'Sum', Threshold: 1 });
    // Strangers flooding the public URL can hold every reserved instance: said when it lasts 15 minutes.
    const readerId = Object.keys(template.findResources('AWS::Lambda::Function')).find((id) => /^Reader[0-9A-F]{8}$/.test(id));
    const throttled = alarms.filter(([, a]) => a.Properties.Namespace === 'AWS/Lambda' && a.Properties.MetricName === 'Throttles').map(([, a]) => a.Properties);
    expect(throttled).toEqual([expect.objectContaining({ Dimensions: [{ Name: 'FunctionName', Value: { Ref: readerId } }], Statistic: 'Sum', Period: 300, Threshold: 1, EvaluationPeriods: 3 })]);

    const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard')) as Resource[];
    expect(dashboards).toHaveLength(1);
    const body = JSON.stringify(dashboards[0]!.Properties.DashboardBody);
    // the alarm status widget lists every alarm of the stack
    for (const [id] of alarms) expect(body, id).toContain(`{"Fn::GetAtt":["${id}","Arn"]}`);
    for (const metric of ['MaxTableLagRecords', 'JobFailures', 'Url5xxCount', 'Errors', 'RecordsIndexed', 'CommitDuration', 'FileRebuildDuration', 'GranuleRebuildDuration']) expect(body, metric).toContain(metric);
  });

  it('lagAlarmRecords sets the lag threshold and lagAlarmTables adds an alarm per table on its own lag; a name that is no table name is refused', () => {
    const tuned = synth({ mskClusterArn: clusterArn, kafkaBrokers: 'b-1.lake:9098', topics: 'orders', ...clusterNetwork, lagAlarmRecords: '5000', lagAlarmTables: 'orders,payments_eu' });
    const lag = (Object.values(tuned.findResources('AWS::CloudWatch::Alarm')) as Resource[]).filter((a) => a.Properties.Namespace === 'offsetlake' && /LagRecords$/.test(a.Properties.MetricName));
    expect(lag.map((a) => [a.Properties.MetricName, a.Properties.Dimensions, a.Properties.Threshold, a.Properties.EvaluationPeriods, a.Properties.Statistic])).toEqual([
      ['MaxTableLagRecords', [{ Name: 'service', Value: 'offsetlake' }], 5000, 3, 'Maximum'],
      ['TableLagRecords', [{ Name: 'service', Value: 'offsetlake' }, { Name: 'table', Value: 'orders' }], 5000, 3, 'Maximum'],
      ['TableLagRecords', [{ Name: 'service', Value: 'offsetlake' }, { Name: 'table', Value: 'payments_eu' }], 5000, 3, 'Maximum'],
    ]);
    const body = JSON.stringify((Object.values(tuned.findResources('AWS::CloudWatch::Dashboard')) as Resource[])[0]!.Properties.DashboardBody);
    expect(body).toContain('payments_eu');
    expect(() => settingsFromContext((key) => ({ mskClusterArn: clusterArn, kafkaBrokers: 'b-1.lake:9098', topics: 'orders', ...clusterNetwork, lagAlarmTables: 'orders,Payments-EU' } as Record<string, unknown>)[key]))
      .toThrow('context "lagAlarmTables" names "Payments-EU", which is not a table name (lowercase letters, digits and _, at most 63)');
    expect(() => settingsFromContext((key) => ({ mskClusterArn: clusterArn, kafkaBrokers: 'b-1.lake:9098', topics: 'orders', ...clusterNetwork, lagAlarmRecords: '0' } as Record<string, unknown>)[key]))
      .toThrow(/context "lagAlarmRecords" must be an integer from 1/);
  });

  it('the scheduled functions (tick, retention) send an asynchronous invocation that failed its two retries to an encrypted SQS queue; no other function has an async destination', () => {
    const configs = Object.values(template.findResources('AWS::Lambda::EventInvokeConfig')) as Resource[];
    const queue = Object.keys(template.findResources('AWS::SQS::Queue'));
    expect(queue).toHaveLength(1);
    expect(configs.map((c) => (c.Properties.FunctionName as { Ref: string }).Ref.replace(/[0-9A-F]{8}$/, '')).sort()).toEqual(['Retention', 'Tick']);
    for (const { Properties: p } of configs) expect(p).toMatchObject({ MaximumRetryAttempts: 2, DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue[0], 'Arn'] } } } });
    template.hasResourceProperties('AWS::SQS::Queue', { KmsMasterKeyId: 'alias/aws/sqs', MessageRetentionPeriod: 14 * 24 * 3600 });
    for (const id of ['Tick', 'Retention']) {
      const sends = statementsByRole(template).get(roleOf(template, id))!.filter((s) => actions(s).includes('sqs:SendMessage'));
      expect(sends.flatMap(resources), id).toEqual([{ 'Fn::GetAtt': [queue[0], 'Arn'] }]);
    }
  });

  it('the reader behind a function URL with InvokeMode RESPONSE_STREAM (the function is told so in OFFSETLAKE_READER_INVOKE_MODE), a 180 s timeout for 200 MB at 2 MB/s; the handler checks a bearer token from its own secret', () => {
    const urls = Object.values(template.findResources('AWS::Lambda::Url')) as Resource[];
    expect(urls.map((u) => [u.Properties.AuthType, u.Properties.InvokeMode])).toEqual([['NONE', 'RESPONSE_STREAM']]);
    const reader = (Object.values(template.findResources('AWS::Lambda::Function')) as Resource[]).find((f) => f.Properties.MemorySize === 2048)!;
    expect(urls[0]!.Properties.TargetFunctionArn).toEqual({ 'Fn::GetAtt': [Object.entries(template.findResources('AWS::Lambda::Function')).find(([, f]) => f === reader)![0], 'Arn'] });
    expect(Object.keys(reader.Properties.Environment.Variables)).toContain('OFFSETLAKE_TOKEN_SECRET_ARN');
    expect([reader.Properties.Environment.Variables.OFFSETLAKE_READER_INVOKE_MODE, reader.Properties.Timeout]).toEqual(['RESPONSE_STREAM', 180]);
    expect(Object.keys(template.findOutputs('ReaderUrl'))).toEqual(['ReaderUrl']);
  });

  it('-c readerInvokeMode=BUFFERED: the function URL is BUFFERED and the function is told so; another value is refused with the choices', () => {
    const buffered = synth({ mskClusterArn: clusterArn, kafkaBrokers: 'b-1.lake:9098', topics: 'orders', ...clusterNetwork, readerInvokeMode: 'BUFFERED' });
    expect((Object.values(buffered.findResources('AWS::Lambda::Url')) as Resource[]).map((u) => u.Properties.InvokeMode)).toEqual(['BUFFERED']);
    const reader = (Object.values(buffered.findResources('AWS::Lambda::Function')) as Resource[]).find((f) => f.Properties.MemorySize === 2048)!;
    expect(reader.Properties.Environment.Variables.OFFSETLAKE_READER_INVOKE_MODE).toBe('BUFFERED');
    expect(() => settingsFromContext((key) => ({ mskClusterArn: clusterArn, kafkaBrokers: 'b-1.lake:9098', topics: 'orders', ...clusterNetwork, readerInvokeMode: 'STREAM' } as Record<string, unknown>)[key]))
      .toThrow('context "readerInvokeMode" must be one of RESPONSE_STREAM, BUFFERED, got "STREAM"');
  });

  it('the reader has reserved concurrency (10 by default), so its public URL cannot take the others\' concurrency; no other function reserves any', () => {
    const functions = Object.entries(template.findResources('AWS::Lambda::Function')) as [string, Resource][];
    const reserved = functions.filter(([, f]) => f.Properties.ReservedConcurrentExecutions !== undefined).map(([id, f]) => [id.replace(/[0-9A-F]{8}$/, ''), f.Properties.ReservedConcurrentExecutions]);
    expect(reserved).toEqual([['Reader', 10]]);
  });

  it('migrations run once per deploy in a custom resource carrying the catalog version; every function that uses the catalog is created after it', () => {
    const migrations = Object.entries(template.findResources('Custom::OffsetlakeCatalogMigrations')) as [string, Resource][];
    expect(migrations).toHaveLength(1);
    const [migrationId, migration] = migrations[0]!;
    expect(migration.Properties.version).toBe(latestCatalogVersion);
    const functions = Object.entries(template.findResources('AWS::Lambda::Function')) as [string, Resource & { DependsOn?: string[] }][];
    for (const name of ['Indexer', 'Backfill', 'IndexBackfill', 'Tick', 'Retention', 'Reader']) {
      const [, fn] = functions.find(([id]) => id.startsWith(name) && !id.includes('Logs'))!;
      expect(fn.DependsOn, name).toContain(migrationId);
    }
    const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping')) as (Resource & { DependsOn?: string[] })[];
    for (const mapping of mappings) expect(mapping.DependsOn).toContain(migrationId);
  });
});

describe('the CDK stack, MSK with SASL/SCRAM', () => {
  const kafkaSecret = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:AmazonMSK_lake-AbCdEf';
  const keyArn = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
  let template: Template;
  beforeAll(() => {
    template = synth({ mskClusterArn: clusterArn, kafkaAuth: 'scram', kafkaSecretArn: kafkaSecret, kafkaSecretKeyArn: keyArn, kafkaBrokers: 'b-1.lake:9096', topics: 'orders', ...clusterNetwork });
  });

  it('the event source authenticates with the AmazonMSK_ secret, and every function (the indexer\'s role is the event source\'s) may decrypt its customer-managed key, through Secrets Manager only', () => {
    const mapping = (Object.values(template.findResources('AWS::Lambda::EventSourceMapping')) as Resource[])[0]!.Properties;
    expect(mapping.SourceAccessConfigurations).toEqual([{ Type: 'SASL_SCRAM_512_AUTH', URI: kafkaSecret }]);
    for (const name of ['Indexer', 'Backfill', 'Tick', 'Retention', 'Reader', 'Migrate']) {
      const decrypt = statementsByRole(template).get(roleOf(template, name))!.filter((s) => actions(s).includes('kms:Decrypt'));
      expect(decrypt, name).toEqual([expect.objectContaining({
        Effect: 'Allow', Resource: keyArn, Condition: { StringEquals: { 'kms:ViaService': 'secretsmanager.eu-west-1.amazonaws.com' } },
      })]);
    }
  });
});

describe('stack-scoped physical names', () => {
  it('a 128-character stack name gives a proxy name of at most 60 and a state machine name of at most 80 characters, each distinct per stack and valid for its service', () => {
    const long = `Lake${'x'.repeat(120)}Prod`;
    const names = (id: string) => {
      const app = testApp();
      const stack = new Stack(app, id);
      return { proxy: stackScopedName(stack, 'catalog', 60), machine: stackScopedName(stack, 'backfill', 80) };
    };
    const [a, b] = [names(long), names(long.replace('Prod', 'Test'))];
    for (const { proxy, machine } of [a, b]) {
      expect(proxy.length).toBeLessThanOrEqual(60);
      expect(machine.length).toBeLessThanOrEqual(80);
      // RDS Proxy: a letter first, letters, digits and single hyphens, no hyphen at the end.
      expect(proxy).toMatch(/^[A-Za-z](?:[A-Za-z0-9]|-(?=[A-Za-z0-9]))*$/);
      expect(machine).toMatch(/^[A-Za-z0-9_-]{1,80}$/);
    }
    expect(a.proxy).not.toBe(b.proxy);
    expect(a.machine).not.toBe(b.machine);
    expect(names('Lake')).toEqual({ proxy: 'Lake-catalog', machine: 'Lake-backfill' });
  });
});

describe('two stacks in one account and region', () => {
  it('share no physical name: every name property of one template differs from the other\'s', () => {
    const [first, second] = synthStacks({ mskClusterArn: clusterArn, kafkaBrokers: 'b-1.lake:9098', topics: 'orders', ...clusterNetwork }, ['Lake', 'LakeStaging']);
    // Properties that name a resource account- or region-wide; left out are names scoped to
    // their parent: DBName (a database in the instance), PolicyName (an inline policy of its
    // role), TargetGroupName (a proxy's only target group, which RDS requires to be "default"),
    // and what names nothing: MetricName (what an alarm watches), DisplayName (a topic's label).
    const names = (template: Template): Map<string, string> => {
      const found = new Map<string, string>();
      for (const [id, resource] of Object.entries(template.toJSON().Resources as Record<string, Resource>)) {
        for (const [key, value] of Object.entries(resource.Properties ?? {})) {
          // A Ref or GetAtt points at another resource of the same template: not a name of its own.
          const reference = typeof value === 'object' && value !== null && ('Ref' in value || 'Fn::GetAtt' in value);
          if (/Name$/.test(key) && !['DBName', 'DatabaseName', 'PolicyName', 'TargetGroupName', 'MetricName', 'DisplayName'].includes(key) && !reference) found.set(`${id}.${key}`, JSON.stringify(value));
        }
      }
      return found;
    };
    const [a, b] = [names(first!), names(second!)];
    expect([...a.keys()].map((key) => key.split('.')[1]).sort()).toEqual(expect.arrayContaining(['DBProxyName', 'StateMachineName']));
    for (const [key, value] of a) expect(value, key).not.toBe(b.get(key));
    const proxy = (template: Template) => (Object.values(template.findResources('AWS::RDS::DBProxy')) as Resource[])[0]!.Properties.DBProxyName;
    expect([proxy(first!), proxy(second!)]).toEqual(['Lake-catalog', 'LakeStaging-catalog']);
  });
});

describe('the CDK stack, self-managed Kafka with SASL/SCRAM, an existing VPC, an existing database, VPC endpoints, no reserved concurrency', () => {
  const kafkaSecret = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:kafka-scram-AbCdEf';
  const dbSecret = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:catalog-GhIjKl';
  let template: Template;
  beforeAll(() => {
    template = synth({
      kafka: 'self-managed', kafkaSecretArn: kafkaSecret, kafkaScramMechanism: 'SCRAM-SHA-256', kafkaBrokers: 'k1.example:9096', topics: 'events',
      vpcId: 'vpc-0123456789abcdef0', availabilityZones: 'eu-west-1a,eu-west-1b', privateSubnetIds: 'subnet-0aaaaaaaaaaaaaaaa,subnet-0bbbbbbbbbbbbbbbb',
      databaseInstanceId: 'catalog', databaseEndpoint: 'catalog.abc.eu-west-1.rds.amazonaws.com', databaseSecurityGroupId: 'sg-0123456789abcdef0', databaseSecretArn: dbSecret,
      fileBytesMiB: 512, vpcEndpoints: 'true', readerConcurrency: 'off', databaseMultiAz: 'false',
    });
  });

  it('-c architecture=x86_64: every function on x86_64', () => {
    const x86 = synth({ mskClusterArn: clusterArn, kafkaBrokers: 'b-1.lake:9098', topics: 'orders', ...clusterNetwork, architecture: 'x86_64' });
    const functions = (Object.values(x86.findResources('AWS::Lambda::Function')) as Resource[]).filter((f) => f.Properties.Handler === 'index.handler');
    expect(functions.map((f) => f.Properties.Architectures)).toEqual(Array.from({ length: 8 }, () => ['x86_64']));
  });

  it('a self-managed event source with SCRAM-256, inside the VPC', () => {
    const mapping = (Object.values(template.findResources('AWS::Lambda::EventSourceMapping')) as Resource[])[0]!.Properties;
    expect(mapping.SelfManagedEventSource.Endpoints.KafkaBootstrapServers).toEqual(['k1.example:9096']);
    expect(mapping.SourceAccessConfigurations).toEqual(expect.arrayContaining([{ Type: 'SASL_SCRAM_256_AUTH', URI: kafkaSecret }, { Type: 'VPC_SUBNET', URI: 'subnet-0aaaaaaaaaaaaaaaa' }]));
    expect(mapping).not.toHaveProperty('MaximumRetryAttempts');
    template.resourceCountIs('AWS::EC2::VPC', 0);
  });

  it('no database created: a proxy in front of the existing instance; migrate alone reads your database\'s secret, the writers and the reader their own logins; the stack rotates its own secrets, not yours', () => {
    template.resourceCountIs('AWS::RDS::DBInstance', 0);
    template.hasResourceProperties('AWS::RDS::DBProxy', { Auth: [dbSecret, ...['ReaderDatabaseLogin', 'WriterDatabaseLogin', 'DuckLakeReaderLogin'].map((l) => ({ Ref: Match.stringLikeRegexp(`^${l}Attachment`) }))].map((SecretArn) => Match.objectLike({ SecretArn })) });
    const read = secretReads(template);
    expect(read.size).toBe(6);
    const all = ['Indexer', 'Backfill', 'IndexBackfill', 'Tick', 'Retention', 'Reader', 'Migrate'].map((id) => roleOf(template, id));
    expect(read.get(JSON.stringify(kafkaSecret))).toEqual(new Set(all));
    expect(read.get(JSON.stringify(dbSecret))).toEqual(new Set([roleOf(template, 'Migrate'), expect.stringMatching(/^ProxyIAMRole/)]));
    expect(read.get(secretNamed(template, 'WriterDatabaseLogin'))).toEqual(new Set([...['Indexer', 'Backfill', 'IndexBackfill', 'Tick', 'Retention', 'Migrate'].map((id) => roleOf(template, id)), expect.stringMatching(/^ProxyIAMRole/)]));
    expect(read.get(secretNamed(template, 'ReaderDatabaseLogin'))).toEqual(new Set([roleOf(template, 'Reader'), roleOf(template, 'Migrate'), expect.stringMatching(/^ProxyIAMRole/)]));
    expect(read.get(secretNamed(template, 'ReaderToken'))).toEqual(new Set([roleOf(template, 'Reader'), roleOf(template, 'ReaderTokenRotation')]));
    // Your database's secret is yours to rotate; the reader login, the stack's, rotates on your instance's port.
    const rotated = (Object.values(template.findResources('AWS::SecretsManager::RotationSchedule')) as Resource[]).map((r) => (r.Properties.SecretId as { Ref: string }).Ref).sort();
    expect(rotated).toEqual([expect.stringMatching(/^DuckLakeReaderLoginAttachment/), expect.stringMatching(/^ReaderDatabaseLoginAttachment/), expect.stringMatching(/^ReaderToken/), expect.stringMatching(/^WriterDatabaseLoginAttachment/)]);
    template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', { GroupId: 'sg-0123456789abcdef0', FromPort: 5432, SourceSecurityGroupId: { 'Fn::GetAtt': [Match.stringLikeRegexp('^ReaderDatabaseLoginRotationSecurityGroup'), 'GroupId'] } });
    template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', { FromPort: 443, SourceSecurityGroupId: { 'Fn::GetAtt': [Match.stringLikeRegexp('^ReaderDatabaseLoginRotationSecurityGroup'), 'GroupId'] } });
    const memories = (Object.values(template.findResources('AWS::Lambda::Function')) as Resource[]).filter((f) => f.Properties.Handler === 'index.handler').map((f) => f.Properties.MemorySize);
    expect(memories.sort((a, b) => a - b)).toEqual([256, 512, 512, 2048, 3328, 3328, 3328, 3328]);
  });

  it('interface endpoints for Secrets Manager and Step Functions, open to the functions on 443; no function reserves concurrency', () => {
    const endpoints = Object.values(template.findResources('AWS::EC2::VPCEndpoint')) as Resource[];
    expect(endpoints.map((e) => JSON.stringify(e.Properties.ServiceName)).sort()).toEqual([expect.stringContaining('secretsmanager'), expect.stringContaining('states')]);
    for (const endpoint of endpoints) expect(endpoint.Properties).toMatchObject({ VpcEndpointType: 'Interface', PrivateDnsEnabled: true, SubnetIds: ['subnet-0aaaaaaaaaaaaaaaa', 'subnet-0bbbbbbbbbbbbbbbb'] });
    template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', { FromPort: 443, ToPort: 443, SourceSecurityGroupId: { 'Fn::GetAtt': [Match.stringLikeRegexp('^FunctionsSecurityGroup'), 'GroupId'] } });
    const reserved = (Object.values(template.findResources('AWS::Lambda::Function')) as Resource[]).filter((f) => f.Properties.ReservedConcurrentExecutions !== undefined);
    expect(reserved).toEqual([]);
  });
});

describe('settings from context', () => {
  it('names the key that is missing or wrong', () => {
    expect(() => settingsFromContext(() => undefined)).toThrow(/context "mskClusterArn" is required/);
    expect(() => settingsFromContext((key) => ({ mskClusterArn: 'arn:aws:kafka:x' } as Record<string, unknown>)[key])).toThrow(/not an MSK cluster ARN/);
    const withoutNetwork = { mskClusterArn: clusterArn, kafkaBrokers: 'b:9098', topics: 't', kafkaSecurityGroupId: 'sg-0cccccccccccccccc' } as Record<string, unknown>;
    expect(() => settingsFromContext((key) => withoutNetwork[key])).toThrow(/context "vpcId" is required for kafka=msk: the functions run in the MSK cluster's VPC/);
    expect(() => settingsFromContext((key) => ({ ...withoutNetwork, ...clusterNetwork, kafkaSecurityGroupId: undefined } as Record<string, unknown>)[key])).toThrow(/context "kafkaSecurityGroupId" is required for kafka=msk/);
    const base = { ...withoutNetwork, ...clusterNetwork } as Record<string, unknown>;
    expect(() => settingsFromContext((key) => ({ ...base, kafkaAuth: 'scram', kafkaSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:AmazonMSK_x' } as Record<string, unknown>)[key]))
      .toThrow(/context "kafkaSecretKeyArn" is required for kafkaAuth=scram: MSK only accepts SCRAM secrets encrypted with a customer-managed KMS key/);
    expect(() => settingsFromContext((key) => ({ ...base, databaseMultiAz: 'yes' } as Record<string, unknown>)[key])).toThrow(/"databaseMultiAz" must be true or false/);
    expect(() => settingsFromContext((key) => ({ ...base, readerConcurrency: '0' } as Record<string, unknown>)[key])).toThrow(/"readerConcurrency" must be an integer from 1 to 1000/);
    expect(() => settingsFromContext((key) => ({ ...base, batchSize: '20000' })[key])).toThrow(/"batchSize" must be an integer from 1 to 10000/);
    expect(() => settingsFromContext((key) => ({ ...base, chunksPerExecution: 5000 })[key])).toThrow(/"chunksPerExecution" must be an integer from 1 to 1800/);
    expect(() => settingsFromContext((key) => ({ ...base, architecture: 'x86' } as Record<string, unknown>)[key])).toThrow(/context "architecture" must be one of arm64, x86_64, got "x86"/);
    expect(settingsFromContext((key) => base[key])).toMatchObject({
      batchSize: 10_000, batchingWindowSeconds: 10, fileBytes: 128 * MiB, vpc: { kind: 'existing' }, vpcEndpoints: false, readerConcurrency: 10, database: { kind: 'create', multiAz: true }, architecture: 'arm64',
    });
  });
});

describe('-c localstackCore=true: the part LocalStack runs without Docker or its paid tier', () => {
  const context = { mskClusterArn: clusterArn, kafkaBrokers: 'b-1.lake:9098', topics: 'orders,payments', stackName: 'Lake', ...clusterNetwork };
  /** Through the app, as `cdk synth` builds it, so the flag's wiring is what is tested. */
  const synthApp = (extra: Record<string, unknown>): Template => {
    const { stack } = offsetlakeApp(testApp({ context: { ...context, ...extra, 'aws:cdk:bundling-stacks': [] } }));
    return Template.fromStack(stack);
  };
  const byType = (template: Template, type: string): Resource[] => Object.values(template.findResources(type)) as Resource[];
  let core: Template;
  let full: Template;
  beforeAll(() => {
    core = synthApp({ localstackCore: 'true' });
    full = synthApp({});
  });

  it('keeps the backfill state machine (its role and log group), the two schedules and the five secrets; nothing else', () => {
    const types = (Object.values(core.toJSON().Resources) as Resource[]).map((r) => r.Type).filter((type) => type !== 'AWS::CDK::Metadata').sort();
    expect(types).toEqual([
      'AWS::Events::Rule', 'AWS::Events::Rule',
      'AWS::IAM::Policy', 'AWS::IAM::Role',
      'AWS::Logs::LogGroup',
      'AWS::SecretsManager::Secret', 'AWS::SecretsManager::Secret', 'AWS::SecretsManager::Secret', 'AWS::SecretsManager::Secret', 'AWS::SecretsManager::Secret',
      'AWS::StepFunctions::StateMachine',
    ]);
  });

  it('leaves out the functions (Lambda needs Docker), with them the URL, migrations and permissions; the event sources, RDS, RDS Proxy and the VPC\'s groups', () => {
    for (const type of ['AWS::Lambda::Function', 'AWS::Lambda::EventSourceMapping', 'AWS::Lambda::Url', 'AWS::Lambda::Permission', 'Custom::OffsetlakeCatalogMigrations',
      'AWS::RDS::DBInstance', 'AWS::RDS::DBProxy', 'AWS::RDS::DBProxyTargetGroup', 'AWS::SecretsManager::SecretTargetAttachment', 'AWS::EC2::SecurityGroup', 'AWS::EC2::SecurityGroupIngress']) {
      core.resourceCountIs(type, 0);
    }
    expect(Object.keys(core.findOutputs('*'))).toEqual([]);
  });

  it('the state machine is the full stack\'s, except that its tasks name the backfill function <stack>-backfill, which is not created', () => {
    const definitionOf = (template: Template): { name: unknown; definition: string } => {
      const machine = byType(template, 'AWS::StepFunctions::StateMachine')[0]!;
      return { name: machine.Properties.StateMachineName, definition: resolveDefinitionString(machine.Properties.DefinitionString) };
    };
    const [kept, original] = [definitionOf(core), definitionOf(full)];
    expect(kept.name).toBe('Lake-backfill');
    expect(kept.name).toBe(original.name);
    const functions = (definition: string): string[] => [...new Set(definition.match(/arn:aws:lambda:[^"]+/g))];
    expect(functions(kept.definition)).toEqual(['arn:aws:lambda:us-east-1:000000000000:function:Lake-backfill']);
    expect(functions(original.definition)).toEqual([expect.stringMatching(/:function:Backfill[0-9A-F]{8}$/)]);
    const anyFunction = (definition: string): string => definition.replace(/arn:aws:lambda:[^"]+/g, 'BACKFILL');
    expect(anyFunction(kept.definition)).toBe(anyFunction(original.definition));
    // Its role may invoke that function and start executions of the machine itself, nothing else.
    const statements = [...statementsByRole(core).values()].flat();
    const granted = statements.flatMap(actions).filter((action) => !action.startsWith('logs:')).sort();
    expect(granted).toEqual(['lambda:InvokeFunction', 'states:StartExecution']);
  });

  it('the schedules are the full stack\'s (rate, description, retries); their targets name <stack>-tick and <stack>-retention, which are not created', () => {
    const schedules = (template: Template) => byType(template, 'AWS::Events::Rule')
      .map((rule): Record<string, unknown> => ({ ...rule.Properties, Targets: rule.Properties.Targets.map((target: Record<string, unknown>) => ({ ...target, Arn: undefined })) }))
      .sort((a, b) => String(a.ScheduleExpression).localeCompare(String(b.ScheduleExpression)));
    expect(schedules(core)).toEqual(schedules(full));
    expect(schedules(core).map((rule) => rule.ScheduleExpression)).toEqual(['rate(1 minute)', 'rate(5 minutes)']);
    const targets = byType(core, 'AWS::Events::Rule').map((rule) => JSON.stringify(rule.Properties.Targets[0].Arn)).sort();
    expect(targets).toEqual([expect.stringContaining(':function:Lake-retention'), expect.stringContaining(':function:Lake-tick')]);
  });

  it('the secrets are the full stack\'s: the reader\'s token, the reader\'s, writers\' and DuckLake reader\'s logins, and the generated database credentials (none with an existing database)', () => {
    const generated = (template: Template) => byType(template, 'AWS::SecretsManager::Secret').map((secret) => secret.Properties.GenerateSecretString).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    expect(generated(core)).toEqual(generated(full));
    expect(generated(core).map((g) => g.GenerateStringKey).sort()).toEqual(['password', 'password', 'password', 'password', 'token']);
    const existingDatabase = synthApp({
      localstackCore: 'true', databaseInstanceId: 'catalog', databaseEndpoint: 'catalog.abc.eu-west-1.rds.amazonaws.com',
      databaseSecurityGroupId: 'sg-0123456789abcdef0', databaseSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:catalog-GhIjKl',
    });
    expect(generated(existingDatabase).map((g) => g.GenerateStringKey).sort()).toEqual(['password', 'password', 'password', 'token']);
  });

  it('the flag is checked like every setting: true or false, naming the key; the other settings are still the AWS deploy\'s', () => {
    expect(localstackCoreFromContext(() => undefined)).toBe(false);
    expect(localstackCoreFromContext((key) => ({ localstackCore: true } as Record<string, unknown>)[key])).toBe(true);
    expect(() => localstackCoreFromContext((key) => ({ localstackCore: 'yes' } as Record<string, unknown>)[key])).toThrow(/context "localstackCore" must be true or false, got "yes"/);
    expect(() => synthApp({ localstackCore: 'true', mskClusterArn: undefined })).toThrow(/context "mskClusterArn" is required/);
  });
});
