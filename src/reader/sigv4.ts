/**
 * Checking an S3 request's AWS Signature Version 4 (header form). We do not implement
 * the algorithm: the AWS SDK's own signer (@smithy/signature-v4, pinned) signs the
 * request again exactly as the client describes it (its method, raw path and query, the
 * headers it lists in SignedHeaders, its x-amz-date, region and payload hash) with our
 * secret, and the two signatures are compared in constant time. The hashing underneath
 * is node:crypto's.
 */
import { createHash, createHmac, timingSafeEqual, type Hash, type Hmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** Why a request is refused, with S3's error code for it. */
export class S3AuthError extends Error {
  override name = 'S3AuthError';
  /**
   * `details`: elements S3 adds to its error XML for this refusal (Region for a credential
   * scope of another region, HeadersNotSigned for a header that had to be signed).
   */
  constructor(readonly code: 'AccessDenied' | 'InvalidAccessKeyId' | 'SignatureDoesNotMatch' | 'RequestTimeTooSkewed' | 'AuthorizationHeaderMalformed', message: string, readonly details: Record<string, string> = {}) {
    super(message);
  }
}

/** The region a request is signed for when the S3 face is given none (GetBucketLocation says it too). */
export const defaultS3Region = 'us-east-1';

/** SHA-256 and HMAC-SHA256 from node:crypto, in the shape the signer takes. */
export class NodeSha256 {
  private readonly hash: Hash | Hmac;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', typeof secret === 'string' ? secret : bytes(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.hash.update(typeof data === 'string' ? data : bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return this.hash.digest();
  }
}

function bytes(data: ArrayBuffer | ArrayBufferView): Uint8Array {
  return ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);
}

const authorizationPattern = /^AWS4-HMAC-SHA256\s+Credential=([^/\s,]+)\/(\d{8})\/([^/\s,]+)\/([^/\s,]+)\/aws4_request\s*,\s*SignedHeaders=([a-z0-9;-]+)\s*,\s*Signature=([0-9a-f]{64})\s*$/i;
const amzDatePattern = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;
/** S3 refuses a request signed more than 15 minutes away from its own clock. */
export const maxClockSkewMs = 15 * 60_000;

/** The query string as the signer takes it: names and values decoded once (it encodes them again); a name without `=` has the value ''. */
function parseQuery(query: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const part of query.split('&')) {
    if (part === '') continue;
    const at = part.indexOf('=');
    const name = decodeURIComponent(at < 0 ? part : part.slice(0, at));
    const value = at < 0 ? '' : decodeURIComponent(part.slice(at + 1));
    const known = out[name];
    out[name] = known === undefined ? value : Array.isArray(known) ? [...known, value] : [known, value];
  }
  return out;
}

export interface SignedRequest {
  method: string;
  /** The path as sent, a query string may follow. */
  path: string;
  headers: Readonly<Record<string, string | undefined>>;
}

/**
 * Throws S3AuthError unless `request` carries a valid signature by `credentials` for
 * `region`. `now` is the server's clock (a parameter, so the skew rule is testable without
 * waiting). The path and query must be valid percent-encoding (the caller refuses them first).
 */
export async function verifySigV4(request: SignedRequest, credentials: S3Credentials, now = Date.now(), expectedRegion = defaultS3Region): Promise<void> {
  const header = (name: string): string | undefined => {
    for (const [key, value] of Object.entries(request.headers)) if (key.toLowerCase() === name) return value;
    return undefined;
  };
  const [rawPath, rawQuery = ''] = splitOnce(request.path, '?');
  if (/(^|&)X-Amz-Signature=/i.test(rawQuery)) throw new S3AuthError('AccessDenied', 'presigned URLs are not accepted; sign requests with the Authorization header');
  const authorization = header('authorization');
  if (!authorization) throw new S3AuthError('AccessDenied', 'this endpoint needs requests signed with AWS Signature Version 4 and its access key');
  const match = authorizationPattern.exec(authorization);
  if (!match) throw new S3AuthError('AuthorizationHeaderMalformed', 'the Authorization header is not AWS4-HMAC-SHA256 Credential=KEY/DATE/REGION/s3/aws4_request, SignedHeaders=…, Signature=…');
  const [, accessKeyId, scopeDate, region, service, signedHeaderList, signature] = match as unknown as [string, string, string, string, string, string, string];
  // A scope is a region's: a signature for another one must not pass here (S3 refuses it with the region it expects).
  if (region !== expectedRegion) throw new S3AuthError('AuthorizationHeaderMalformed', `the credential scope names region ${region}; this endpoint is in ${expectedRegion}: sign for ${expectedRegion}`, { Region: expectedRegion });
  if (!safeEqual(accessKeyId, credentials.accessKeyId)) throw new S3AuthError('InvalidAccessKeyId', `the access key id ${accessKeyId} is not known to this endpoint: sign with the key pair serve was started with (--s3-access-key-id and --s3-secret-access-key; Iceberg clients get it in LoadTable's config)`);
  if (service !== 's3') throw new S3AuthError('AuthorizationHeaderMalformed', `the credential scope names service "${service}"; this endpoint is s3`);
  const amzDate = header('x-amz-date');
  const date = amzDate ? amzDatePattern.exec(amzDate) : null;
  if (!date) throw new S3AuthError('AccessDenied', 'the request needs an x-amz-date header (YYYYMMDDTHHMMSSZ)');
  const [, y, mo, d, h, mi, s] = date.map(Number) as [number, number, number, number, number, number, number];
  const signingDate = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  if (Math.abs(now - signingDate.getTime()) > maxClockSkewMs) {
    throw new S3AuthError('RequestTimeTooSkewed', `the request was signed at ${signingDate.toISOString()}, more than 15 minutes from this server's time ${new Date(now).toISOString()}`);
  }
  if (!amzDate!.startsWith(scopeDate)) throw new S3AuthError('SignatureDoesNotMatch', `the credential scope's date ${scopeDate} is not the day of x-amz-date ${amzDate}`);

  const signed = signedHeaderList.toLowerCase().split(';');
  // Unsigned, the Host could be anything: the signature could be replayed against another endpoint.
  if (!signed.includes('host')) throw new S3AuthError('AccessDenied', 'SignedHeaders must include host: a signature that does not cover the Host header is not accepted', { HeadersNotSigned: 'host' });
  const headers: Record<string, string> = {};
  for (const name of signed) {
    const value = header(name);
    if (value === undefined) throw new S3AuthError('SignatureDoesNotMatch', `SignedHeaders lists ${name}, which the request does not carry`);
    headers[name] = value;
  }
  // S3's canonical request ends with the payload hash the client declared, signed or not.
  const payloadHash = header('x-amz-content-sha256');
  if (payloadHash !== undefined) headers['x-amz-content-sha256'] = payloadHash;

  const signer = new SignatureV4({ credentials, region, service: 's3', sha256: NodeSha256, uriEscapePath: false, applyChecksum: false });
  const expected = await signer.sign(
    { method: request.method, protocol: 'http:', hostname: headers.host ?? '', path: rawPath, query: parseQuery(rawQuery), headers },
    { signingDate, signingRegion: region, signingService: 's3', signableHeaders: new Set(signed), unsignableHeaders: new Set(Object.keys(headers).filter((name) => !signed.includes(name))) },
  );
  const ours = /Signature=([0-9a-f]{64})/.exec(String(expected.headers.authorization ?? expected.headers.Authorization))?.[1];
  if (!ours || !timingSafeEqual(Buffer.from(ours, 'hex'), Buffer.from(signature.toLowerCase(), 'hex'))) {
    throw new S3AuthError('SignatureDoesNotMatch', 'the request signature we calculated does not match the signature you provided: check the secret access key (serve\'s --s3-secret-access-key) and the signing method');
  }
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator);
  return at < 0 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}

function safeEqual(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right);
}

/** The headers that sign `request` for S3 with `credentials` (a client of our own S3 face: `attach` checks it with them). */
export async function signS3Request(request: { method: string; url: URL }, credentials: S3Credentials, region = 'us-east-1'): Promise<Record<string, string>> {
  const signer = new SignatureV4({ credentials, region, service: 's3', sha256: NodeSha256, uriEscapePath: false });
  const query: Record<string, string> = {};
  for (const [name, value] of request.url.searchParams) query[name] = value;
  const signed = await signer.sign({
    method: request.method, protocol: request.url.protocol, hostname: request.url.hostname, path: request.url.pathname, query,
    headers: { host: request.url.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
  });
  return signed.headers as Record<string, string>;
}
