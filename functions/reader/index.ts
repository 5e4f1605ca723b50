/**
 * The read API behind a Lambda function URL (payload format 2.0). Same handler as
 * `offsetlake serve`. The URL's invoke mode, which CDK also gives the function as
 * OFFSETLAKE_READER_INVOKE_MODE, decides the shape of `handler`:
 *
 * - RESPONSE_STREAM (the default): a streaming handler (functions/streaming.ts). Status
 *   and headers go first, then the body as it is produced, a large file row group by row
 *   group, so memory holds a few row groups, not the file. A body is capped at AWS's
 *   200 MB per streamed response (the prelude included).
 * - BUFFERED: the whole response returned at once, at most 6 MB, so a body is capped at
 *   4 MiB (5.6 MB as base64) and larger reads must come as Range requests.
 *
 * Environment: the catalog and Kafka as for every function (functions/connections.ts),
 * OFFSETLAKE_TOKEN or OFFSETLAKE_TOKEN_SECRET_ARN (or OFFSETLAKE_NO_AUTH=1),
 * OFFSETLAKE_CACHE_BYTES (default 256 MiB), OFFSETLAKE_READER_INVOKE_MODE.
 */
import { kafkaSource } from '../../src/kafka/source.js';
import { authorizationRefusal, bodyBytes, readerHandler, type ReaderHandler, type ReaderResponse } from '../../src/reader/http.js';
import { IcebergCatalog } from '../../src/iceberg/rest.js';
import { writeBody } from '../../src/reader/node-server.js';
import { ReaderService } from '../../src/reader/service.js';
import { readerTokenGraceMs } from '../../src/reader/token-rotation.js';
import { readerTokens } from '../connections.js';
import { lambdaServices } from '../runtime.js';
import { metrics, recordRebuild } from '../observability.js';
import { awslambda, type StreamingHandler } from '../streaming.js';

// Not called by Lambda: loads the native compressors at INIT and lets the bundle test reach them (functions/native.ts).
export { crc32cImplementation, nativeCompressors } from '../native.js';

export const invokeModes = ['RESPONSE_STREAM', 'BUFFERED'] as const;
export type ReaderInvokeMode = (typeof invokeModes)[number];

/** The function URL's invoke mode, read once when the instance loads the module (the runtime exports `handler` then). */
export function readerInvokeMode(value = process.env.OFFSETLAKE_READER_INVOKE_MODE): ReaderInvokeMode {
  if (value === undefined || value === '') return 'RESPONSE_STREAM';
  if (!(invokeModes as readonly string[]).includes(value)) throw new Error(`OFFSETLAKE_READER_INVOKE_MODE must be one of ${invokeModes.join(', ')}, got "${value}"`);
  return value as ReaderInvokeMode;
}

/** AWS's maximum for one streamed response (function URL in RESPONSE_STREAM mode), status and headers included. */
export const lambdaStreamedResponseBytes = 200_000_000;

/**
 * The largest body of each mode. Streamed: AWS's 200 MB less 16 KiB kept for the prelude
 * (ours is well under 1 KiB). Buffered: 4 MiB of bytes is 5.6 MB of base64, under the 6 MB
 * buffered response.
 */
export const lambdaMaxBody: Readonly<Record<ReaderInvokeMode, { bytes: number; reason: string }>> = {
  RESPONSE_STREAM: { bytes: lambdaStreamedResponseBytes - 16 * 1024, reason: 'a Lambda function URL streams at most 200 MB per response' },
  BUFFERED: { bytes: 4 * 1024 * 1024, reason: 'a buffered Lambda function URL response is at most 6 MB, base64 included' },
};

const invokeMode = readerInvokeMode();

export interface FunctionUrlEvent {
  rawPath: string;
  rawQueryString?: string;
  headers?: Record<string, string | undefined>;
  /** domainName: the function URL's own domain, which AWS routed the request by (the Iceberg catalog's URL for clients; never the Host header). */
  requestContext: { http: { method: string }; domainName?: string };
}

export interface FunctionUrlResult {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
  isBase64Encoded: boolean;
}

let reader: Promise<ReaderHandler> | undefined;

/** How long an instance uses the tokens it read before reading them again: a rotated token is taken within this. */
export const tokenRereadMs = 5 * 60 * 1000;
let expectedTokens: { tokens: Promise<readonly string[] | null>; at: number } | undefined;

/** The catalog and Kafka are reached only for a request whose token was checked (answer() checks it, once). */
async function start(): Promise<ReaderHandler> {
  const cacheBytes = Number(process.env.OFFSETLAKE_CACHE_BYTES ?? 256 * 1024 * 1024);
  if (!Number.isSafeInteger(cacheBytes) || cacheBytes < 0) throw new Error(`OFFSETLAKE_CACHE_BYTES must be a number of bytes, got "${process.env.OFFSETLAKE_CACHE_BYTES}"`);
  const { catalog, kafka } = await lambdaServices();
  const service = new ReaderService(catalog, kafkaSource(kafka), { cacheBytes, onRebuild: recordRebuild });
  const tokens = await instanceTokens();
  const limit = lambdaMaxBody[invokeMode];
  // The Iceberg REST catalog under /iceberg: without an S3 face here, its files are this URL's own (the domain AWS routed the request by).
  return readerHandler(service, { token: tokens === null ? null : { checkedBefore: true }, maxBodyBytes: limit.bytes, maxBodyReason: limit.reason, catalog: new IcebergCatalog(service) });
}

/**
 * The tokens engines may send (the secret's current one and, just after a rotation, the
 * one before), read again once they are `tokenRereadMs` old: a secret read, no catalog,
 * so a stranger's wrong tokens cost an instance at most one read per period. null only
 * with OFFSETLAKE_NO_AUTH=1.
 */
function instanceTokens(): Promise<readonly string[] | null> {
  if (expectedTokens && Date.now() - expectedTokens.at < tokenRereadMs) return expectedTokens.tokens;
  const tokens = (async () => {
    if (process.env.OFFSETLAKE_NO_AUTH === '1') return null;
    const read = await readerTokens(process.env, readerTokenGraceMs);
    if (!read) throw new Error('neither OFFSETLAKE_TOKEN nor OFFSETLAKE_TOKEN_SECRET_ARN is set (set OFFSETLAKE_NO_AUTH=1 to serve without authentication)');
    return read;
  })().catch((error: unknown) => {
    expectedTokens = undefined;
    throw error;
  });
  expectedTokens = { tokens, at: Date.now() };
  return tokens;
}

async function functionUrlResult(answer: ReaderResponse): Promise<FunctionUrlResult> {
  return { statusCode: answer.status, headers: answer.headers, body: Buffer.from(await bodyBytes(answer.body)).toString('base64'), isBase64Encoded: true };
}

/** The read API's answer to one function URL event, its body not yet produced if it streams. */
async function answer(event: FunctionUrlEvent): Promise<ReaderResponse> {
  const request = { method: event.requestContext.http.method, path: event.rawQueryString ? `${event.rawPath}?${event.rawQueryString}` : event.rawPath, headers: event.headers ?? {}, ...(event.requestContext.domainName ? { reachedAt: `https://${event.requestContext.domainName}` } : {}) };
  // The URL is public: a request without a bearer token costs no I/O at all, and one with
  // a wrong token costs at most the instance's one read of its secret per tokenRereadMs.
  if (process.env.OFFSETLAKE_NO_AUTH !== '1') {
    const refused = authorizationRefusal(request) ?? authorizationRefusal(request, (await instanceTokens()) ?? undefined);
    if (refused) return refused;
  }
  reader ??= start().catch((error: unknown) => {
    reader = undefined;
    throw error;
  });
  return (await reader)(request);
}

/** The rebuild durations a request measured, published when its answer is done. */
function publishMetrics(): void {
  if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
}

/** Invoke mode BUFFERED: the whole response, base64, in the function's result. */
export async function bufferedHandler(event: FunctionUrlEvent): Promise<FunctionUrlResult> {
  try {
    return await functionUrlResult(await answer(event));
  } finally {
    publishMetrics();
  }
}

/**
 * Invoke mode RESPONSE_STREAM: status and headers, then the body piece by piece as it is
 * produced and checked. If production fails midway the handler rejects without ending
 * the stream: the runtime reports the function's error and the client's body ends short
 * of its Content-Length, never padded and never with an unchecked byte.
 */
export const streamingHandler: StreamingHandler<FunctionUrlEvent> = async (event, responseStream) => {
  try {
    const response = await answer(event);
    await writeBody(awslambda().HttpResponseStream.from(responseStream, { statusCode: response.status, headers: response.headers }), response.body);
  } finally {
    publishMetrics();
  }
};

/** What the runtime calls: the shape the function URL's invoke mode expects. */
export const handler = invokeMode === 'BUFFERED' ? bufferedHandler : awslambda().streamifyResponse(streamingHandler);
