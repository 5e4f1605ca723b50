/**
 * The S3 face's signature check against the worked examples of AWS's documentation
 * ("Signature Calculations for the Authorization Header: Transferring Payload in a Single
 * Chunk", Amazon S3 API reference): requests and signatures as AWS publishes them.
 */
import { describe, expect, it } from 'vitest';
import { S3AuthError, verifySigV4 } from '../../src/reader/sigv4.js';

const credentials = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };
const emptyHash = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const at = Date.UTC(2013, 4, 24, 0, 0, 0);
const authorization = (signedHeaders: string, signature: string) =>
  `AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=${signedHeaders},Signature=${signature}`;

const getObject = {
  method: 'GET',
  path: '/test.txt',
  headers: {
    host: 'examplebucket.s3.amazonaws.com',
    range: 'bytes=0-9',
    'x-amz-content-sha256': emptyHash,
    'x-amz-date': '20130524T000000Z',
    authorization: authorization('host;range;x-amz-content-sha256;x-amz-date', 'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41'),
    'user-agent': 'not signed, so not part of the signature',
  },
};

const refusal = async (request: Parameters<typeof verifySigV4>[0], now = at, keys = credentials) => {
  const error = await verifySigV4(request, keys, now).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(S3AuthError);
  return (error as S3AuthError).code;
};

describe('AWS Signature Version 4 on the S3 face', () => {
  it("accepts AWS's documented GET Object example (Range, x-amz-content-sha256 of an empty body)", async () => {
    await expect(verifySigV4(getObject, credentials, at)).resolves.toBeUndefined();
  });

  it("accepts AWS's documented ListObjects example (a query string) and its GET Bucket lifecycle example (a query name without a value)", async () => {
    const headers = { host: 'examplebucket.s3.amazonaws.com', 'x-amz-content-sha256': emptyHash, 'x-amz-date': '20130524T000000Z' };
    await expect(verifySigV4({ method: 'GET', path: '/?max-keys=2&prefix=J', headers: { ...headers, authorization: authorization('host;x-amz-content-sha256;x-amz-date', '34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7') } }, credentials, at)).resolves.toBeUndefined();
    await expect(verifySigV4({ method: 'GET', path: '/?lifecycle', headers: { ...headers, authorization: authorization('host;x-amz-content-sha256;x-amz-date', 'fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543') } }, credentials, at)).resolves.toBeUndefined();
  });

  it('refuses a changed signed header, another secret, an unknown key, a request 16 minutes old, no signature, and presigned URLs, each with its S3 error code', async () => {
    expect(await refusal({ ...getObject, headers: { ...getObject.headers, range: 'bytes=0-10' } })).toBe('SignatureDoesNotMatch');
    expect(await refusal({ ...getObject, path: '/test.txt2' })).toBe('SignatureDoesNotMatch');
    expect(await refusal(getObject, at, { ...credentials, secretAccessKey: 'another' })).toBe('SignatureDoesNotMatch');
    expect(await refusal(getObject, at, { ...credentials, accessKeyId: 'AKIDOTHER' })).toBe('InvalidAccessKeyId');
    expect(await refusal(getObject, at + 16 * 60_000)).toBe('RequestTimeTooSkewed');
    await expect(verifySigV4(getObject, credentials, at + 14 * 60_000)).resolves.toBeUndefined();
    const { authorization: _, ...unsigned } = getObject.headers;
    expect(await refusal({ ...getObject, headers: unsigned })).toBe('AccessDenied');
    expect(await refusal({ ...getObject, headers: { ...getObject.headers, authorization: 'Bearer token' } })).toBe('AuthorizationHeaderMalformed');
    expect(await refusal({ ...getObject, path: '/test.txt?X-Amz-Signature=00' })).toBe('AccessDenied');
  });
});
