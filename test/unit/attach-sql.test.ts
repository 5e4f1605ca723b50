import { describe, expect, it } from 'vitest';
import { attachStatements, libpqConnectionString } from '../../src/cli/attach.js';

describe('the SQL offsetlake attach prints', () => {
  it('libpq values with spaces, quotes or backslashes are single-quoted with backslash escapes (libpq\'s rule); query parameters such as sslmode are kept', () => {
    expect(libpqConnectionString("postgres://ana:p%20w'%5C@db.example:6432/lake?sslmode=require")).toBe(
      "host=db.example port=6432 dbname=lake user=ana password='p w\\'\\\\' sslmode=require",
    );
    expect(libpqConnectionString('postgres://ana@db/lake')).toBe('host=db port=5432 dbname=lake user=ana');
  });

  it("a single quote in the token or the connection string is doubled inside DuckDB's string literals; no secret without a token", () => {
    const [secret, attach] = attachStatements({ databaseUrl: "postgres://o'k:pw@h:1/d", serveUrl: 'http://h:8642', access: { kind: 'http', token: "t'k" }, alias: 'lake' });
    expect(secret).toBe("CREATE OR REPLACE SECRET offsetlake_serve (TYPE http, BEARER_TOKEN 't''k', SCOPE 'http://h:8642/');");
    expect(attach).toBe("ATTACH 'ducklake:postgres:host=h port=1 dbname=d user=''o\\''k'' password=pw' AS lake (METADATA_SCHEMA 'ducklake', READ_ONLY, DATA_PATH 'http://h:8642/', OVERRIDE_DATA_PATH TRUE);");
    expect(attachStatements({ databaseUrl: 'postgres://h/d', serveUrl: 'http://h:8642', access: { kind: 'http', token: null }, alias: 'x' })).toHaveLength(1);
  });

  it('through the S3 face: an S3 secret for the endpoint, and no data path when the bucket is the catalog\'s own (offsetlake)', () => {
    const credentials = { accessKeyId: 'reader', secretAccessKey: "s3'cret" };
    expect(attachStatements({ databaseUrl: 'postgres://u:p@h:1/d', serveUrl: 'https://lake.example:8443', access: { kind: 's3', bucket: 'offsetlake', credentials }, alias: 'lake' })).toEqual([
      "CREATE OR REPLACE SECRET offsetlake_s3 (TYPE s3, KEY_ID 'reader', SECRET 's3''cret', REGION 'us-east-1', ENDPOINT 'lake.example:8443', URL_STYLE 'path', USE_SSL true);",
      "ATTACH 'ducklake:postgres:host=h port=1 dbname=d user=u password=p' AS lake (METADATA_SCHEMA 'ducklake', READ_ONLY);",
    ]);
    expect(attachStatements({ databaseUrl: 'postgres://u:p@h:1/d', serveUrl: 'http://h:8642', access: { kind: 's3', bucket: 'other', credentials }, alias: 'lake' })[1]).toBe(
      "ATTACH 'ducklake:postgres:host=h port=1 dbname=d user=u password=p' AS lake (METADATA_SCHEMA 'ducklake', READ_ONLY, DATA_PATH 's3://other/', OVERRIDE_DATA_PATH TRUE);",
    );
  });
});
