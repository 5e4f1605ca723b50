import { describe, expect, it } from 'vitest';
import { catalogLogins, databaseUrl, kafkaSecurity } from '../../functions/connections.js';

describe('functions/connections: the catalog and Kafka from the Lambda environment', () => {
  it('uses DATABASE_URL as is, and says what is missing without it', async () => {
    expect(await databaseUrl({ DATABASE_URL: 'postgres://u:p@h:5432/d' })).toBe('postgres://u:p@h:5432/d');
    await expect(databaseUrl({})).rejects.toThrow('neither DATABASE_URL nor DATABASE_SECRET_ARN + DATABASE_HOST is set');
    await expect(databaseUrl({ DATABASE_SECRET_ARN: 'arn:aws:secretsmanager:x' })).rejects.toThrow('DATABASE_SECRET_ARN + DATABASE_HOST');
  });

  it('the logins the migration makes: none without READER_/WRITER_/DUCKLAKE_READER_DATABASE_SECRET_ARN', async () => {
    expect(await catalogLogins({})).toEqual({ reader: null, writer: null, duckLake: null });
  });

  it('Kafka without auth, and clear errors for incomplete or unknown auth', async () => {
    expect(await kafkaSecurity({})).toEqual({});
    await expect(kafkaSecurity({ KAFKA_AUTH: 'scram' })).rejects.toThrow('KAFKA_AUTH=scram needs KAFKA_SECRET_ARN');
    await expect(kafkaSecurity({ KAFKA_AUTH: 'iam' })).rejects.toThrow('KAFKA_AUTH=iam needs AWS_REGION');
    await expect(kafkaSecurity({ KAFKA_AUTH: 'kerberos' })).rejects.toThrow('KAFKA_AUTH must be scram, iam or none, got "kerberos"');
  });

  it('MSK IAM: SASL OAUTHBEARER with a token provider, over TLS', async () => {
    const security = await kafkaSecurity({ KAFKA_AUTH: 'iam', AWS_REGION: 'eu-west-1' });
    expect(security.tls).toEqual({});
    expect(security.sasl).toMatchObject({ mechanism: 'OAUTHBEARER' });
    expect(typeof (security.sasl as { token: unknown }).token).toBe('function');
  });
});

describe('the reader login\'s SCRAM-SHA-256 verifier (src/catalog/logins.ts)', () => {
  it('has Postgres\'s stored form, follows from password and salt alone, and refuses a password Postgres would SASLprep differently', async () => {
    const { scramVerifier } = await import('../../src/catalog/logins.js');
    const salt = Buffer.alloc(16, 7);
    const verifier = scramVerifier('pencil', salt);
    expect(verifier).toMatch(/^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}:[A-Za-z0-9+/=]{44}$/);
    expect(verifier.split('$')[1]).toBe(`4096:${salt.toString('base64')}`);
    expect(scramVerifier('pencil', salt)).toBe(verifier);
    expect(scramVerifier('pencil')).not.toBe(scramVerifier('pencil'));
    expect(() => scramVerifier('pen cil')).toThrow('printable ASCII');
    expect(() => scramVerifier('pénc')).toThrow('printable ASCII');
  });
});

describe('the catalog login of a Lambda instance follows its secret\'s rotation', () => {
  it('the URL carries no password; the password is read again for a new connection once it is 30 s old', async () => {
    const { catalogConnection, passwordRereadMs } = await import('../../functions/connections.js');
    let clock = 1_000;
    let password = 'first';
    let reads = 0;
    const read = async () => { reads += 1; return { username: 'offsetlake_reader', password }; };
    const connection = await catalogConnection({ DATABASE_SECRET_ARN: 'arn:reader', DATABASE_HOST: 'proxy.example', DATABASE_NAME: 'lake' }, read, () => clock);
    expect(connection.url).toBe('postgres://offsetlake_reader@proxy.example:5432/lake?sslmode=require');
    expect(await connection.password!()).toBe('first');
    password = 'rotated';
    clock += passwordRereadMs - 1;
    expect([await connection.password!(), reads]).toEqual(['first', 1]);
    clock += 1;
    expect([await connection.password!(), reads]).toEqual(['rotated', 2]);
    expect(await catalogConnection({ DATABASE_URL: 'postgres://u:p@h:5432/d' })).toEqual({ url: 'postgres://u:p@h:5432/d' });
  });
});
