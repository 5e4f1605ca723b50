/**
 * The read API behind a Lambda function URL (payload format 2.0, invoke mode BUFFERED).
 * Same handler as `offsetlake serve`; a buffered response is at most 6 MB, so one body
 * is capped at 4 MiB (5.6 MB as base64): larger reads must come as Range requests.
 * Environment: the catalog and Kafka as for every function (functions/connections.ts),
 * OFFSETLAKE_TOKEN or OFFSETLAKE_TOKEN_SECRET_ARN (or OFFSETLAKE_NO_AUTH=1),
 * OFFSETLAKE_CACHE_BYTES (default 256 MiB).
 */
import { kafkaSource } from '../../src/kafka/source.js';
import { authorizationRefusal, bodyBytes, readerHandler, type ReaderHandler, type ReaderResponse } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import { readerToken } from '../connections.js';
import { lambdaServices } from '../runtime.js';

// Not called by Lambda: loads the native compressors at INIT and lets the bundle test reach them (functions/native.ts).
export { nativeCompressors } from '../native.js';

/** 4 MiB of bytes is 5.6 MB of base64: under the function URL's 6 MB buffered response. */
export const lambdaMaxBodyBytes = 4 * 1024 * 1024;

export interface FunctionUrlEvent {
  rawPath: string;
  rawQueryString?: string;
  headers?: Record<string, string | undefined>;
  requestContext: { http: { method: string } };
}

export interface FunctionUrlResult {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
  isBase64Encoded: boolean;
}

let reader: Promise<ReaderHandler> | undefined;
let expectedToken: Promise<string | null> | undefined;

/** The catalog and Kafka are reached only for a request whose token was checked. */
async function start(): Promise<ReaderHandler> {
  const cacheBytes = Number(process.env.OFFSETLAKE_CACHE_BYTES ?? 256 * 1024 * 1024);
  if (!Number.isSafeInteger(cacheBytes) || cacheBytes < 0) throw new Error(`OFFSETLAKE_CACHE_BYTES must be a number of bytes, got "${process.env.OFFSETLAKE_CACHE_BYTES}"`);
  const { catalog, kafka } = await lambdaServices();
  const service = new ReaderService(catalog, kafkaSource(kafka), { cacheBytes });
  const token = await instanceToken();
  return readerHandler(service, { token, maxBodyBytes: lambdaMaxBodyBytes });
}

/** The token engines must send, read once per instance (a secret read, no catalog); null only with OFFSETLAKE_NO_AUTH=1. */
function instanceToken(): Promise<string | null> {
  expectedToken ??= (async () => {
    if (process.env.OFFSETLAKE_NO_AUTH === '1') return null;
    const token = await readerToken();
    if (!token) throw new Error('neither OFFSETLAKE_TOKEN nor OFFSETLAKE_TOKEN_SECRET_ARN is set (set OFFSETLAKE_NO_AUTH=1 to serve without authentication)');
    return token;
  })().catch((error: unknown) => {
    expectedToken = undefined;
    throw error;
  });
  return expectedToken;
}

async function functionUrlResult(answer: ReaderResponse): Promise<FunctionUrlResult> {
  return { statusCode: answer.status, headers: answer.headers, body: Buffer.from(await bodyBytes(answer.body)).toString('base64'), isBase64Encoded: true };
}

export async function handler(event: FunctionUrlEvent): Promise<FunctionUrlResult> {
  const request = { method: event.requestContext.http.method, path: event.rawQueryString ? `${event.rawPath}?${event.rawQueryString}` : event.rawPath, headers: event.headers ?? {} };
  // The URL is public: a request without a bearer token costs no I/O at all, and one with
  // a wrong token costs at most the instance's one read of its secret.
  if (process.env.OFFSETLAKE_NO_AUTH !== '1') {
    const refused = authorizationRefusal(request) ?? authorizationRefusal(request, (await instanceToken()) ?? undefined);
    if (refused) return functionUrlResult(refused);
  }
  reader ??= start().catch((error: unknown) => {
    reader = undefined;
    throw error;
  });
  return functionUrlResult(await (await reader)(request));
}
