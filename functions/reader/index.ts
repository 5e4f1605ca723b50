/**
 * The read API behind a Lambda function URL (payload format 2.0, invoke mode BUFFERED).
 * Same handler as `offsetlake serve`; a buffered response is at most 6 MB, so one body
 * is capped at 4 MiB (5.6 MB as base64): larger reads must come as Range requests.
 * Environment: the catalog and Kafka as for every function (functions/connections.ts),
 * OFFSETLAKE_TOKEN or OFFSETLAKE_TOKEN_SECRET_ARN (or OFFSETLAKE_NO_AUTH=1),
 * OFFSETLAKE_CACHE_BYTES (default 256 MiB).
 */
import { kafkaSource } from '../../src/kafka/source.js';
import { readerHandler, type ReaderHandler } from '../../src/reader/http.js';
import { ReaderService } from '../../src/reader/service.js';
import { readerToken } from '../connections.js';
import { lambdaServices } from '../runtime.js';

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

async function start(): Promise<ReaderHandler> {
  const noAuth = process.env.OFFSETLAKE_NO_AUTH === '1';
  const token = noAuth ? null : await readerToken();
  if (!noAuth && !token) throw new Error('neither OFFSETLAKE_TOKEN nor OFFSETLAKE_TOKEN_SECRET_ARN is set (set OFFSETLAKE_NO_AUTH=1 to serve without authentication)');
  const cacheBytes = Number(process.env.OFFSETLAKE_CACHE_BYTES ?? 256 * 1024 * 1024);
  if (!Number.isSafeInteger(cacheBytes) || cacheBytes < 0) throw new Error(`OFFSETLAKE_CACHE_BYTES must be a number of bytes, got "${process.env.OFFSETLAKE_CACHE_BYTES}"`);
  const { catalog, kafka } = await lambdaServices();
  const service = new ReaderService(catalog, kafkaSource(kafka), { cacheBytes });
  return readerHandler(service, { token: noAuth ? null : token, maxBodyBytes: lambdaMaxBodyBytes });
}

export async function handler(event: FunctionUrlEvent): Promise<FunctionUrlResult> {
  reader ??= start().catch((error: unknown) => {
    reader = undefined;
    throw error;
  });
  const read = await reader;
  const path = event.rawQueryString ? `${event.rawPath}?${event.rawQueryString}` : event.rawPath;
  const answer = await read({ method: event.requestContext.http.method, path, headers: event.headers ?? {} });
  return { statusCode: answer.status, headers: answer.headers, body: Buffer.from(answer.body).toString('base64'), isBase64Encoded: true };
}
