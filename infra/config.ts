/**
 * The deployment's settings, read from CDK context (`cdk.json`, or `cdk deploy -c key=value`).
 * Everything that decides the template's shape is a context value rather than a
 * CloudFormation parameter: which Kafka, which auth, which VPC, which database. Each is
 * checked here, so a wrong value fails `cdk synth` with the name of the key.
 */
import { defaultChunksPerExecution, maxChunksPerExecution } from '../src/backfill/limits.js';

/** Where the records come from and how the functions authenticate to it. */
export type KafkaSettings =
  | {
      kind: 'msk';
      clusterArn: string;
      /** `iam`: MSK IAM access control (no secret); `scram`: SASL/SCRAM-SHA-512 with an `AmazonMSK_` secret. */
      auth: 'iam' | 'scram';
      scramSecretArn?: string | undefined;
      /** MSK only takes SCRAM secrets encrypted with a customer-managed KMS key: the functions and the event source decrypt with it. */
      scramSecretKeyArn?: string | undefined;
      /** The cluster's security group: the functions' group is let in on the broker ports. */
      securityGroupId: string;
    }
  | {
      kind: 'self-managed';
      /** SASL/SCRAM credentials (`{"username","password"}`) in Secrets Manager. */
      scramSecretArn: string;
      /** The secret's customer-managed KMS key, when it has one (an AWS-managed key needs no grant). */
      scramSecretKeyArn?: string | undefined;
      mechanism: 'SCRAM-SHA-256' | 'SCRAM-SHA-512';
      /** The brokers' security group, when the brokers are in AWS: the functions' group is let in. */
      securityGroupId?: string | undefined;
    };

export type VpcSettings =
  | { kind: 'new'; maxAzs: number }
  | { kind: 'existing'; vpcId: string; availabilityZones: string[]; privateSubnetIds: string[] };

export type DatabaseSettings =
  | {
      kind: 'create';
      databaseName: string;
      /** A standby in a second zone: on unless turned off, since the catalog is the only copy of what was indexed. */
      multiAz: boolean;
    }
  | {
      kind: 'existing';
      databaseName: string;
      instanceIdentifier: string;
      endpoint: string;
      port: number;
      securityGroupId: string;
      /** The database's credentials (`{"username","password"}`), read by RDS Proxy and the functions. */
      secretArn: string;
    };

export interface OffsetlakeSettings {
  kafka: KafkaSettings;
  /** Bootstrap brokers the functions' own Kafka client uses (host:port, comma separated in context). */
  brokers: string[];
  /** One event source mapping per topic. */
  topics: string[];
  vpc: VpcSettings;
  /**
   * Interface endpoints in the VPC for what the functions call (Secrets Manager, Step
   * Functions): for a VPC whose private subnets have no NAT.
   */
  vpcEndpoints: boolean;
  database: DatabaseSettings;
  /** The tables' largest `file_bytes`: the indexer's and the backfill's memory follow it. */
  fileBytes: number;
  /** Records per event (1 to 10,000) and how long Lambda gathers them (0 to 300 s). */
  batchSize: number;
  batchingWindowSeconds: number;
  /** Minutes between idle ticks, and between retention checks (with partition discovery). */
  tickMinutes: number;
  retentionMinutes: number;
  /** Default chunk budget of one backfill execution (see src/backfill/definition.ts for the arithmetic). */
  chunksPerExecution: number;
  /**
   * The reader's reserved concurrency: its public URL can then never take the concurrency
   * the indexer needs. `undefined` leaves it unreserved (accounts whose Lambda quota is
   * the new-account 10 cannot reserve any).
   */
  readerConcurrency: number | undefined;
  /**
   * The reader's function URL invoke mode. RESPONSE_STREAM (the default) streams a body of
   * up to 200 MB, a whole file included; BUFFERED returns at most 6 MB at once, so reads
   * over 4 MiB must come as Range requests. docs/aws.md, "The reader on Lambda", says when to
   * choose BUFFERED.
   */
  readerInvokeMode: 'RESPONSE_STREAM' | 'BUFFERED';
  /**
   * The functions' processor: `arm64` (Graviton, the default: about 20 % cheaper per
   * GB-second) or `x86_64`. Each bundle carries the native compressors' binaries of this
   * architecture only (infra/lambda-native.ts).
   */
  architecture: 'arm64' | 'x86_64';
  /**
   * The lag alarms: a table whose committed offsets not yet in files (summed over its
   * partitions, published by every tick) stay above `records` for three 5-minute periods.
   * One alarm watches the largest lag of any table; `tables` get one alarm each as well.
   */
  lagAlarm: { records: number; tables: string[] };
}

const MiB = 1024 * 1024;

/** Context values arrive as strings from `-c` and as JSON values from cdk.json. */
type Context = (key: string) => unknown;

function text(context: Context, key: string): string | undefined {
  const value = context(key);
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new Error(`context "${key}" must be a string, got ${JSON.stringify(value)}`);
  return value;
}

function required(context: Context, key: string, why: string): string {
  const value = text(context, key);
  if (value === undefined) throw new Error(`context "${key}" is required ${why} (cdk deploy -c ${key}=...)`);
  return value;
}

function list(context: Context, key: string): string[] {
  const value = context(key);
  if (Array.isArray(value)) return value.map(String);
  return (text(context, key) ?? '').split(',').map((item) => item.trim()).filter(Boolean);
}

function integer(context: Context, key: string, fallback: number, min: number, max: number): number {
  const value = context(key);
  if (value === undefined || value === '') return fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number < min || number > max) {
    throw new Error(`context "${key}" must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return number;
}

function flag(context: Context, key: string, fallback: boolean): boolean {
  const value = context(key);
  if (value === undefined || value === '') return fallback;
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new Error(`context "${key}" must be true or false, got ${JSON.stringify(value)}`);
}

function oneOf<T extends string>(context: Context, key: string, allowed: readonly T[], fallback: T): T {
  const value = text(context, key) ?? fallback;
  if (!allowed.includes(value as T)) throw new Error(`context "${key}" must be one of ${allowed.join(', ')}, got "${value}"`);
  return value as T;
}

function kmsKeyArn(arn: string): string {
  if (!/^arn:aws[\w-]*:kms:[\w-]+:\d{12}:key\/[\w-]+$/.test(arn)) {
    throw new Error(`context "kafkaSecretKeyArn" is not a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID): "${arn}"`);
  }
  return arn;
}

/**
 * `localstackCore=true` deploys only what LocalStack's open-source core runs without Docker
 * and without its paid tier: the backfill state machine, the schedules and the secrets
 * (infra/localstack.ts). The settings are still those of the AWS deploy, and checked the same.
 */
export function localstackCoreFromContext(context: Context): boolean {
  return flag(context, 'localstackCore', false);
}

export function settingsFromContext(context: Context): OffsetlakeSettings {
  const kind = oneOf(context, 'kafka', ['msk', 'self-managed'] as const, 'msk');
  let kafka: KafkaSettings;
  if (kind === 'msk') {
    const clusterArn = required(context, 'mskClusterArn', 'for kafka=msk');
    if (!/^arn:aws[\w-]*:kafka:[\w-]+:\d{12}:cluster\/[^/]+\/[^/]+$/.test(clusterArn)) {
      throw new Error(`context "mskClusterArn" is not an MSK cluster ARN (arn:aws:kafka:REGION:ACCOUNT:cluster/NAME/UUID): "${clusterArn}"`);
    }
    const auth = oneOf(context, 'kafkaAuth', ['iam', 'scram'] as const, 'iam');
    kafka = {
      kind,
      clusterArn,
      auth,
      scramSecretArn: auth === 'scram' ? required(context, 'kafkaSecretArn', 'for kafkaAuth=scram') : undefined,
      scramSecretKeyArn: auth === 'scram'
        ? kmsKeyArn(required(context, 'kafkaSecretKeyArn', 'for kafkaAuth=scram: MSK only accepts SCRAM secrets encrypted with a customer-managed KMS key, and the functions and the event source must decrypt with it'))
        : undefined,
      securityGroupId: required(context, 'kafkaSecurityGroupId', 'for kafka=msk: the cluster\'s security group, which the functions must be let into'),
    };
  } else {
    const keyArn = text(context, 'kafkaSecretKeyArn');
    kafka = {
      kind,
      scramSecretArn: required(context, 'kafkaSecretArn', 'for kafka=self-managed (SASL/SCRAM credentials)'),
      scramSecretKeyArn: keyArn === undefined ? undefined : kmsKeyArn(keyArn),
      mechanism: oneOf(context, 'kafkaScramMechanism', ['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const, 'SCRAM-SHA-512'),
      securityGroupId: text(context, 'kafkaSecurityGroupId'),
    };
  }
  const brokers = list(context, 'kafkaBrokers');
  if (brokers.length === 0) throw new Error('context "kafkaBrokers" is required: the bootstrap brokers, host:port[,host:port…]');
  const topics = list(context, 'topics');
  if (topics.length === 0) throw new Error('context "topics" is required: the topics of the tables, comma separated');

  const vpcId = text(context, 'vpcId');
  if (kind === 'msk' && !vpcId) {
    // A new VPC cannot reach the cluster: its security group rule would name a group of another VPC.
    throw new Error('context "vpcId" is required for kafka=msk: the functions run in the MSK cluster\'s VPC (with "privateSubnetIds" and "availabilityZones" of its private subnets)');
  }
  const vpc: VpcSettings = vpcId
    ? { kind: 'existing', vpcId, availabilityZones: list(context, 'availabilityZones'), privateSubnetIds: list(context, 'privateSubnetIds') }
    : { kind: 'new', maxAzs: integer(context, 'maxAzs', 2, 2, 6) };
  if (vpc.kind === 'existing' && (vpc.privateSubnetIds.length === 0 || vpc.privateSubnetIds.length !== vpc.availabilityZones.length)) {
    throw new Error('context "privateSubnetIds" and "availabilityZones" must name the same number (≥ 1) of subnets and zones when "vpcId" is set');
  }

  const databaseName = text(context, 'databaseName') ?? 'offsetlake';
  const instanceIdentifier = text(context, 'databaseInstanceId');
  const database: DatabaseSettings = instanceIdentifier
    ? {
        kind: 'existing',
        databaseName,
        instanceIdentifier,
        endpoint: required(context, 'databaseEndpoint', 'with databaseInstanceId'),
        port: integer(context, 'databasePort', 5432, 1, 65535),
        securityGroupId: required(context, 'databaseSecurityGroupId', 'with databaseInstanceId'),
        secretArn: required(context, 'databaseSecretArn', 'with databaseInstanceId'),
      }
    : { kind: 'create', databaseName, multiAz: flag(context, 'databaseMultiAz', true) };
  const readerConcurrency = context('readerConcurrency') === 'off' ? undefined : integer(context, 'readerConcurrency', 10, 1, 1000);

  return {
    kafka,
    brokers,
    topics,
    vpc,
    vpcEndpoints: flag(context, 'vpcEndpoints', false),
    database,
    fileBytes: integer(context, 'fileBytesMiB', 128, 1, 1024) * MiB,
    batchSize: integer(context, 'batchSize', 10_000, 1, 10_000),
    batchingWindowSeconds: integer(context, 'batchingWindowSeconds', 10, 0, 300),
    tickMinutes: integer(context, 'tickMinutes', 1, 1, 60),
    retentionMinutes: integer(context, 'retentionMinutes', 5, 1, 1440),
    chunksPerExecution: integer(context, 'chunksPerExecution', defaultChunksPerExecution, 1, maxChunksPerExecution),
    readerConcurrency,
    readerInvokeMode: oneOf(context, 'readerInvokeMode', ['RESPONSE_STREAM', 'BUFFERED'] as const, 'RESPONSE_STREAM'),
    architecture: oneOf(context, 'architecture', ['arm64', 'x86_64'] as const, 'arm64'),
    lagAlarm: { records: integer(context, 'lagAlarmRecords', 1_000_000, 1, Number.MAX_SAFE_INTEGER), tables: lagAlarmTables(context) },
  };
}

/** `lagAlarmTables`: table names (as `table create` takes them), comma separated. */
function lagAlarmTables(context: Context): string[] {
  const tables = list(context, 'lagAlarmTables');
  const wrong = tables.find((table) => !/^[a-z_][a-z0-9_]{0,62}$/.test(table));
  if (wrong !== undefined) throw new Error(`context "lagAlarmTables" names "${wrong}", which is not a table name (lowercase letters, digits and _, at most 63)`);
  return tables;
}

/**
 * Memory for a function that holds one open range and builds it as Parquet: the range's
 * records (up to `file_bytes` of key + value + header bytes) live as JavaScript objects
 * and Buffers, the column arrays copy them once more, and the encoder's pages and
 * compressed output add about as much again: we budget 6 × `file_bytes` (an estimate,
 * not yet a measured peak; raise `fileBytesMiB` if a function runs out), and 256 MiB for Node, the Kafka and Postgres clients and the event itself
 * (≤ 6 MB). Rounded up to 64 MiB, at least 1,024 MiB (Lambda's CPU share grows with
 * memory, and Parquet encoding is CPU-bound), at most Lambda's 10,240 MiB.
 */
export function memoryForFileBytes(fileBytes: number): number {
  const mib = 256 + Math.ceil((6 * fileBytes) / MiB);
  return Math.min(10_240, Math.max(1_024, Math.ceil(mib / 64) * 64));
}
