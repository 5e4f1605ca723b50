/**
 * How a Lambda function reaches the catalog and Kafka, from its environment (set by
 * infra/stack.ts):
 *   DATABASE_URL                                   used as is when set (tests, custom setups);
 *   DATABASE_SECRET_ARN + DATABASE_HOST (+ _NAME)  the RDS secret's username and password,
 *                                                  through RDS Proxy, over TLS;
 *   KAFKA_BROKERS, KAFKA_AUTH (scram | iam | none), KAFKA_SECRET_ARN, KAFKA_SCRAM_MECHANISM;
 *   READER_/WRITER_DATABASE_SECRET_ARN             (migrate only) the functions' logins,
 *                                                  which the deploy creates or sets.
 * The AWS SDK clients and the MSK IAM signer are bundled with the function (infra/stack.ts),
 * and loaded only when a secret is read or an IAM token is signed.
 */
import type { KafkaConnectOptions } from '../src/kafka/connect-options.js';

export async function readSecret(arn: string): Promise<Record<string, unknown>> {
  const { SecretsManagerClient, GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
  const result = await new SecretsManagerClient({}).send(new GetSecretValueCommand({ SecretId: arn }));
  if (!result.SecretString) throw new Error(`secret ${arn} has no SecretString`);
  return JSON.parse(result.SecretString) as Record<string, unknown>;
}

function credential(secret: Record<string, unknown>, name: 'username' | 'password', arn: string): string {
  const value = secret[name];
  if (typeof value !== 'string' || value === '') throw new Error(`secret ${arn} has no "${name}"`);
  return value;
}

export async function databaseUrl(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (env.DATABASE_URL) return env.DATABASE_URL;
  const arn = env.DATABASE_SECRET_ARN;
  if (!arn || !env.DATABASE_HOST) throw new Error('neither DATABASE_URL nor DATABASE_SECRET_ARN + DATABASE_HOST is set: the function needs the catalog');
  const secret = await readSecret(arn);
  const user = encodeURIComponent(credential(secret, 'username', arn));
  const password = encodeURIComponent(credential(secret, 'password', arn));
  const name = encodeURIComponent(env.DATABASE_NAME ?? 'offsetlake');
  return `postgres://${user}:${password}@${env.DATABASE_HOST}:5432/${name}?sslmode=require`;
}

/** How long a password read from the secret is used for new connections before it is read again. */
export const passwordRereadMs = 30_000;

/**
 * The catalog as the Lambda functions reach it: DATABASE_URL as is, or the secret's login
 * through the proxy with its password read again for a new connection once it is
 * `passwordRereadMs` old. Rotation changes the password at once, and an instance lives for
 * hours: with the password fixed at start it would fail every connection it opens after a
 * rotation. So a rotation costs a warm instance at most `passwordRereadMs` of refused
 * connections, which the callers' retries cover.
 */
export async function catalogConnection(env: NodeJS.ProcessEnv = process.env, read = readSecret, now = Date.now): Promise<{ url: string; password?: () => Promise<string> }> {
  if (env.DATABASE_URL) return { url: env.DATABASE_URL };
  const arn = env.DATABASE_SECRET_ARN;
  if (!arn || !env.DATABASE_HOST) throw new Error('neither DATABASE_URL nor DATABASE_SECRET_ARN + DATABASE_HOST is set: the function needs the catalog');
  const first = await read(arn);
  const user = encodeURIComponent(credential(first, 'username', arn));
  let cached = { password: credential(first, 'password', arn), at: now() };
  const name = encodeURIComponent(env.DATABASE_NAME ?? 'offsetlake');
  return {
    url: `postgres://${user}@${env.DATABASE_HOST}:5432/${name}?sslmode=require`,
    password: async () => {
      if (now() - cached.at >= passwordRereadMs) cached = { password: credential(await read(arn), 'password', arn), at: now() };
      return cached.password;
    },
  };
}

/**
 * The functions' logins the migration makes, from READER_DATABASE_SECRET_ARN and
 * WRITER_DATABASE_SECRET_ARN; each null where there is none to make.
 */
export async function catalogLogins(env: NodeJS.ProcessEnv = process.env): Promise<Record<'reader' | 'writer' | 'duckLake', { username: string; password: string } | null>> {
  const login = async (arn: string | undefined) => {
    if (!arn) return null;
    const secret = await readSecret(arn);
    return { username: credential(secret, 'username', arn), password: credential(secret, 'password', arn) };
  };
  return { reader: await login(env.READER_DATABASE_SECRET_ARN), writer: await login(env.WRITER_DATABASE_SECRET_ARN), duckLake: await login(env.DUCKLAKE_READER_DATABASE_SECRET_ARN) };
}

/** TLS and SASL for the functions' own Kafka client. */
export async function kafkaSecurity(env: NodeJS.ProcessEnv = process.env): Promise<Pick<KafkaConnectOptions, 'tls' | 'sasl'>> {
  const auth = env.KAFKA_AUTH ?? 'none';
  if (auth === 'none') return {};
  if (auth === 'scram') {
    const arn = env.KAFKA_SECRET_ARN;
    if (!arn) throw new Error('KAFKA_AUTH=scram needs KAFKA_SECRET_ARN');
    const secret = await readSecret(arn);
    const mechanism = env.KAFKA_SCRAM_MECHANISM === 'SCRAM-SHA-256' ? 'SCRAM-SHA-256' : 'SCRAM-SHA-512';
    return { tls: {}, sasl: { mechanism, username: credential(secret, 'username', arn), password: credential(secret, 'password', arn) } };
  }
  if (auth === 'iam') {
    // MSK IAM access control: SASL OAUTHBEARER with a token signed by the function's role,
    // made afresh for every connection (a token lives 15 minutes).
    const region = env.AWS_REGION;
    if (!region) throw new Error('KAFKA_AUTH=iam needs AWS_REGION (set by the Lambda runtime)');
    const { generateAuthToken } = await import('aws-msk-iam-sasl-signer-js');
    return { tls: {}, sasl: { mechanism: 'OAUTHBEARER', token: async () => (await generateAuthToken({ region })).token } };
  }
  throw new Error(`KAFKA_AUTH must be scram, iam or none, got "${auth}"`);
}

/** One stage of a secret, with when that version was made; undefined when the secret has no version at that stage. */
export async function readSecretStage(arn: string, stage: 'AWSCURRENT' | 'AWSPREVIOUS'): Promise<{ value: Record<string, unknown>; created: Date | undefined } | undefined> {
  const { SecretsManagerClient, GetSecretValueCommand, ResourceNotFoundException } = await import('@aws-sdk/client-secrets-manager');
  try {
    const result = await new SecretsManagerClient({}).send(new GetSecretValueCommand({ SecretId: arn, VersionStage: stage }));
    if (!result.SecretString) throw new Error(`secret ${arn} has no SecretString`);
    return { value: JSON.parse(result.SecretString) as Record<string, unknown>, created: result.CreatedDate };
  } catch (error) {
    if (error instanceof ResourceNotFoundException && stage === 'AWSPREVIOUS') return undefined;
    throw error;
  }
}

/**
 * The bearer tokens the reader accepts now: OFFSETLAKE_TOKEN; or the `token` of the secret
 * OFFSETLAKE_TOKEN_SECRET_ARN names and, within `graceMs` of its last rotation, the token
 * before it, so engines have that long to take the new one.
 */
export async function readerTokens(env: NodeJS.ProcessEnv = process.env, graceMs: number, read = readSecretStage, now = Date.now): Promise<string[] | null> {
  if (env.OFFSETLAKE_TOKEN) return [env.OFFSETLAKE_TOKEN];
  const arn = env.OFFSETLAKE_TOKEN_SECRET_ARN;
  if (!arn) return null;
  const tokenOf = (value: Record<string, unknown>): string => {
    if (typeof value.token !== 'string' || value.token === '') throw new Error(`secret ${arn} has no "token"`);
    return value.token;
  };
  const current = (await read(arn, 'AWSCURRENT'))!;
  const tokens = [tokenOf(current.value)];
  if (current.created && now() - current.created.getTime() < graceMs) {
    const previous = await read(arn, 'AWSPREVIOUS');
    if (previous) tokens.push(tokenOf(previous.value));
  }
  return tokens;
}
